"""Tensorium: an MLIR-style tensor compiler written in Python."""

from __future__ import annotations

from . import ir
from .errors import InterpreterError, Location, ParseError, PassError, TensoriumError, VerifyError
from .ir import parse_module, print_module, verify

__version__ = "0.1.0"

__all__ = [
    "InterpreterError",
    "Location",
    "ParseError",
    "PassError",
    "TensoriumError",
    "VerifyError",
    "__version__",
    "ir",
    "parse_module",
    "print_module",
    "verify",
]
