"""The benchmark harness: probe the machine, check every runner's output, time the runners in interleaved rounds.

For each workload every runner is prepared (cold compile timed), its output checked against the module
run in float64 by PyTorch eager, then timed in ``rounds`` rounds. In each round the runners take turns
(the order rotates from round to round), each running one warm-up call and then ``reps`` timed calls;
the round's median is kept, and the best median across rounds is reported, so a round disturbed by
another process on a shared machine does not decide the result.
"""

from __future__ import annotations

import copy
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch

from ..version import __version__
from .runners import NotApplicable, Prepared, Runner
from .timing import let_threads_park
from .workloads import WORKLOADS, Instance, Workload

RTOL = 1e-3


# --- machine limits ---------------------------------------------------------------------------------
@dataclass
class Machine:
    """What the results depend on: CPU, threads, versions, the measured limits and the load around the run."""

    cpu: str
    cores: int
    threads: int
    python: str
    versions: dict[str, str]
    peak_gflops: float
    peak_probe: str
    gemm_proxy_gflops: float
    clock_ghz: float
    read_gbps: float
    copy_gbps: float
    bandwidth_probe: str
    load_before: float
    load_after: float = math.nan
    isa: str = ""
    peer_env: str = ""
    target_peaks: dict[str, float] = field(default_factory=dict)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _best_seconds(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _versions() -> dict[str, str]:
    found = {"numpy": np.__version__, "torch": torch.__version__, "tensorium": __version__}
    try:
        import onnxruntime

        found["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    return found


def probe_machine(
    threads: int,
    gemm_size: int = 2048,
    stream_mib: int = 256,
    repeats: int = 10,
    targets: Sequence[str] = (),
    fma_seconds: float = 0.01,
) -> Machine:
    """Measure the machine's limits: its f32 FMA peak on ``threads`` threads (a JIT-compiled loop of independent
    FMA chains for the host's widest vectors, :mod:`tensorium.backends.llvm.probe`), the busy clock, a GEMM proxy
    (the faster of torch.mm and numpy.matmul on a square f32 GEMM, what a peer's kernel reaches) and bandwidth;
    also the FMA peak of each of ``targets`` (CPU target names) that runs here.

    Read bandwidth is a sum over a float32 array far larger than the caches (torch's sum runs on
    ``threads`` threads, numpy's on one; the faster counts), copy bandwidth counts read plus write.
    """
    from ..backends.llvm.probe import measure_clock_ghz, measure_fma_peak
    from ..targets import host_target, parse_target

    n = gemm_size
    load = os.getloadavg()[0]
    host = host_target()
    peak = measure_fma_peak(host, threads, fma_seconds, repeats=max(2, repeats))
    target_peaks = {}
    for name in targets:
        target = parse_target(name)
        if target.kind == "cpu" and target.runs_here():
            target_peaks[name] = measure_fma_peak(target, threads, fma_seconds, repeats=max(2, repeats)).gflops
    clock = measure_clock_ghz(host, repeats=max(2, repeats + 5))
    a = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    ta = torch.from_numpy(a)
    gemm = min(_best_seconds(lambda: torch.mm(ta, ta), repeats), _best_seconds(lambda: a @ a, repeats))
    big = np.ones(stream_mib * 2**20 // 4, np.float32)
    tbig = torch.from_numpy(big)
    read = min(_best_seconds(lambda: tbig.sum(), repeats), _best_seconds(lambda: big.sum(), repeats))
    dst = np.empty_like(big)
    copy_s = _best_seconds(lambda: np.copyto(dst, big), repeats)
    return Machine(
        cpu=_cpu_name(),
        cores=os.cpu_count() or 1,
        threads=threads,
        python=platform.python_version(),
        versions=_versions(),
        peak_gflops=peak.gflops,
        peak_probe=peak.describe(),
        gemm_proxy_gflops=2.0 * n**3 / gemm / 1e9,
        clock_ghz=clock,
        read_gbps=big.nbytes / read / 1e9,
        copy_gbps=2 * big.nbytes / copy_s / 1e9,
        bandwidth_probe=f"read: sum of a {stream_mib} MiB f32 array (torch, {threads} threads, or numpy); "
        "copy: numpy.copyto, read + write bytes",
        load_before=load,
        isa=_isa(),
        peer_env=" ".join(f"{k}={os.environ[k]}" for k in PEER_ISA_VARS if k in os.environ),
        target_peaks=target_peaks,
    )


PEER_ISA_VARS = ("OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
"""Environment variables that cap the peers' kernels to an older ISA (``tensorium bench --peer-isa``)."""


def _isa() -> str:
    """The host's widest vector ISA and LLVM's CPU name, as the benchmark's context."""
    from ..targets import host_target

    host = host_target()
    widest = {512: "AVX-512", 256: "AVX2" if "avx2" in host.features else "AVX"}.get(host.vector_bits, "SSE")
    return f"{widest}{' + FMA' if host.fma else ''} ({host.cpu})"


# --- one workload -------------------------------------------------------------------------------------
@dataclass
class Row:
    """One runner on one workload: its status, its per-round medians and what the report derives from them."""

    workload: str
    title: str
    runner: str
    status: str
    detail: str = ""
    round_medians: list[float] = field(default_factory=list)
    reps: int = 0
    compile_s: float | None = None
    error: float | None = None
    best_s: float | None = None
    ratio: float | None = None
    rate: float | None = None
    unit: str = ""
    percent: float | None = None
    stats: dict[str, Any] | None = None


def _log(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def _reason(error: BaseException) -> str:
    first = str(error).strip().splitlines()
    return f"{type(error).__name__}: {first[0][:160]}" if first else type(error).__name__


def reference_output(inst: Instance) -> np.ndarray:
    """The workload computed by PyTorch eager in float64 (a double copy of the module)."""
    module = copy.deepcopy(inst.module).double()
    with torch.inference_mode():
        out = module(*(torch.from_numpy(a).double() for a in inst.inputs))
    return np.asarray(out.numpy())


def check_output(out: np.ndarray, ref: np.ndarray) -> tuple[bool, float]:
    """Whether ``out`` matches ``ref`` within RTOL (absolute slack RTOL * max|ref|), and max|out - ref| / max|ref|."""
    if out.shape != ref.shape:
        return False, math.inf
    out64 = out.astype(np.float64)
    scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, float(np.finfo(np.float32).tiny))
    error = float(np.max(np.abs(out64 - ref))) / scale if ref.size else 0.0
    return bool(np.allclose(out64, ref, rtol=RTOL, atol=RTOL * scale)), error


def _median_of_calls(call: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(statistics.median(times))


def bench_workload(
    workload: Workload,
    sizes: dict[str, int],
    runners: Sequence[Runner],
    rounds: int,
    min_time: float,
    stream: TextIO,
) -> list[Row]:
    """Prepare, check and time every runner on one workload; one Row per runner, in runner order."""
    title = workload.describe(sizes)
    inst = workload.build(sizes)
    ref = reference_output(inst)
    rows: list[Row] = []
    ready: list[tuple[Row, Prepared]] = []
    for runner in runners:
        row = Row(workload.name, title, runner.name, "ok")
        rows.append(row)
        try:
            prepared = runner.prepare(inst)
            ok, row.error = check_output(prepared.to_numpy(prepared.call()), ref)
        except NotApplicable as e:
            row.status, row.detail = "n/a", str(e)
            continue
        except Exception as e:
            row.status, row.detail = "failed", _reason(e)
            _log(stream, f"[{workload.name}] {runner.name}: FAILED {row.detail}")
            continue
        row.compile_s = prepared.compile_s
        row.stats = prepared.stats
        if not ok:
            row.status = "mismatch"
        seconds = _median_of_calls(prepared.call, 1)
        row.reps = max(3, min(200, math.ceil(min_time / max(seconds, 1e-6))))
        compiled = f", cold compile {row.compile_s:.2f} s" if row.compile_s is not None else ""
        checked = f"{row.status} (error {row.error:.1e})"
        _log(stream, f"[{workload.name}] {runner.name}: {checked}{compiled}, {row.reps} reps per round")
        ready.append((row, prepared))
    for r in range(rounds):
        order = ready[r % len(ready) :] + ready[: r % len(ready)] if ready else []
        for row, prepared in order:
            let_threads_park()
            try:
                prepared.call()
                row.round_medians.append(_median_of_calls(prepared.call, row.reps))
            except Exception as e:
                row.status, row.detail, row.round_medians = "failed", f"in round {r + 1}: {_reason(e)}", []
                _log(stream, f"[{workload.name}] {row.runner}: FAILED {row.detail}")
                ready.remove((row, prepared))
        summary = ", ".join(f"{row.runner} {row.round_medians[-1] * 1e3:.3f} ms" for row, _ in ready)
        _log(stream, f"[{workload.name}] round {r + 1}/{rounds}: {summary}")
    _derive(rows, inst, workload)
    return rows


def _derive(rows: list[Row], inst: Instance, workload: Workload) -> None:
    """Fill in each row's best median, its ratio to the fastest correct runner and its rate."""
    for row in rows:
        if row.round_medians:
            row.best_s = min(row.round_medians)
    correct = [row.best_s for row in rows if row.status == "ok" and row.best_s is not None]
    fastest = min(correct) if correct else None
    for row in rows:
        if row.best_s is None:
            continue
        if fastest is not None:
            row.ratio = row.best_s / fastest
        if workload.metric == "gbps":
            row.rate, row.unit = inst.bytes / row.best_s / 1e9, "GB/s"
        else:
            row.rate, row.unit = inst.flops / row.best_s / 1e9, "GFLOP/s"


def _percent(rows: list[Row], machine: Machine) -> None:
    for row in rows:
        if row.rate is not None:
            limit = machine.read_gbps if row.unit == "GB/s" else machine.peak_gflops
            row.percent = 100.0 * row.rate / limit


# --- the whole run --------------------------------------------------------------------------------
@dataclass
class Report:
    """Everything one run measured, with the command and the date, renderable as markdown or JSON."""

    command: str
    date: str
    rounds: int
    min_time: float
    smoke: bool
    machine: Machine
    rows: list[Row]
    missing: dict[str, str]

    def to_json(self) -> str:
        """The report as indented JSON."""
        return json.dumps(asdict(self), indent=2) + "\n"

    def to_markdown(self) -> str:
        """The report as a markdown document: header facts, the results table and the Tensorium summary."""
        m = self.machine
        versions = ", ".join(f"{k} {v}" for k, v in m.versions.items())
        lines = [
            "# Tensorium benchmark results",
            "",
            f"- Command: `{self.command}`",
            f"- Date: {self.date}",
            f"- Machine: {m.cpu}, {m.cores} cores, {m.threads} threads per runner; Python {m.python}, {versions}",
            f"- Host ISA: {m.isa or 'not recorded'}; peers' ISA: "
            f"{'capped by ' + m.peer_env if m.peer_env else 'their own choice (native)'}",
            f"- Load average (1 min) before / after the run: {m.load_before:.2f} / {m.load_after:.2f}",
            f"- Peak: {m.peak_gflops:.1f} GFLOP/s f32 ({m.peak_probe}; {m.peak_gflops / m.threads / m.clock_ghz:.1f} "
            f"FLOP/cycle per thread at the {m.clock_ghz:.2f} GHz measured by a chain of dependent adds)"
            + "".join(f"; {name}: {gflops:.1f} GFLOP/s" for name, gflops in m.target_peaks.items()),
            f"- GEMM proxy: {m.gemm_proxy_gflops:.1f} GFLOP/s (the faster of torch.mm and numpy.matmul on a square "
            "f32 GEMM: what a peer's kernel reaches here)",
            f"- Bandwidth: {m.read_gbps:.1f} GB/s read, {m.copy_gbps:.1f} GB/s copy ({m.bandwidth_probe})",
            "- Both probes run before and after the workloads; the higher value is kept. Rates are nominal FLOPs "
            "(direct convolution, dense attention) or minimal bytes (each input read once) over the median time.",
            f"- Method: {self.rounds} rounds, runners interleaved (order rotated each round, 0.3 s apart so that the "
            f"last runner's threads stop spinning); per round one warm-up "
            f"call then enough timed calls for about {self.min_time:g} s (at least 3); the table gives the best "
            f"per-round median. Outputs are checked against PyTorch eager in float64 (rtol {RTOL:g}, absolute "
            f"slack {RTOL:g} x max|ref|). {'Smoke sizes, not the real workloads.' if self.smoke else ''}".rstrip(),
        ]
        if m.cores != m.threads:
            lines.append("- numpy's BLAS keeps its own default thread count; --threads does not change it")
        lines += [f"- {name}: {why}" for name, why in self.missing.items()]
        lines += [
            "",
            "| workload | runner | median | x best | rate | % of peak | round spread | cold compile | check |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        lines += [_markdown_row(row) for row in self.rows]
        lines += ["", *self._tensorium_summary()]
        configurations = self._configurations()
        if configurations:
            lines += ["", *configurations]
        return "\n".join(lines) + "\n"

    def _configurations(self) -> list[str]:
        """Each Tensorium runner's kernels per call, peak intermediate memory and median, per workload; with
        several configurations, how much faster each is than the one with the most stages disabled."""
        out = [
            "| workload | Tensorium configuration | kernels | peak intermediate memory | median | x faster than the "
            "most disabled |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for name in dict.fromkeys(row.workload for row in self.rows):
            mine = [r for r in self.rows if r.workload == name and _is_tensorium(r) and r.stats is not None]
            if not mine:
                continue
            base = max(mine, key=lambda r: r.runner.count("-"))
            for row in mine:
                assert row.stats is not None
                speedup = "-"
                if row.best_s is not None and base.best_s is not None and len(mine) > 1:
                    speedup = f"{base.best_s / row.best_s:.2f}x"
                median = _ms(row.best_s) if row.best_s is not None else "-"
                peak = _memory(int(row.stats["peak_intermediate_bytes"]))
                out.append(f"| {row.title} | {row.runner} | {row.stats['kernels']} | {peak} | {median} | {speedup} |")
        return out if len(out) > 2 else []

    def _tensorium_summary(self) -> list[str]:
        out = ["| workload | Tensorium | best peer | Tensorium / best peer |", "| --- | ---: | --- | ---: |"]
        for name in dict.fromkeys(row.workload for row in self.rows):
            rows = [row for row in self.rows if row.workload == name]
            peers = [row for row in rows if not _is_tensorium(row) and row.status == "ok" and row.best_s is not None]
            if not peers:
                continue
            best = min(peers, key=lambda row: row.best_s or math.inf)
            assert best.best_s is not None
            for mine in rows:
                if _is_tensorium(mine) and mine.best_s is not None:
                    out.append(
                        f"| {mine.title} | {mine.runner} {_ms(mine.best_s)} | {best.runner} {_ms(best.best_s)} | "
                        f"{mine.best_s / best.best_s:.2f}x |"
                    )
        return out if len(out) > 2 else []


def _is_tensorium(row: Row) -> bool:
    return row.runner.startswith("tensorium")


def _memory(n: int) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB" if n >= 2**10 else f"{n} B"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _markdown_row(row: Row) -> str:
    spread = ""
    if len(row.round_medians) > 1:
        spread = f"{100 * (max(row.round_medians) / min(row.round_medians) - 1):.0f}%"
    if row.status == "ok":
        check = f"ok ({row.error:.0e})"
    elif row.status == "mismatch":
        check = f"**MISMATCH** ({row.error:.1e})"
    else:
        check = f"{row.status}: {row.detail.replace('|', '/')}"
    cells = [
        row.title,
        row.runner,
        _ms(row.best_s) if row.best_s is not None else "-",
        f"{row.ratio:.2f}" if row.ratio is not None else "-",
        f"{row.rate:.1f} {row.unit}" if row.rate is not None else "-",
        f"{row.percent:.0f}%" if row.percent is not None else "-",
        spread or "-",
        f"{row.compile_s:.2f} s" if row.compile_s is not None else "-",
        check,
    ]
    return "| " + " | ".join(cells) + " |"


def run(
    runners: Sequence[Runner],
    *,
    only: Sequence[str] | None = None,
    rounds: int = 5,
    min_time: float = 0.25,
    smoke: bool = False,
    threads: int = 2,
    command: str = "",
    missing: dict[str, str] | None = None,
    stream: TextIO = sys.stderr,
) -> Report:
    """Probe the machine, then benchmark the chosen workloads (all by default) with ``runners``.

    PyTorch runs on ``threads`` threads meanwhile (its previous setting is restored afterwards).
    """
    names = list(only) if only else list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise ValueError(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _run(runners, names, rounds, min_time, smoke, threads, command, missing or {}, stream)
    finally:
        torch.set_num_threads(previous)


def _probe(threads: int, smoke: bool, runners: Sequence[Runner]) -> Machine:
    targets = sorted({t for r in runners if isinstance(t := getattr(r, "target", None), str) and t != "cpu"})
    if smoke:
        return probe_machine(threads, 128, 4, 2, targets, fma_seconds=0.002)
    return probe_machine(threads, targets=targets)


def _run(
    runners: Sequence[Runner],
    names: list[str],
    rounds: int,
    min_time: float,
    smoke: bool,
    threads: int,
    command: str,
    missing: dict[str, str],
    stream: TextIO,
) -> Report:
    _log(stream, "probing the machine (peak GEMM, bandwidth)")
    machine = _probe(threads, smoke, runners)
    _log(stream, f"peak {machine.peak_gflops:.1f} GFLOP/s, read {machine.read_gbps:.1f} GB/s")
    for runner in runners:
        start = time.perf_counter()
        try:
            runner.warm_up()
        except Exception as e:
            _log(stream, f"warm-up {runner.name}: FAILED {_reason(e)}")
            continue
        _log(stream, f"warm-up {runner.name}: {time.perf_counter() - start:.1f} s")
    rows: list[Row] = []
    for name in names:
        workload = WORKLOADS[name]
        sizes = dict(workload.smoke if smoke else workload.full)
        rows += bench_workload(workload, sizes, runners, rounds, min_time, stream)
    machine.load_after = os.getloadavg()[0]
    _log(stream, "probing the machine again (the higher of the two probes is kept)")
    again = _probe(threads, smoke, runners)
    machine.peak_gflops = max(machine.peak_gflops, again.peak_gflops)
    machine.gemm_proxy_gflops = max(machine.gemm_proxy_gflops, again.gemm_proxy_gflops)
    machine.clock_ghz = max(machine.clock_ghz, again.clock_ghz)
    for name, gflops in again.target_peaks.items():
        machine.target_peaks[name] = max(machine.target_peaks.get(name, 0.0), gflops)
    machine.read_gbps = max(machine.read_gbps, again.read_gbps)
    machine.copy_gbps = max(machine.copy_gbps, again.copy_gbps)
    _percent(rows, machine)
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Report(command, date, rounds, min_time, smoke, machine, rows, dict(missing))


def write_report(report: Report, out: str | None) -> None:
    """Print the markdown on stdout and, with ``out``, write it there (making its folder) and the JSON beside it."""
    text = report.to_markdown()
    sys.stdout.write(text)
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.with_suffix(".json").write_text(report.to_json())
