"""Kernels with the same loop IR compiled once per module: later ones run the first one's code.

Models repeat themselves: each transformer layer lowers to the same kernels over other weights (weights are
arguments, not constants), so a two-layer GPT-2 has each of its matrix products twice. A kernel's structural
key (:func:`structural_key`) is the hash of its loop IR as printed, without its name (source locations are
not printed, large constants are hashed); the emitter turns a kernel whose key it has seen before into an
:class:`Alias` of the first one instead of emitting it again, which saves its emission, optimization and code
generation. Only the messages of the run-time checks differ (they name each kernel's own source ops): the
alias gets its own, and a small wrapper function under its own symbol maps the shared code's status to them
(see :func:`~tensorium.backends.llvm.jit.compile_module`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from llvmlite import ir

from ...ir.core import Operation
from ...ir.dialects.builtin import func_name
from ...ir.evaluate import op_location
from ...ir.printer import print_op
from .emitter import LLVMEmitter, kernel_info, kernel_symbol

__all__ = ["Alias", "SharingEmitter", "structural_key"]


def structural_key(func: Operation) -> str:
    """The hex sha256 of kernel ``func``'s loop IR without its name: equal for kernels that emit the same
    LLVM IR up to their symbol and the messages of their checks."""
    head, _, body = print_op(func, digest=True).partition("\n")
    head = head.replace(f"@{func_name(func)}(", "@(", 1)
    return hashlib.sha256(f"{head}\n{body}".encode()).hexdigest()


@dataclass(frozen=True)
class Alias:
    """Kernel ``name`` (symbol ``symbol``) runs the code of the kernel emitted as ``of``; its run-time checks
    are the errors numbered from ``first_error + 1``, where ``of``'s were numbered from ``of_first_error + 1``."""

    name: str
    symbol: str
    of: str
    first_error: int
    of_first_error: int


@dataclass
class _Emitted:
    """A kernel emitted for a structure: its symbol, where its errors start, and each check's op (its index in
    the kernel's walk) with its message after the op's location."""

    symbol: str
    first_error: int
    checks: list[tuple[int, str]] = field(default_factory=list)


class SharingEmitter(LLVMEmitter):
    """An :class:`LLVMEmitter` that emits each kernel structure once (see the module docstring); ``aliases``
    lists the kernels it did not emit, by name. A kernel that is an alias has no LLVM function of its own in
    :attr:`module`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases: dict[str, Alias] = {}
        self._emitted: dict[str, _Emitted] = {}
        self._walk: dict[int, int] = {}
        self._current: _Emitted | None = None

    def emit_function(self, func: Operation) -> None:
        """Emit ``func``, or record it as an alias of an emitted kernel with the same structure."""
        key = structural_key(func)
        first = self._emitted.get(key)
        if first is not None:
            self._alias(func, first)
            return
        self._walk = {id(op): i for i, op in enumerate(func.walk())}
        self._current = _Emitted("", len(self.errors))
        try:
            super().emit_function(func)
        finally:
            current, self._current = self._current, None
        info = self.kernels.get(func_name(func))
        if info is not None and current is not None and all(i >= 0 for i, _ in current.checks):
            current.symbol = info.symbol
            self._emitted[key] = current

    def check(self, op: Operation, failed: ir.Value, message: str, named: bool = True) -> None:
        """The base class's check, remembering which op of the kernel it belongs to."""
        before = len(self.errors)
        super().check(op, failed, message, named)
        if self._current is not None and len(self.errors) > before:
            suffix = self.errors[-1][len(op_location(op)) :]
            self._current.checks.append((self._walk.get(id(op), -1), suffix))

    def _alias(self, func: Operation, first: _Emitted) -> None:
        name = func_name(func)
        symbol = kernel_symbol(name)
        ops = list(func.walk())
        start = len(self.errors)
        self.errors += [f"{op_location(ops[i])}{suffix}" for i, suffix in first.checks]
        self.kernels[name] = kernel_info(func, symbol)
        self.aliases[name] = Alias(name, symbol, first.symbol, start, first.first_error)
