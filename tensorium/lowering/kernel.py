"""Building one loop-level kernel for one graph op: arguments, hoisted sizes and constants, loop nests.

A kernel for op ``%r = graph.f %a, %b`` is ``func.func @name(%in0, %in1, %out0)``: one ``global`` buffer
per operand, then one per result, with the tensors' shapes (symbolic dims stay symbolic and are read
with ``loop.dim`` at run time). Lowerings are registered per graph op name with :func:`lowering`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from ..errors import LoweringError
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, make_func, set_results
from ..ir.evaluate import op_location
from ..ir.shapes import dims_equal
from ..ir.types import BufferType, Dim, FloatType, IntegerType, QuantizedType, ScalarType, TensorType, Type, index
from ..targets import Target, host_target
from .space import Config, Setting, default_config, kernel_space


def lowering_error(op: Operation, why: str) -> LoweringError:
    """A LoweringError naming ``op`` and its location."""
    return LoweringError(f"{op_location(op)}cannot lower '{op.name}' to loops: {why}")


Lowering = Callable[[Operation, "Kernel"], None]
LOWERINGS: dict[str, Lowering] = {}


def lowering(*names: str) -> Callable[[Lowering], Lowering]:
    """Register a function that fills a kernel for the graph ops ``names``."""

    def register(fn: Lowering) -> Lowering:
        for name in names:
            LOWERINGS[name] = fn
        return fn

    return register


TARGET_LOWERINGS: dict[tuple[str, str], Lowering] = {}
"""Lowerings one target kind uses instead of the general one: (kind, op name) -> lowering."""


def register_target_lowering(kind: str, name: str, fn: Lowering) -> None:
    """Lower graph op ``name`` with ``fn`` on targets of ``kind`` (``fn`` builds the general kernel for configs
    of another family, as the space then gives)."""
    TARGET_LOWERINGS[(kind, name)] = fn


def lowering_for(name: str, target: Target) -> Lowering | None:
    """The lowering of graph op ``name`` on ``target``: the target kind's own, else the general one (None: none)."""
    return TARGET_LOWERINGS.get((target.kind, name), LOWERINGS.get(name))


def buffer_of(t: Type, op: Operation) -> BufferType:
    """The global buffer type holding a tensor of type ``t``."""
    if not isinstance(t, TensorType):
        raise lowering_error(op, f"operand type {t} is not a tensor")
    element = t.element
    if isinstance(element, QuantizedType):
        element = IntegerType(8, element.signed)  # k-bit codes are held one per byte, as in the interpreter
    try:
        return BufferType(t.shape, element, "global")
    except ValueError as e:
        raise lowering_error(op, str(e)) from None


def scalar_const(value: Any, t: ScalarType) -> Value:
    """A ``loop.const`` of ``value`` as type ``t`` at the current insertion point."""
    if isinstance(t, FloatType):
        return loop.const(value=float(value), dtype=t)  # type: ignore[no-any-return]
    if isinstance(t, IntegerType) and t.is_bool:
        return loop.const(value=bool(value), dtype=t)  # type: ignore[no-any-return]
    return loop.const(value=int(value), dtype=t)  # type: ignore[no-any-return]


class Kernel:
    """A kernel under construction for ``op``: its function, buffer arguments and a prologue.

    Sizes and constants are built once in the prologue (the top of the body, before any loop) so that
    every loop nest can use them. ``target`` is the machine it is built for and ``config`` the point of
    its family's search space (:mod:`tensorium.lowering.space`) the lowering builds, None for kernels
    without knobs.
    """

    def __init__(self, op: Operation, name: str, target: Target | None = None, config: Config | None = None):
        self.op = op
        self.target = target if target is not None else host_target()
        self.config = config
        ins = [buffer_of(v.type, op) for v in op.operands]
        outs = [buffer_of(r.type, op) for r in op.results]
        names = [f"in{i}" for i in range(len(ins))] + [f"out{i}" for i in range(len(outs))]
        self.func = make_func(name, ins + outs, arg_names=names, loc=op.loc)
        self.body: Block = func_body(self.func)
        self.inputs: list[Value] = list(self.body.args[: len(ins)])
        self.outputs: list[Value] = list(self.body.args[len(ins) :])
        self._prologue: list[Operation] = []
        self._memo: dict[Any, Value] = {}
        self.store_epilogue = False
        """Whether a fused epilogue will be inlined at every store to the output (set by the fused lowering
        while its anchor is lowered): a lowering that unrolls its stores then keeps them in one loop, so that
        the epilogue's code is not copied once per unrolled store."""

    @contextmanager
    def prologue(self) -> Iterator[None]:
        """Build at the end of the prologue.

        The prologue's ops are the first ops of the body; they are remembered as ops rather than counted,
        so that erasing some of them (as fused lowerings do with their placeholders) keeps the end right.
        """
        block = self.body
        size = sum(1 for op in self._prologue if op.parent is block)
        before = block.ops[size] if size < len(block.ops) else None
        with InsertionPoint(block, before):
            yield
        end = block.index_of(before) if before is not None else len(block.ops)
        self._prologue = block.ops[:end]

    def _hoisted(self, key: Any, build: Callable[[], Value]) -> Value:
        found = self._memo.get(key)
        defined_by = found.defining_op() if found is not None else None
        if found is None or (defined_by is not None and defined_by.parent is None):  # erased since
            with self.prologue():
                found = build()
            self._memo[key] = found
        return found

    def const(self, value: Any, t: ScalarType) -> Value:
        """A constant of type ``t`` in the prologue (built once)."""
        return self._hoisted(("const", type(value), value, t), lambda: scalar_const(value, t))

    def index(self, value: int) -> Value:
        """An index constant in the prologue."""
        return self.const(int(value), index)

    def check_not_empty(self, sizes: list[Value], what: str) -> None:
        """A ``loop.check`` in the prologue that each run-time size of ``sizes`` is not 0 (constant sizes need
        none), failing the kernel with "'<graph op>' <what>" at the graph op's location: for a lowering that
        starts from a first element that an empty dimension does not have."""
        for size in sizes:
            if loop.const_value(size) is not None:
                continue
            with self.prologue():
                nonempty = loop.cmp(size, self.index(0), predicate="gt")
                loop.check(nonempty, message=f"'{self.op.name}' {what}", loc=self.op.loc)

    def size(self, buffer: Value, axis: int) -> Value:
        """The size of dimension ``axis`` of a buffer argument: a constant when static, else ``loop.dim``."""
        t = buffer.type
        assert isinstance(t, BufferType)
        d = t.shape[axis]
        if isinstance(d, int):
            return self.index(d)
        return self._hoisted(("dim", id(buffer), axis), lambda: loop.dim(buffer, axis=axis))

    def sizes(self, buffer: Value) -> list[Value]:
        """The sizes of every dimension of a buffer argument."""
        t = buffer.type
        assert isinstance(t, BufferType)
        return [self.size(buffer, a) for a in range(t.rank)]

    def last(self, buffer: Value, axis: int) -> Value:
        """``size - 1`` of a dimension, in the prologue."""
        size = self.size(buffer, axis)
        return self._hoisted(("last", id(buffer), axis), lambda: loop.sub(size, self.index(1)))

    def product(self, values: Sequence[Value]) -> Value:
        """The product of index values, in the prologue (1 for none)."""
        out = self.index(1)
        for v in values:
            out = self._hoisted(("mul", id(out), id(v)), lambda a=out, b=v: loop.mul(a, b))  # type: ignore[misc]
        return out

    @contextmanager
    def loops(self, bounds: Sequence[Value], names: Sequence[str]) -> Iterator[list[Value]]:
        """A serial loop nest ``for names[0] in [0, bounds[0]): ...``; yields the induction variables."""
        with ExitStack() as stack:
            ivs: list[Value] = [
                stack.enter_context(loop.for_(self.index(0), b, self.index(1), name=n)) for b, n in zip(bounds, names)
            ]
            yield ivs

    def broadcast_indices(self, buffer: Value, rank: int, shape: Sequence[Dim], ivs: Sequence[Value]) -> list[Value]:
        """Indices into the first ``rank`` dims of ``buffer`` for position ``ivs`` of ``shape`` (numpy broadcasting).

        Dims that are statically 1 read index 0, dims provably equal to the result's read the position,
        and any other (a symbolic dim that may be 1 at run time) reads ``min(i, size - 1)``, right for both.
        """
        t = buffer.type
        assert isinstance(t, BufferType)
        offset = len(shape) - rank
        out: list[Value] = []
        for a in range(rank):
            d, iv = t.shape[a], ivs[a + offset]
            if d == 1:
                out.append(self.index(0))
            elif dims_equal(d, shape[a + offset]):
                out.append(iv)
            else:
                out.append(loop.min(iv, self.last(buffer, a)))
        return out

    def knob(self, family: str, name: str, default: Setting) -> Setting:
        """Knob ``name`` of the kernel's config when it is a ``family`` config, else ``default`` (the value a
        lowering uses for a nested product of another family, or when built without a config)."""
        if self.config is None or self.config.family != family:
            return default
        return self.config[name]

    def finish(self) -> Operation:
        """End the kernel with an empty ``func.return`` and give its function."""
        set_results(self.func, [])
        return self.func


def linearize(indices: Sequence[Value], sizes: Sequence[Value], zero: Value) -> Value:
    """The row-major position of ``indices`` in a nest of ``sizes`` (``zero`` for none)."""
    linear = indices[0] if indices else zero
    for i, size in zip(indices[1:], sizes[1:]):
        linear = loop.add(loop.mul(linear, size), i)
    return linear


def delinearize(linear: Value, sizes: Sequence[Value]) -> list[Value]:
    """The row-major indices of position ``linear`` in a nest of ``sizes``."""
    out: list[Value] = []
    for size in reversed(sizes[1:]):
        out.append(loop.rem(linear, size))
        linear = loop.div(linear, size)
    if sizes:
        out.append(linear)
    return out[::-1]


def element_of(value: Value) -> ScalarType:
    """The element type of a buffer value."""
    t = value.type
    assert isinstance(t, BufferType)
    return t.element


def shape_of(value: Value) -> tuple[Dim, ...]:
    """The shape of a buffer value."""
    t = value.type
    assert isinstance(t, BufferType)
    return t.shape


def compute_type(t: ScalarType) -> ScalarType:
    """The type references compute floats in: at least f32 (f16 and bf16 widen, f64 stays)."""
    if isinstance(t, FloatType) and t.name in ("f16", "bf16"):
        return FloatType("f32")
    return t


def convert(value: Value, t: ScalarType) -> Value:
    """``value`` cast to ``t`` (no op when it already has that type)."""
    if value.type == t:
        return value
    return loop.cast(value, dtype=t)  # type: ignore[no-any-return]


def lower_op(
    op: Operation, name: str | None = None, target: Target | None = None, config: Config | None = None
) -> Operation:
    """The loop-level kernel ``@name(inputs..., outputs...)`` computing graph op ``op`` for ``target``
    (default: this machine) at point ``config`` of its search space (default: the target's rule).

    ``name`` defaults to the op's short name. The kernel's ``config`` attribute records the point. Raises
    LoweringError for ops without a lowering, ScheduleError for a config that is not a legal point.
    """
    target = target if target is not None else host_target()
    fn = lowering_for(op.name, target)
    if fn is None:
        raise lowering_error(op, "no loop lowering is registered for this op")
    if config is None:
        config = default_config(op, target)
    else:
        space = kernel_space(op, target)
        if space is None:
            raise lowering_error(op, f"the kernel has no search space, but config {config} was given")
        config = space.check(config)
    kernel = Kernel(op, name or op.name.split(".", 1)[1], target, config)
    if config is not None:
        kernel.func.attributes["config"] = str(config)
    with InsertionPoint(kernel.body):
        fn(op, kernel)
    return kernel.finish()
