"""Workers share their corpus: a seed one worker keeps is run, and kept when new to it, by the others."""

from __future__ import annotations

from pathlib import Path

from tensorium.fuzz.fuzzer import FuzzConfig, Fuzzer, fuzz
from tensorium.fuzz.oracle import FuzzCase
from tensorium.fuzz.sync import CorpusSync

from .conftest import SIMPLE

INTERP = ("interp",)


def test_a_published_case_is_read_once_by_every_other_worker(tmp_path: Path) -> None:
    first, second, third = (CorpusSync(tmp_path, k) for k in range(3))
    case = FuzzCase(SIMPLE, "canonicalize,cse", seed=7, backends=INTERP)
    path = first.publish(case)
    assert path.parent == tmp_path / "worker-0" and path.name == "000001.mlir"
    (tmp_path / "worker-0" / ".writing-unfinished").write_text("half a case")  # never read
    assert first.poll() == []  # a worker does not read its own seeds
    got = second.poll()
    assert [(c.pipeline, c.seed, c.backends) for c in got] == [("canonicalize,cse", 7, INTERP)]
    assert "graph.tanh" in got[0].module
    assert second.poll() == []  # each file once
    assert len(third.poll()) == 1


def test_a_case_file_that_does_not_parse_is_skipped(tmp_path: Path) -> None:
    reader = CorpusSync(tmp_path, 1)
    (tmp_path / "worker-0").mkdir()
    (tmp_path / "worker-0" / "000001.mlir").write_text("// pipeline: cse\nmodule {\n  not ir\n}\n")
    assert reader.poll() == []


def test_a_seed_found_by_one_worker_reaches_the_other(tmp_path: Path) -> None:
    config = FuzzConfig(seconds=300, max_execs=6, backends=INTERP)
    finder = Fuzzer(FuzzConfig(seconds=300, max_execs=6, seed=0, backends=INTERP), log=None)
    finder.sync = CorpusSync(tmp_path, 0)
    finder.run()
    shared = sorted((tmp_path / "worker-0").glob("*.mlir"))
    assert finder.corpus and len(shared) == len(finder.corpus)
    other = Fuzzer(config, log=None)
    other.sync = CorpusSync(tmp_path, 1)
    kept = other.import_shared()
    assert other.report.imported == len(shared) and other.report.execs == 0  # imports are not its own cases
    assert kept >= 1 and other.report.imported_kept == kept == len(other.corpus)
    assert {s.case.pipeline for s in other.corpus} <= {s.case.pipeline for s in finder.corpus}
    assert all(not s.case.module.startswith("//") for s in other.corpus)  # kept without the finder's header
    assert not list((tmp_path / "worker-1").glob("*.mlir"))  # imported seeds are not published again
    assert other.import_shared() == 0 and other.report.imported == len(shared)


def test_parallel_workers_run_each_others_seeds(tmp_path: Path) -> None:
    config = FuzzConfig(seconds=6, seed=0, backends=INTERP, out=tmp_path, jobs=2, sync_seconds=0.5)
    report = fuzz(config, log=None)
    assert len(report.workers) == 2
    assert report.imported > 0 and report.imported == sum(int(w["imported"]) for w in report.workers)  # type: ignore[call-overload]
    assert all(list((tmp_path / "sync" / f"worker-{k}").glob("*.mlir")) for k in range(2))
    assert "seeds of other workers run" in report.summary()
