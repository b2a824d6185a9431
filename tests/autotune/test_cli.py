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
