"""Tensorium: an MLIR-style tensor compiler written in Python.

The package root is the public API: ``compile``, ``load``, the tracer (``Tensor``, ``trace``, ``nn``),
the IR entry points and ``Target``. docs/architecture.md draws the layers underneath.
"""

from __future__ import annotations

from . import ir, targets
from .api import CompiledModel, compile, load
from .errors import InterpreterError, Location, ParseError, PassError, TensoriumError, VerifyError
from .frontend.tracer import Tensor, nn, trace
from .interop import export_mlir, import_mlir
from .ir import parse_module, print_module, verify
from .ir.dialects.quant.config import QuantConfig
from .targets import Target
from .version import __version__

__all__ = [
    "CompiledModel",
    "InterpreterError",
    "Location",
    "ParseError",
    "PassError",
    "QuantConfig",
    "Target",
    "Tensor",
    "TensoriumError",
    "VerifyError",
    "__version__",
    "compile",
    "export_mlir",
    "import_mlir",
    "ir",
    "load",
    "nn",
    "parse_module",
    "print_module",
    "targets",
    "trace",
    "verify",
]
