"""The MLIR interop sweep over every graph-dialect model of the test suite (a check too slow for the unit
tests: one IREE compile per model).

    python benchmarks/mlir_interop.py            # export, MLIR verify, round trip, IREE llvm-cpu vs interpreter
    python benchmarks/mlir_interop.py --no-iree  # the first three only

Models: the inputs and expected outputs of tests/passes/cases, the benchmark workloads at their smoke sizes
(torch extra) and the examples (mlp.mlir, the ONNX CNN with the onnx extra). Each model's inputs are seeded
random arrays, symbolic dims of size 3; results must match the interpreter within 1e-4.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from tensorium.backends.interp import run
from tensorium.interop.bindings import verify_text
from tensorium.interop.export import ExportError, export_text
from tensorium.interop.importer import import_text
from tensorium.ir.dialects.builtin import functions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))
from models import example_modules, pass_case_modules, sample_inputs, workload_modules


def _equal(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    same = [g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-4, equal_nan=True) for g, w in zip(got, want)]
    return len(got) == len(want) and all(same)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-iree", action="store_true", help="skip the IREE compile and run")
    args = parser.parse_args(argv)
    if not args.no_iree:
        from tensorium.interop.iree import compile_text, run_vmfb
    counts: Counter[str] = Counter()
    iree_seconds = 0.0
    for name, module in [*pass_case_modules(), *workload_modules(), *example_modules()]:
        if not functions(module):
            continue
        counts["models"] += 1
        try:
            text = export_text(module)
        except ExportError as e:
            print(f"not exported  {name}: {str(e).splitlines()[1].strip()}")
            continue
        counts["exported"] += 1
        verify_text(text, name)
        counts["verified by MLIR"] += 1
        inputs = sample_inputs(module)
        want = run(module, inputs)
        if _equal(run(import_text(text, name), inputs), want):
            counts["round trip equal"] += 1
        else:
            print(f"round trip differs  {name}")
        if args.no_iree:
            continue
        start = time.perf_counter()
        vmfb = compile_text(text)
        iree_seconds += time.perf_counter() - start
        if _equal(run_vmfb(vmfb, inputs), want):
            counts["IREE equal"] += 1
        else:
            print(f"IREE differs  {name}")
    for key, value in counts.items():
        print(f"{key:>20}: {value}")
    if not args.no_iree:
        print(f"{'IREE compile time':>20}: {iree_seconds:.1f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
