"""Tensorium's benchmarks: fixed float32 workloads timed against numpy, PyTorch eager, torch.compile and onnxruntime.

``tensorium bench`` (:mod:`tensorium.cli.bench`; ``python -m benchmarks`` in a checkout is the same program)
runs them; docs/benchmarks.md explains the method. :mod:`~tensorium.bench.workloads` builds the workloads,
:mod:`~tensorium.bench.runners` the runners compared, :mod:`~tensorium.bench.harness` times them and writes
the report. Those submodules need torch and are imported when used (:func:`load_benchmarks`), so this
package itself stays light.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import TensoriumError

__all__ = ["RUNNERS", "WORKLOADS", "BenchError", "load_benchmarks"]

WORKLOADS = ("gemm", "gemv", "mlp", "resnet_block", "encoder")
RUNNERS = ("numpy", "eager", "compile", "onnxruntime", "tensorium")


class BenchError(TensoriumError):
    """A benchmark request that cannot run: torch missing, an unknown name."""


def load_benchmarks() -> ModuleType:
    """This package with its ``harness``, ``runners`` and ``workloads`` imported; BenchError when torch is missing."""
    try:
        importlib.import_module(f"{__name__}.harness")
    except ModuleNotFoundError as e:
        if e.name in ("torch", "onnx"):
            raise BenchError(f"tensorium bench needs {e.name}: pip install 'tensorium[torch,onnx]'") from None
        raise
    return importlib.import_module(__name__)
