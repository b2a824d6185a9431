"""``tensorium tune``: a model tuned within a budget into a records file that compile then applies, a plot,
records moved with --export / --import, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorium
from tensorium.autotune.records import Record, TuningDB, default_db_path
from tensorium.cli import main
from tensorium.targets import host_target

from .conftest import gemm_inputs, gemm_model

FACTORY = """\
import numpy as np
import tensorium


def model(a, b):
    return tensorium.nn.gelu(a @ b)


def factory():
    rng = np.random.default_rng(0)
    return model, (rng.standard_normal((24, 32), dtype=np.float32), rng.standard_normal((32, 40), dtype=np.float32))
"""


def test_tune_a_model_then_compile_applies_the_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gemm_model.py").write_text(FACTORY)
    db, plot = tmp_path / "records.jsonl", tmp_path / "tuning.svg"
    spec = f"{tmp_path / 'gemm_model.py'}:factory"
    assert main(["tune", spec, "--budget", "8", "--db", str(db), "--plot", str(plot), "--model-kind", "mlp"]) == 0
    out, err = capsys.readouterr()
    assert "1 tunable kernels" in err and "trials" in out and "the default" in out
    assert "whole-model check" in out.splitlines()[-1]  # what was tuned was then checked in the whole model
    assert plot.read_text().startswith("<svg")
    records = TuningDB(db)
    assert len(records) >= 1 and all(len(r.features) > 0 for r in records.records)
    (kernel,) = {r.kernel for r in records.records}
    best = records.best(kernel, host_target().key())
    assert best is not None
    compiled = tensorium.compile(gemm_model, tuning_db=db)
    compiled(*gemm_inputs())
    assert compiled.artifact.configs == {kernel: best[0]}


def test_export_and_import_move_records(tmp_path: Path) -> None:
    source = TuningDB(tmp_path / "a.jsonl")
    source.add([Record("k", "t", "gemm{mr=6}", 1e-3), Record("k", "t", "gemm{mr=4}", None, "crashed")])
    assert main(["tune", "--db", str(tmp_path / "a.jsonl"), "--export", str(tmp_path / "moved.jsonl")]) == 0
    assert main(["tune", "--db", str(tmp_path / "b.jsonl"), "--import", str(tmp_path / "moved.jsonl")]) == 0
    assert TuningDB(tmp_path / "b.jsonl").records == source.records


def test_tune_without_work_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--db", str(tmp_path / "r.jsonl")]) == 1
    assert "give a MODEL to tune" in capsys.readouterr().err
    assert main(["tune", "nothing.py:factory", "--budget", "0"]) == 1
    assert "--budget must be positive" in capsys.readouterr().err


def test_the_default_database_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORIUM_TUNING_DB", str(tmp_path / "mine.jsonl"))
    assert default_db_path() == tmp_path / "mine.jsonl"
    monkeypatch.delenv("TENSORIUM_TUNING_DB")
    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(tmp_path / "cache"))
    assert default_db_path() == tmp_path / "cache" / "tuning.jsonl"


def test_a_foreign_records_file_is_one_warning_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r.jsonl").write_text("not a records file\n")
    assert main(["tune", "--db", str(tmp_path / "r.jsonl"), "--export", str(tmp_path / "out.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "tensorium: warning: " in err and "not a Tensorium tuning records file" in err
    assert (tmp_path / "r.jsonl.foreign").read_text() == "not a records file\n"


class _Fake:
    """A stand-in for the measuring worker: ``seconds`` per trial after ``delay`` seconds of wall time, and
    Ctrl-C (KeyboardInterrupt) at trial ``interrupt_at``."""

    delay = 0.0
    interrupt_at: int | None = None

    def __init__(self) -> None:
        self.jobs = 0

    def measure(self, job: object) -> object:
        import time

        from tensorium.autotune.measure import Measurement

        if self.jobs == self.interrupt_at:
            raise KeyboardInterrupt
        self.jobs += 1
        time.sleep(self.delay)
        return Measurement(1e-4 * (1 + self.jobs % 5), None, (1e-4,), 0.0, 1.0)

    def close(self) -> None:
        pass


def test_ctrl_c_in_tune_keeps_the_records_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tensorium.autotune.tuning

    (tmp_path / "gemm_model.py").write_text(FACTORY)

    class Interrupted(_Fake):
        interrupt_at = 4

    monkeypatch.setattr(tensorium.autotune.tuning, "Measurer", Interrupted)
    db = tmp_path / "r.jsonl"
    with pytest.raises(SystemExit) as stop:
        main(["tune", f"{tmp_path / 'gemm_model.py'}:factory", "--budget", "600", "--db", str(db), "--seed", "1"])
    assert stop.value.code == 130
    assert "interrupted: the 4 records measured so far are kept" in capsys.readouterr().err
    assert len(TuningDB(db)) == 4


def test_a_budget_under_one_measurement_is_reported_by_tune(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tensorium.autotune.tuning

    (tmp_path / "gemm_model.py").write_text(FACTORY)

    class Slow(_Fake):
        delay = 0.2

    monkeypatch.setattr(tensorium.autotune.tuning, "Measurer", Slow)
    db = tmp_path / "r.jsonl"
    assert main(["tune", f"{tmp_path / 'gemm_model.py'}:factory", "--budget", "0.05", "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert "the budget of 0.05 s is under the time of measuring each kernel once" in err
    assert "(1 trials, 0 failed)" in out and len(TuningDB(db)) == 1


def test_tune_no_check_skips_the_whole_model_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gemm_model.py").write_text(FACTORY)
    spec = f"{tmp_path / 'gemm_model.py'}:factory"
    assert main(["tune", spec, "--budget", "1", "--db", str(tmp_path / "r.jsonl"), "--no-check"]) == 0
    out, err = capsys.readouterr()
    assert "whole-model check" not in out + err


def test_tune_dim_must_be_name_equals_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "gemm_model.py").write_text(FACTORY)
    spec = f"{tmp_path / 'gemm_model.py'}:factory"
    assert main(["tune", spec, "--budget", "1", "--db", str(tmp_path / "r.jsonl"), "--dim", "rows"]) == 1
    assert "--dim expects NAME=SIZE" in capsys.readouterr().err
