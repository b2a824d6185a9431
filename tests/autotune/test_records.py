"""The records database: round trips, corrupt lines, foreign versions, merging, and compile applying records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tensorium
from tensorium.autotune.records import HEADER, Record, TuningDB, TuningRecordsWarning
from tensorium.errors import TensoriumError
from tensorium.lowering.space import TunableKernel

from .conftest import gemm_inputs, gemm_model


def _record(config: str, seconds: float | None, kernel: str = "k1", target: str = "t1") -> Record:
    return Record(kernel, target, config, seconds, None if seconds else "crashed", "gemm", (1.0, 2.5))


def test_records_round_trip_and_best_is_the_lowest_median(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "r.jsonl")
    db.add([_record("gemm{mr=6}", 2e-3), _record("gemm{mr=4}", 1e-3), _record("gemm{mr=4}", 5e-3)])
    db.add([_record("gemm{mr=4}", 4e-3), _record("gemm{mr=2}", None), _record("gemm{mr=6}", 2e-3)])
    again = TuningDB(tmp_path / "r.jsonl")
    assert again.records == db.records
    best = again.best("k1", "t1")
    assert best is not None and str(best[0]) == "gemm{mr=6}" and best[1] == 2e-3  # median of mr=4 is 4e-3
    assert again.best("k1", "other") is None
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0]) == HEADER


def test_corrupt_lines_are_reported_with_file_and_line_skipped_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    TuningDB(path).add([_record("gemm{mr=6}", 2e-3)])
    with path.open("a") as f:
        f.write("{not json\n")
        f.write(json.dumps({"kernel": "k1", "target": "t1", "config": "gemm{mr=1}", "seconds": -1}) + "\n")
    with pytest.warns(TuningRecordsWarning, match=r"r\.jsonl:3: .*\n.*r\.jsonl:4: seconds must be"):
        db = TuningDB(path)
    assert len(db) == 1 and len(db.problems) == 2
    with pytest.warns(TuningRecordsWarning):
        db.add([_record("gemm{mr=2}", 1e-3)])
        assert "{not json" in path.read_text()  # the user's lines are never dropped
        assert len(TuningDB(path)) == 2


def test_a_foreign_version_is_set_aside_never_used_or_deleted(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    foreign = json.dumps({"format": HEADER["format"], "version": 99}) + "\n" + _record("gemm{mr=6}", 1e-3).to_json()
    path.write_text(foreign + "\n")
    with pytest.warns(TuningRecordsWarning, match="version 99"):
        db = TuningDB(path)
    assert len(db) == 0 and db.set_aside is not None
    assert db.set_aside.read_text() == foreign + "\n"
    db.add([_record("gemm{mr=2}", 1e-3)])
    assert len(TuningDB(path)) == 1


def test_merge_adds_only_missing_records(tmp_path: Path) -> None:
    a, b = TuningDB(tmp_path / "a.jsonl"), TuningDB(tmp_path / "b.jsonl")
    shared = _record("gemm{mr=6}", 1e-3)
    a.add([shared])
    b.add([shared, _record("gemm{mr=4}", 2e-3)])
    assert a.merge(b) == 1 and a.merge(b) == 0
    assert len(TuningDB(tmp_path / "a.jsonl")) == 2


def test_bad_tuning_db_argument_is_a_clear_error() -> None:
    with pytest.raises(TensoriumError, match="tuning_db= must be a path"):
        tensorium.compile(gemm_model, tuning_db=3.5)  # type: ignore[arg-type]


def test_compile_applies_the_best_record(tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target) -> None:
    points = [c for c in gemm_kernel.space.points() if str(c) != str(gemm_kernel.default)]
    chosen, slower = points[0], points[1]
    db = TuningDB(tmp_path / "r.jsonl")
    db.add(
        [
            Record(gemm_kernel.key, target.key(), str(chosen), 1e-6, family="gemm"),
            Record(gemm_kernel.key, target.key(), str(slower), 2e-6, family="gemm"),
        ]
    )
    tuned = tensorium.compile(gemm_model, tuning_db=tmp_path / "r.jsonl")
    a, b = gemm_inputs()
    np.testing.assert_allclose(tuned(a, b), tensorium.compile(gemm_model, target="interp")(a, b), rtol=1e-4, atol=1e-4)
    assert tuned.artifact.configs == {gemm_kernel.key: chosen}
    untouched = tensorium.compile(gemm_model, tuning_db=False)
    untouched(a, b)
    assert untouched.artifact.configs == {}
    explicit = tensorium.compile(gemm_model, tuning_db=tmp_path / "r.jsonl", schedules={gemm_kernel.key: slower})
    explicit(a, b)
    assert explicit.artifact.configs == {gemm_kernel.key: slower}


def test_writers_at_once_keep_each_others_records(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "r.jsonl"

    def write(name: str) -> None:
        db = TuningDB(path)
        for i in range(15):
            db.add([_record(f"gemm{{mr={i}}}", 1e-3, kernel=name)])

    threads = [threading.Thread(target=write, args=(name,)) for name in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(TuningDB(path)) == 45


def test_new_records_mean_a_new_compile_not_a_stale_cached_one(
    tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    path = tmp_path / "r.jsonl"
    before = tensorium.compile(gemm_model, tuning_db=path)
    before(*gemm_inputs())
    assert before.artifact.configs == {}
    chosen = next(c for c in gemm_kernel.space.points() if str(c) != str(gemm_kernel.default))
    TuningDB(path).add([Record(gemm_kernel.key, target.key(), str(chosen), 1e-6, family="gemm")])
    after = tensorium.compile(gemm_model, tuning_db=path)
    after(*gemm_inputs())
    assert after.artifact.configs == {gemm_kernel.key: chosen}


def test_a_binary_file_is_set_aside_and_compile_runs_at_the_defaults(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "r.db"
    with sqlite3.connect(path) as connection:  # another tool's records at the path: not text at all
        connection.execute("create table records (kernel text, seconds real)")
    original = path.read_bytes()
    with pytest.warns(TuningRecordsWarning, match="not a Tensorium tuning records file"):
        compiled = tensorium.compile(gemm_model, tuning_db=path, cache=False)
        compiled(*gemm_inputs())
    assert compiled.artifact.configs == {}  # nothing applied: the default points
    assert (tmp_path / "r.db.foreign").read_bytes() == original  # set aside, never deleted
    assert not path.exists() or len(TuningDB(path)) == 0


def test_best_prefers_configs_measured_twice_and_never_one_set_aside(tmp_path: Path) -> None:
    from tensorium.autotune.records import UNCONFIRMED

    db = TuningDB(tmp_path / "r.jsonl")
    db.add([_record("gemm{mr=6}", 2e-3), _record("gemm{mr=6}", 2.2e-3), _record("gemm{mr=4}", 1e-3)])
    best = db.best("k1", "t1")
    # mr=4 was measured once (a lucky first run is not evidence): the twice-measured mr=6 is applied
    assert best is not None and str(best[0]) == "gemm{mr=6}"
    db.add([_record("gemm{mr=4}", 1.1e-3), _record("gemm{mr=4}", 1.2e-3)])
    best = db.best("k1", "t1")
    assert best is not None and str(best[0]) == "gemm{mr=4}" and best[1] == 1.1e-3
    verdict = Record("k1", "t1", "gemm{mr=4}", None, f"{UNCONFIRMED}: re-timed 1100 us against 1000 us", "gemm")
    assert verdict.unconfirmed and not _record("gemm{mr=2}", None).unconfirmed
    db.add([verdict])
    best = TuningDB(tmp_path / "r.jsonl").best("k1", "t1")
    assert best is not None and str(best[0]) == "gemm{mr=6}"  # set aside, even though its median is lowest
