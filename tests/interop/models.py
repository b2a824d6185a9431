"""The graph-dialect models of the test suite, as (name, module, inputs): the inputs and expected outputs of
tests/passes/cases, the benchmark workloads at their smoke sizes, and the examples (mlp.mlir, the ONNX CNN)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import tensorium as tm
from tensorium.errors import TensoriumError
from tensorium.fuzz.builder import random_array
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import func_body, pick_function
from tensorium.ir.types import TensorType

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "passes" / "cases"


def _load_case_parser():
    spec = importlib.util.spec_from_file_location("_pass_cases", ROOT / "tests" / "passes" / "test_cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def pass_case_modules() -> Iterator[tuple[str, Operation]]:
    """Every pass case's input and expected IR that parses with the graph dialect alone (no test.* ops)."""
    cases = _load_case_parser()
    for path in sorted(CASES.glob("*.mlir")):
        for case in cases.parse_cases(path):
            for kind, text in (("in", case.source), ("out", case.expected)):
                if text is None or "test." in text:
                    continue
                try:
                    module = tm.parse_module(text)
                    tm.verify(module)
                except TensoriumError:
                    continue  # an ERROR case's input: invalid on purpose
                yield f"{case.id}:{kind}", module


def workload_modules() -> Iterator[tuple[str, Operation]]:
    """The benchmark workloads at their smoke sizes, imported from PyTorch (needs the torch extra)."""
    from tensorium.bench.workloads import WORKLOADS
    from tensorium.frontend.pytorch import import_module

    for name, workload in WORKLOADS.items():
        instance = workload.build(workload.smoke)
        yield f"bench:{name}", import_module(instance.module, tuple(instance.inputs)).module


def example_modules() -> Iterator[tuple[str, Operation]]:
    """examples/mlp.mlir, and the ONNX example model when the onnx extra is installed."""
    yield "examples/mlp.mlir", tm.parse_module((ROOT / "examples" / "mlp.mlir").read_text())
    try:
        from tensorium.frontend.onnx_import import import_onnx
    except ImportError:
        return
    for path in sorted((ROOT / "examples").glob("*.onnx")):
        yield f"examples/{path.name}", import_onnx(str(path)).module


def sample_inputs(module: Operation, seed: int = 0, size: int = 3) -> list[np.ndarray]:
    """Seeded random arguments for ``@main`` (else the only function), each symbolic dim of size ``size``."""
    rng = np.random.default_rng(seed)
    inputs = []
    for arg in func_body(pick_function(module)).args:
        assert isinstance(arg.type, TensorType)
        shape = tuple(d if isinstance(d, int) else size for d in arg.type.shape)
        inputs.append(random_array(arg.type.with_shape(shape), rng))
    return inputs
