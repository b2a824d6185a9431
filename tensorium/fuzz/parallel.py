"""Fuzzing on several cores: independent workers with their own seeds, merged into one report.

Each worker is a fresh process (``spawn``: a ``fork`` copies only the forking thread, so a child would inherit
the state of the CPU runtime's thread pool, :mod:`tensorium.backends.llvm.pool`, without its worker threads,
and likewise libgomp's, the pool's fallback off Linux x86-64, and the wgpu device's the parent may have
opened) running :class:`~tensorium.fuzz.fuzzer.Fuzzer` with seed ``seed + k`` and, with an output folder,
``DIR/worker-k`` for its failures and corpus. The workers share their corpus through a folder
(:mod:`.sync`: ``DIR/sync``, or a temporary folder without ``--out``): each publishes the seeds it keeps
and runs the others' every ``sync_seconds``. Workers send their numbers every few seconds, which the
parent prints as one progress line (executions, corpus and failures summed; coverage as the union of the
workers' lines at the last report). At the end the parent merges the reports: counts summed, failures
deduplicated by signature (the earliest kept), coverage the union of every worker's edges.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import queue
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from .coverage import Edge, line_percent
from .fuzzer import FoundFailure, FuzzConfig, Fuzzer, FuzzReport
from .oracle import Failure, FuzzCase
from .reduce import read_case
from .sync import CorpusSync


def _worker(config: FuzzConfig, index: int, messages: Any, shared: Path) -> None:
    fuzzer = Fuzzer(config, log=None)
    fuzzer.sync = CorpusSync(shared, index)

    def progress(numbers: dict[str, Any]) -> None:
        messages.put(("progress", index, numbers))

    fuzzer.on_progress = progress
    report = fuzzer.run()
    tracer = fuzzer.tracer
    edges = tracer.portable_edges() if tracer is not None else set()
    lines = tracer.lines() if tracer is not None else set()
    messages.put(("done", index, (report, edges, lines)))


def fuzz_parallel(config: FuzzConfig, log: TextIO | None = sys.stderr) -> FuzzReport:
    """Run ``config.jobs`` workers for ``config.seconds`` and merge what they found."""
    context = multiprocessing.get_context("spawn")
    messages = context.Queue()
    shared = config.out / "sync" if config.out is not None else Path(tempfile.mkdtemp(prefix="tensorium-fuzz-"))
    try:
        return _run_workers(config, context, messages, shared, log)
    finally:
        if config.out is None:
            shutil.rmtree(shared, ignore_errors=True)


def _run_workers(config: FuzzConfig, context: Any, messages: Any, shared: Path, log: TextIO | None) -> FuzzReport:
    workers = []
    for k in range(config.jobs):
        out = config.out / f"worker-{k}" if config.out is not None else None
        # A quiet run prints no progress: its workers need not measure it (see Fuzzer.run).
        every = config.progress_seconds if log is not None else math.inf
        own = dataclasses.replace(config, seed=config.seed + k, out=out, jobs=1, progress_seconds=every)
        process = context.Process(target=_worker, args=(own, k, messages, shared), daemon=True)
        process.start()
        workers.append(process)
    start = time.monotonic()
    latest: dict[int, dict[str, Any]] = {}
    finished: dict[int, tuple[FuzzReport, set[Edge], set[tuple[str, int]]]] = {}
    while len(finished) < len(workers):
        try:
            kind, index, payload = messages.get(timeout=1.0)
        except queue.Empty:
            for k, process in enumerate(workers):
                if not process.is_alive() and k not in finished:
                    finished[k] = _died(config, k, process.exitcode, time.monotonic() - start, log)
            continue
        if kind == "progress":
            latest[index] = payload
            if log is not None:
                print(_progress_line(time.monotonic() - start, latest, config.jobs), file=log, flush=True)
        else:
            finished[index] = payload
    for process in workers:
        process.join()
    report = merge([finished[k] for k in sorted(finished)], config, time.monotonic() - start)
    if config.out is not None:
        config.out.mkdir(parents=True, exist_ok=True)
        (config.out / "report.json").write_text(json.dumps(report.to_json(), indent=1))
    return report


def _died(
    config: FuzzConfig, index: int, status: int | None, elapsed: float, log: TextIO | None
) -> tuple[FuzzReport, set[Edge], set[tuple[str, int]]]:
    """A worker process that ended without a report (a crash in compiled code): one failure, with the case
    it was running when the output folder has it."""
    report = FuzzReport(config)
    current = config.out / f"worker-{index}" / "current.mlir" if config.out is not None else None
    failure = Failure("crash", "worker process", f"the worker died with exit status {status}")
    case = read_case(current) if current is not None and current.is_file() else FuzzCase("", "")
    report.failures.append(FoundFailure(failure, case, case, elapsed, 0, path=current))
    if log is not None:
        where = f"; the case it was running: {current}" if current is not None else ""
        print(f"worker {index} died (exit status {status}){where}", file=log, flush=True)
    return report, set(), set()


def _progress_line(elapsed: float, latest: dict[int, dict[str, Any]], jobs: int) -> str:
    execs = sum(n["execs"] for n in latest.values())
    best = max((n["line_percent"] for n in latest.values()), default=0.0)
    return (
        f"[{elapsed:6.1f}s] {jobs} workers: execs {execs} ({execs / max(elapsed, 1e-9):.1f}/s)"
        f"  corpus {sum(n['corpus'] for n in latest.values())}  lines {best:.1f}% (best worker)"
        f"  failures {sum(n['failures'] for n in latest.values())}"
        f"  invalid {sum(n['invalid'] for n in latest.values())}  refused {sum(n['refused'] for n in latest.values())}"
    )


def merge(
    parts: list[tuple[FuzzReport, set[Edge], set[tuple[str, int]]]],
    config: FuzzConfig,
    seconds: float,
) -> FuzzReport:
    """One report for several workers' (report, edges, lines): counts summed, failures deduplicated."""
    merged = FuzzReport(config)
    merged.seconds = seconds
    merged.outcomes = Counter()
    by_signature: dict[str, FoundFailure] = {}
    edges: set[Edge] = set()
    lines: set[tuple[str, int]] = set()
    for report, worker_edges, worker_lines in parts:
        merged.execs += report.execs
        merged.outcomes.update(report.outcomes)
        merged.mutations.update(report.mutations)
        merged.refusals.update(report.refusals)
        merged.cpu_levels.update(report.cpu_levels)
        merged.corpus_size += report.corpus_size
        merged.imported += report.imported
        merged.imported_kept += report.imported_kept
        merged.reduce_seconds = max(merged.reduce_seconds, report.reduce_seconds)
        merged.stopped = merged.stopped or report.stopped
        for error in report.internal_errors:
            same = [known for known in merged.internal_errors if known.signature == error.signature]
            if same:
                same[0].count += error.count
            else:
                merged.internal_errors.append(error)
        edges |= worker_edges
        lines |= worker_lines
        for found in report.failures:
            known = by_signature.get(found.failure.signature)
            if known is None or found.found_after < known.found_after:
                if known is not None:
                    found.count += known.count
                by_signature[found.failure.signature] = found
            else:
                known.count += found.count
    merged.failures = sorted(by_signature.values(), key=lambda f: f.found_after)
    merged.edges = len(edges)
    merged.line_percent = line_percent(lines)
    merged.workers = [report.to_json() for report, _, _ in parts]
    return merged
