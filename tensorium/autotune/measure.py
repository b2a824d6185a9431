"""Measuring one kernel at one point of its space, alone and in a worker process.

:func:`build_job` lowers a graph op at a config into a loop-level module holding just that kernel (the same
codegen stages a compiled model runs: lower, schedule, decompose), which rejects illegal points before
anything runs. A :class:`Measurer` sends the job's text to a worker process that compiles it with LLVM,
fills its buffers with seeded random data and times it: the median over repeats of runs long enough to be
timed. A candidate that crashes the worker or runs past the time limit costs one failed trial, recorded
with its reason; the worker is restarted for the next one.
"""

from __future__ import annotations

import json
import math
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any, Protocol

import numpy as np

from ..errors import TensoriumError
from ..ir.core import Operation
from ..ir.dialects.builtin import func_body, functions, make_func, make_module, set_results
from ..ir.printer import print_module
from ..ir.types import BufferType, storage_dtype
from ..lowering.codegen import Codegen, run_codegen
from ..lowering.space import Config, kernel_key
from ..targets import Target
from .features import sample_shape


@dataclass(frozen=True)
class Job:
    """One measurement: a loop-level module holding one kernel (as text) for ``target``."""

    kernel: str
    """The kernel's structural key (:func:`~tensorium.lowering.space.kernel_key`)."""
    config: str
    module_text: str
    target: Target


@dataclass(frozen=True)
class Measurement:
    """What one trial gave: the median seconds per run, or the reason it failed."""

    seconds: float | None
    error: str | None = None
    runs: tuple[float, ...] = ()
    compile_seconds: float = 0.0
    checksum: float = 0.0
    """The sum of the outputs' absolute values after the runs: equal (within rounding) at every legal point."""

    @property
    def ok(self) -> bool:
        return self.seconds is not None

    @staticmethod
    def from_json(data: dict[str, Any]) -> Measurement:
        """The measurement ``dataclasses.asdict`` made into JSON (by a worker or a Ray task)."""
        return Measurement(
            data["seconds"], data["error"], tuple(data["runs"]), data["compile_seconds"], data["checksum"]
        )


class Measures(Protocol):
    """Anything that measures jobs (a :class:`Measurer`, a Ray cluster; tests use synthetic ones)."""

    def measure(self, job: Job) -> Measurement: ...


def measure_all(measurer: Measures, jobs: Sequence[Job]) -> Generator[tuple[Job, Measurement], None, None]:
    """(job, measurement) for each of ``jobs`` as it finishes: all at once where the measurer has a
    ``measure_all`` (a cluster), else one after the other."""
    batch = getattr(measurer, "measure_all", None)
    if batch is not None:
        yield from batch(jobs)
        return
    for job in jobs:
        yield job, measurer.measure(job)


def one_op_module(op: Operation) -> Operation:
    """A module whose ``@main`` takes ``op``'s distinct operands as arguments and returns a copy of ``op``'s
    results: the kernel alone, with the same structural key."""
    operands = list(dict.fromkeys(op.operands))
    func = make_func("main", [v.type for v in operands])
    clone = op.clone(dict(zip(operands, func_body(func).args)))
    func_body(func).append(clone)
    set_results(func, list(clone.results))
    return make_module([func])


def lowered_kernel(op: Operation, target: Target, config: Config, native: frozenset[str]) -> Operation:
    """The loop-level module of ``op``'s kernel at ``config`` (ScheduleError for an illegal point)."""
    module = one_op_module(op)
    state = Codegen(module, target, "main", {kernel_key(op): config}, native)
    run_codegen(state, until="decompose")
    assert state.lowered is not None
    built = [str(f.attributes.get("config")) for f in functions(state.lowered) if "config" in f.attributes]
    if built != [str(config)]:
        raise TensoriumError(f"kernel {kernel_key(op)} was built at {built}, not at {config}")
    return state.lowered


def build_job(op: Operation, target: Target, config: Config, lowered: Operation | None = None) -> Job:
    """The job measuring ``op``'s kernel at ``config`` on ``target`` (``lowered``: its module, if built)."""
    if lowered is None:
        from ..backends.llvm.emitter import LLVMEmitter

        lowered = lowered_kernel(op, target, config, LLVMEmitter.NATIVE)
    return Job(kernel_key(op), str(config), print_module(lowered), target)


# --- the worker side ----------------------------------------------------------------------------------
def random_arguments(func: Operation, rng: np.random.Generator) -> list[Any]:
    """Seeded arguments for a kernel: normal floats, small non-negative integers (valid indices and codes)."""
    args: list[Any] = []
    for arg in func_body(func).args:
        t = arg.type
        if not isinstance(t, BufferType):
            raise TensoriumError(f"cannot measure a kernel with a scalar argument of type {t}")
        shape = sample_shape(t)
        dtype = storage_dtype(t.element)
        if np.issubdtype(dtype, np.floating):
            args.append(rng.standard_normal(shape).astype(dtype))
        else:
            args.append(rng.integers(0, 2, size=shape).astype(dtype))
    return args


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""What a measurement reads: wall-clock time, or the worker's CPU time (all its threads together), which
other processes on a loaded machine do not inflate while the kernel waits for a core (with one thread,
``TENSORIUM_NUM_THREADS=1``, it is the kernel's own cost)."""


def time_module(
    module_text: str, target: Target, repeats: int, min_run_seconds: float, clock: str = "wall"
) -> Measurement:
    """Compile a one-kernel module and time it: the median over ``repeats`` of the mean of as many runs as
    fill ``min_run_seconds``, after warm-up runs that fill ``min_run_seconds`` too (and set how many that is),
    by ``clock`` (:data:`CLOCKS`)."""
    if clock not in CLOCKS:
        raise TensoriumError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    now = CLOCKS[clock]
    from ..backends.llvm.jit import compile_module
    from ..ir.parser import parse_module

    module = parse_module(module_text)
    start = time.perf_counter()
    compiled = compile_module(module, target=target)
    compile_seconds = time.perf_counter() - start
    kernels = functions(module)
    if len(kernels) != 1:
        raise TensoriumError(f"a measured module holds one kernel, this one {len(kernels)}")
    name = str(kernels[0].attributes["sym_name"])
    args = random_arguments(kernels[0], np.random.default_rng(0))
    compiled.run(name, *args)  # the first run also starts the parallel runtime's threads
    warm, start = 0, now()
    while warm < 2 or now() - start < min_run_seconds:  # warm caches and threads, size the loop
        compiled.run(name, *args)
        warm += 1
    each = (now() - start) / warm
    number = max(1, math.ceil(min_run_seconds / max(each, 1e-7)))
    runs = []
    for _ in range(repeats):
        start = now()
        for _ in range(number):
            compiled.run(name, *args)
        runs.append((now() - start) / number)
    outputs = _output_count(module)
    checksum = float(sum(np.abs(a.astype(np.float64)).sum() for a in args[len(args) - outputs :]))
    return Measurement(statistics.median(runs), None, tuple(runs), compile_seconds, checksum)


def _output_count(module: Operation) -> int:
    """How many of the kernel's last arguments are its outputs (from the launch plan; all when absent)."""
    steps = module.attributes.get("plan_steps")
    if isinstance(steps, (list, tuple)) and steps:
        return len(steps[0][2])
    return len(func_body(functions(module)[0]).args)


def serve(requests: IO[str], replies: IO[str]) -> None:
    """The worker's loop: one JSON request a line in (module text, target, repeats, min seconds), one JSON
    :class:`Measurement` a line out."""
    replies.write('"ready"\n')
    replies.flush()
    for line in requests:
        request = json.loads(line)
        try:
            target = Target.from_json(request["target"])
            result = time_module(
                request["module"], target, request["repeats"], request["min_run_seconds"], request.get("clock", "wall")
            )
        except Exception as e:
            result = Measurement(None, f"{type(e).__name__}: {e}")
        replies.write(json.dumps(asdict(result)) + "\n")
        replies.flush()


# --- the session side ---------------------------------------------------------------------------------
WORKER = (sys.executable, "-m", "tensorium.autotune.measure")
"""The worker's command line."""


@dataclass
class Measurer:
    """Times jobs in a worker process that is restarted after a crash or a time-out.

    ``timeout``: seconds one trial may take (compile and runs); ``repeats`` and ``min_run_seconds``: see
    :func:`time_module`; ``start_timeout``: seconds a new worker may take to start; ``clock``: ``wall`` or
    ``cpu`` (:data:`CLOCKS`). ``failures`` counts failed trials and ``starts`` the workers started."""

    timeout: float = 20.0
    repeats: int = 5
    min_run_seconds: float = 0.002
    start_timeout: float = 120.0
    clock: str = "wall"
    command: tuple[str, ...] = WORKER
    failures: int = 0
    starts: int = 0
    _process: subprocess.Popen[str] | None = field(default=None, repr=False)

    def measure(self, job: Job) -> Measurement:
        """Time ``job`` in the worker; a crash or hang is a failed Measurement naming what happened."""
        process = self._worker()
        assert process.stdin is not None and process.stdout is not None
        request = {
            "module": job.module_text,
            "target": job.target.to_json(),
            "repeats": self.repeats,
            "min_run_seconds": self.min_run_seconds,
            "clock": self.clock,
        }
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except OSError:
            return self._crashed()
        if not _readable(process, self.timeout):
            self._stop()
            return self._failed(f"timed out after {self.timeout:g} s (the worker was restarted)")
        line = process.stdout.readline()
        if not line:
            return self._crashed()
        result = Measurement.from_json(json.loads(line))
        if not result.ok:
            self.failures += 1
        return result

    def close(self) -> None:
        """Stop the worker."""
        self._stop()

    def __enter__(self) -> Measurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _failed(self, reason: str) -> Measurement:
        self.failures += 1
        return Measurement(None, reason)

    def _crashed(self) -> Measurement:
        process = self._process
        code = self._stop()
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        detail = ""
        if process is not None and process.stderr is not None:
            tail = process.stderr.read()[-300:].strip()
            detail = f": {tail}" if tail else ""
        return self._failed(f"the worker crashed ({how}; it was restarted){detail}")

    def _worker(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=tempfile.TemporaryFile("w+"),
            text=True,
        )
        assert process.stdout is not None
        if not _readable(process, self.start_timeout) or process.stdout.readline().strip() != '"ready"':
            process.kill()
            process.wait()
            raise TensoriumError(f"the measuring worker ({' '.join(self.command)}) did not start")
        self._process = process
        self.starts += 1
        return process

    def _stop(self) -> int | None:
        """Kill the worker if it runs; its exit code (negative: the signal that ended it)."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.kill()
        code = process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()
        return code


def _readable(process: subprocess.Popen[str], timeout: float) -> bool:
    """Whether the worker's reply (or its end) arrives within ``timeout`` seconds."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return bool(ready)


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
