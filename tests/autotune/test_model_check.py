"""The whole-model check after tuning: tuned points kept only where the tuned model is not slower."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorium
from tensorium.autotune import model_check
from tensorium.autotune.model_check import MODEL_VERDICT, check_model, random_inputs
from tensorium.autotune.records import Record, TuningDB
from tensorium.errors import TensoriumError
from tensorium.lowering.space import Config, TunableKernel
from tensorium.runtime.artifact import Artifact

from .conftest import gemm_inputs, gemm_model


def _compiled() -> tensorium.CompiledModel:
    compiled = tensorium.compile(gemm_model, tuning_db=False)
    compiled(*gemm_inputs())
    return compiled


def _tuned_db(path: Path, kernel: TunableKernel, target: tensorium.Target) -> tuple[TuningDB, list[Config]]:
    """Records that make two other points than the default faster, each measured twice (as confirmed)."""
    others = [c for c in kernel.space.points() if str(c) != str(kernel.default)][:2]
    db = TuningDB(path)
    rows = [(kernel.default, 3e-5), (others[0], 1e-5), (others[1], 2e-5)]
    db.add([Record(kernel.key, target.key(), str(c), s) for c, s in rows for _ in range(2)])
    return db, others


def _fake_times(monkeypatch: pytest.MonkeyPatch, tuned: float, default: float) -> None:
    """Time the tuned model (configs set) at ``tuned`` s and the default one at ``default`` s per round."""

    def fastest(runner: Artifact, *_: object) -> float:
        return tuned if runner.configs else default

    monkeypatch.setattr(model_check, "_fastest", fastest)


def test_a_faster_tuned_model_keeps_its_records(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, (winner, _) = _tuned_db(tmp_path / "r.jsonl", gemm_kernel, target)
    _fake_times(monkeypatch, tuned=1.0, default=1.2)
    compiled = _compiled()
    check = check_model(compiled.artifact, db, list(gemm_inputs()), rounds=3)
    assert check.kept and check.set_aside == 0
    assert check.applied == {gemm_kernel.key: winner}
    assert check.tuned == [1.0] * 3 and check.default == [1.2] * 3 and check.speedup == pytest.approx(1.2)
    assert "records kept" in check.describe() and "1.200x" in check.describe()
    assert len(TuningDB(db.path)) == 6
    again = tensorium.compile(gemm_model, tuning_db=db.path)
    again(*gemm_inputs())
    assert again.artifact.configs == {gemm_kernel.key: winner}


def test_a_slower_tuned_model_sets_its_points_aside_until_the_default_is_chosen(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, (winner, runner_up) = _tuned_db(tmp_path / "r.jsonl", gemm_kernel, target)
    _fake_times(monkeypatch, tuned=1.3, default=1.2)
    lines: list[str] = []
    check = check_model(_compiled().artifact, db, list(gemm_inputs()), rounds=3, progress=lines.append)
    assert not check.kept and check.reason == "the tuned model was slower"
    assert check.set_aside == 2  # the winner, then the runner-up the records would have chosen next
    assert len(lines) == 3 and lines[0].startswith("whole-model check, round 1/3")
    reread = TuningDB(db.path)
    verdicts = [r for r in reread.records if r.unconfirmed]
    assert [r.config for r in verdicts] == [str(winner), str(runner_up)]
    assert all(r.error and r.error.startswith(MODEL_VERDICT) and "1300.000 ms tuned" in r.error for r in verdicts)
    best = reread.best(gemm_kernel.key, target.key())
    assert best is not None and str(best[0]) == str(gemm_kernel.default)
    again = tensorium.compile(gemm_model, tuning_db=db.path)
    again(*gemm_inputs())
    assert again.artifact.configs in ({}, {gemm_kernel.key: gemm_kernel.default})
    assert "set aside, compile builds the defaults" in check.describe()


def test_nothing_to_check_without_tuned_points(tmp_path: Path, gemm_kernel: TunableKernel) -> None:
    check = check_model(_compiled().artifact, TuningDB(tmp_path / "none.jsonl"), list(gemm_inputs()))
    assert check.kept and not check.applied and not check.tuned
    assert "nothing to check" in check.describe()


def test_the_check_times_both_models_for_real(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    db, _ = _tuned_db(tmp_path / "r.jsonl", gemm_kernel, target)
    check = check_model(_compiled().artifact, db, list(gemm_inputs()), rounds=2, seconds_per_timing=0.002)
    assert len(check.tuned) == len(check.default) == 2
    assert all(t > 0 for t in check.tuned + check.default) and check.seconds > 0
    # kept or not depends on this machine's timing; either way the records say which
    best = TuningDB(db.path).best(gemm_kernel.key, target.key())
    assert best is not None
    assert (str(best[0]) != str(gemm_kernel.default)) == check.kept


def test_outputs_that_differ_from_the_default_are_refused() -> None:
    same = [np.array([1.0, 2.0], np.float32)]
    assert model_check._mismatch(same, [np.array([1.0, 2.0005], np.float32)], 1e-3) == ""
    assert "differs from the default's by 0.5" in model_check._mismatch(same, [np.array([1.0, 2.5], np.float32)], 1e-3)
    assert "has shape [2] tuned and [3]" in model_check._mismatch(same, [np.zeros(3, np.float32)], 1e-3)
    nan = [np.array([np.nan, 1.0], np.float32)]
    assert model_check._mismatch(nan, [np.array([np.nan, 1.0], np.float32)], 1e-3) == ""
    assert "has NaN where" in model_check._mismatch(nan, [np.array([0.0, 1.0], np.float32)], 1e-3)
    inf = [np.array([np.inf, 1.0], np.float32)]
    assert model_check._mismatch(inf, [np.array([np.inf, 1.0], np.float32)], 1e-3) == ""
    assert "by inf" in model_check._mismatch(inf, [np.array([-np.inf, 1.0], np.float32)], 1e-3)
    assert "differs" in model_check._mismatch([np.array([1, 2])], [np.array([1, 3])], 1e-3)


def test_a_wrong_tuned_model_is_set_aside(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _ = _tuned_db(tmp_path / "r.jsonl", gemm_kernel, target)
    monkeypatch.setattr(model_check, "_mismatch", lambda *_: "output 0 differs from the default's by 1")
    check = check_model(_compiled().artifact, db, list(gemm_inputs()))
    assert not check.kept and check.reason.startswith("output 0 differs") and not check.tuned
    assert check.set_aside == 2


def test_random_inputs_need_the_size_of_each_dynamic_dim() -> None:
    compiled = tensorium.compile(gemm_model, tuning_db=False, dynamic={"a": {0: "rows"}})
    compiled(*gemm_inputs())
    with pytest.raises(TensoriumError, match=r"input 'a' .* needs the size of \[rows\]: pass --dim rows=SIZE"):
        random_inputs(compiled.artifact)
    a, b = random_inputs(compiled.artifact, {"rows": 5})
    assert a.shape == (5, 32) and b.shape == (32, 40) and a.dtype == np.float32


def test_tune_runs_the_check_on_the_example_inputs(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tensorium.autotune
    import tensorium.autotune.tuning

    from .test_search import Synthetic

    seen: list[list[np.ndarray]] = []
    real = model_check.check_model

    def spy(artifact: Artifact, db: TuningDB, inputs: list[np.ndarray], **kw: object) -> model_check.ModelCheck:
        seen.append(list(inputs))
        return real(artifact, db, inputs, rounds=1, seconds_per_timing=0.001)

    monkeypatch.setattr(tensorium.autotune.tuning, "check_model", spy)
    lines: list[str] = []

    def tune(db: str, budget: float, check: bool) -> tensorium.autotune.tuning.ModelTuning:
        measurer = Synthetic(str(gemm_kernel.default))
        return tensorium.autotune.tune(
            gemm_model,
            *gemm_inputs(),
            budget=budget,
            db=tmp_path / db,
            progress=lines.append,
            measurer=measurer,
            check=check,
        )

    tuning = tune("r.jsonl", 2.0, True)
    assert tuning.check is not None and len(tuning) == 1
    (inputs,) = seen
    assert all(np.array_equal(x, y) for x, y in zip(inputs, gemm_inputs()))
    assert lines[-1].startswith("whole-model check")
    unchecked = tune("r2.jsonl", 0.5, False)
    assert unchecked.check is None and len(seen) == 1
