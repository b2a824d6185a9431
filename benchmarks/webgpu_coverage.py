"""Per-op coverage of the WebGPU backend: every graph-dialect model of the test suite through wgpu-py on
lavapipe against the interpreter (a sweep too slow for the unit tests).

    python benchmarks/webgpu_coverage.py             # the summary, then the ops and why models failed
    python benchmarks/webgpu_coverage.py --dawn      # also under Node on Dawn (the JavaScript runtime)
    python benchmarks/webgpu_coverage.py --only fuse_attention.mlir:3:out   # just these models (repeatable)

Models: the pass test cases (tests/passes/cases), the benchmark workloads at their smoke sizes (torch
extra) and the examples, as tests/interop/models.py collects them; inputs are seeded random arrays. A model
passes when every output matches the interpreter within 1e-4 (relative and absolute). An op counts as
covered when some passing model contains it (inside fused groups too).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "webgpu"))
sys.path.insert(0, str(ROOT / "tests" / "interop"))  # first: its models.py is the one meant here

from js_harness import run_node  # noqa: E402
from models import example_modules, pass_case_modules, sample_inputs, workload_modules  # noqa: E402

from tensorium.backends.interp import run  # noqa: E402
from tensorium.backends.webgpu import WebGPUExecutable  # noqa: E402
from tensorium.errors import TensoriumError  # noqa: E402
from tensorium.ir.core import Operation  # noqa: E402
from tensorium.ir.dialects.builtin import functions  # noqa: E402


def _equal(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    same = [g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-4, equal_nan=True) for g, w in zip(got, want)]
    return len(got) == len(want) and all(same)


def _ops(module: Operation) -> set[str]:
    return {op.name for op in module.walk() if op.name.startswith("graph.") and op.name != "graph.yield"}


def _dawn_equal(executable: WebGPUExecutable, inputs: list[np.ndarray], want: list[np.ndarray]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        executable.to_files(Path(tmp) / "exe")
        done = run_node(Path(tmp) / "exe", inputs, Path(tmp))
        if done.returncode != 0:
            return f"refused by Dawn: {done.stderr.strip().splitlines()[-1]}"
        got = [np.load(Path(tmp) / "out" / f"out{n}.npy") for n in range(len(want))]
        return "ok" if _equal(got, want) else "differs on Dawn"


def _modules(only: set[str]) -> Iterator[tuple[str, Operation]]:
    """The models by name; with ``only``, just the groups that can hold those names (the workloads need torch)."""
    yield from pass_case_modules()
    if not only or any(name.startswith("bench:") for name in only):
        yield from workload_modules()
    if not only or any(name.startswith("examples/") for name in only):
        yield from example_modules()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dawn", action="store_true", help="also run each model under Node on Dawn")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only the model NAME")
    args = parser.parse_args(argv)
    counts: Counter[str] = Counter()
    covered: set[str] = set()
    failing: dict[str, set[str]] = defaultdict(set)
    reasons: Counter[str] = Counter()
    for name, module in _modules(set(args.only)):
        if not functions(module) or (args.only and name not in args.only):
            continue
        counts["models"] += 1
        ops = _ops(module)
        inputs = sample_inputs(module)
        want = [np.asarray(r) for r in run(module, inputs)]
        try:
            executable = WebGPUExecutable.build(module)
            status = "ok" if _equal(executable.run(inputs), want) else "differs on lavapipe"
            if status == "ok" and args.dawn:
                status = _dawn_equal(executable, inputs, want)
        except TensoriumError as e:
            status = f"refused: {type(e).__name__}: {str(e).splitlines()[0][:110]}"
        if status == "ok":
            counts["pass"] += 1
            covered |= ops
            continue
        counts["fail"] += 1
        reasons[status.split(":")[0] if status.startswith("refused") else status] += 1
        print(f"{status}  [{name}]")
        for op in ops:
            failing[op].add(status)
    print()
    print(f"models: {counts['models']}, passing: {counts['pass']}, failing: {counts['fail']} {dict(reasons)}")
    print(f"ops covered (in a passing model): {len(covered)}")
    print("  " + ", ".join(sorted(o.removeprefix("graph.") for o in covered)))
    missing = sorted(set(failing) - covered)
    print(f"ops only in failing models: {len(missing)}")
    for op in missing:
        print(f"  {op.removeprefix('graph.')}: {sorted(failing[op])[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
