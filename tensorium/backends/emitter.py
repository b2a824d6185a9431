"""The target-independent half of every loop-IR emitter: walking kernels, values, op and loop-kind dispatch.

A backend is a subclass that fills three tables and writes the methods they name:

- ``OPS``: op name -> method name; the method takes the op and returns the emitted value of its result
  (or None). An op missing from the table is a CompileError naming it and the backend.
- ``LOOP_KINDS``: ``loop.for`` kind -> method name (``serial``, ``unroll``, ``vectorize``, ``parallel``,
  ``gpu_block``, ``gpu_thread``); a kind the backend does not run is a CompileError naming the op.
- ``NATIVE``: the decomposable ops (:data:`tensorium.lowering.decompose.DECOMPOSABLE`) the target has
  natively; :func:`tensorium.lowering.decompose.decompose` rewrites the others into basic loop ops first.

The emitted values are whatever the backend builds (llvmlite values, strings of C or WGSL): the base only
keeps the environment from loop-IR values to them. Kernel signatures (the ABI), types, memory and address
spaces are the subclass's: it writes ``emit_function``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import CompileError
from ..ir.core import Block, Operation, Value
from ..ir.dialects.builtin import functions
from ..ir.evaluate import op_location

TERMINATORS = frozenset({"loop.yield", "func.return"})
"""Ops that end a block; emitters handle them through the op that owns the block."""


def op_error(op: Operation, message: str) -> CompileError:
    """A CompileError about ``op``: ``file:line:col: 'loop.x' <message>``."""
    return CompileError(f"{op_location(op)}'{op.name}' {message}")


class KernelEmitter:
    """Walks loop-level kernels and dispatches each op and loop kind through the subclass's tables.

    State lives on the instance (``env`` maps ``id(value)`` to the emitted value), so one emitter emits one
    module at a time and several emitters may run at once.
    """

    NAME: ClassVar[str] = "this"
    """The backend's name in error messages (``'loop.erf' is not supported by the LLVM backend``)."""
    OPS: ClassVar[dict[str, str]] = {
        "loop.for": "emit_for",
        "loop.prefetch": "emit_prefetch",
        "loop.check": "emit_check",
    }
    LOOP_KINDS: ClassVar[dict[str, str]] = {}
    NATIVE: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.env: dict[int, Any] = {}

    # values --------------------------------------------------------------------------------------
    def bind(self, v: Value, emitted: Any) -> None:
        """Record ``emitted`` as what the loop-IR value ``v`` became."""
        self.env[id(v)] = emitted

    def value(self, v: Value) -> Any:
        """What the loop-IR value ``v`` was emitted as."""
        return self.env[id(v)]

    def values(self, values: Sequence[Value]) -> list[Any]:
        """What each of ``values`` was emitted as."""
        return [self.value(v) for v in values]

    def operands(self, op: Operation) -> list[Any]:
        """What the operands of ``op`` were emitted as."""
        return self.values(op.operands)

    # walking -------------------------------------------------------------------------------------
    def emit_module(self, module: Operation) -> Any:
        """Emit every function of ``module`` as a kernel; returns what the backend built (``self.output``)."""
        for func in functions(module):
            self.emit_function(func)
        return self.output()

    def output(self) -> Any:
        """The emitted module (the subclass says what that is)."""
        raise NotImplementedError

    def emit_function(self, func: Operation) -> None:
        """Emit one kernel: the backend's ABI, then ``emit_block`` of its body."""
        raise NotImplementedError

    def emit_block(self, block: Block) -> None:
        """Emit the ops of ``block`` in order, its terminator excepted."""
        for op in block.ops:
            if op.name not in TERMINATORS:
                self.emit_op(op)

    def emit_op(self, op: Operation) -> None:
        """Emit ``op`` through the method ``OPS`` names and bind its result."""
        method = self.OPS.get(op.name)
        if method is None:
            raise op_error(op, f"is not supported by the {self.NAME} backend")
        result = getattr(self, method)(op)
        if result is not None:
            self.bind(op.results[0], result)

    def emit_prefetch(self, op: Operation) -> None:
        """A ``loop.prefetch``: a hint, which a backend without cache prefetches leaves out."""

    def emit_check(self, op: Operation) -> None:
        """A ``loop.check``, which a backend without run-time failures (no status to return, no trap) leaves out;
        the LLVM, NVPTX and WGSL emitters override it."""

    def emit_for(self, op: Operation) -> None:
        """A ``loop.for``: the method ``LOOP_KINDS`` names for its kind."""
        kind = op.attr("kind", "serial")
        method = self.LOOP_KINDS.get(kind)
        if method is None:
            raise self.unsupported_kind(op, kind)
        getattr(self, method)(op)

    def unsupported_kind(self, op: Operation, kind: str) -> CompileError:
        """The error for a loop of a ``kind`` this backend does not run."""
        kinds = ", ".join(self.LOOP_KINDS)
        return op_error(op, f'of kind "{kind}" is not supported by the {self.NAME} backend, which runs {kinds} loops')
