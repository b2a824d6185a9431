"""Tensorium: an MLIR-style tensor compiler written in Python."""

from __future__ import annotations

__version__ = "0.1.0"  # set before the imports below: the artifact writer and the cache key record it

from . import ir, nn, targets
from .api import CompiledModel, compile, load
from .errors import InterpreterError, Location, ParseError, PassError, TensoriumError, VerifyError
from .ir import parse_module, print_module, verify
from .targets import Target
from .tensor import Tensor, trace

__all__ = [
    "CompiledModel",
    "InterpreterError",
    "Location",
    "ParseError",
    "PassError",
    "Target",
    "Tensor",
    "TensoriumError",
    "VerifyError",
    "__version__",
    "compile",
    "ir",
    "load",
    "nn",
    "parse_module",
    "print_module",
    "targets",
    "trace",
    "verify",
]
