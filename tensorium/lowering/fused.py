"""Lowering a ``graph.fused`` group to one kernel by inlining its elementwise ops into its anchor's loops.

A group has at most one *anchor* (an op that is not elementwise; without one, the op giving the result
plays its part). The anchor is lowered by its own lowering, with *placeholder* buffers standing for the
values the group computes around it; then the loop IR is rewritten:

- a load from the placeholder of a producer value ``v`` at indices ``i`` becomes the elementwise
  expression of ``v`` evaluated at ``i``: loads of the kernel's inputs (with broadcasting) combined by
  each op's scalar formula (:data:`tensorium.lowering.elementwise.SCALAR`);
- a store of ``x`` into the placeholder of the anchor's result at ``i`` becomes a store into the kernel's
  output of the epilogue (the ops after the anchor) evaluated at ``i`` with the anchor's element being
  ``x``. The epilogue's ops keep the anchor's elements in order (the fuse pass allows only elementwise
  ops and reshapes of size-1 dims there), so every element is computed once, in registers.

When the anchor's lowering also reads its own result (a softmax normalizing what it stored, say), its
placeholder becomes a real buffer instead, and the epilogue runs as a second loop nest over it, still
inside the one kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.graph.shape import is_unit_reshape
from ..ir.shapes import dims_equal
from ..ir.types import BufferType, Sym, TensorType
from .elementwise import SCALAR
from .kernel import Kernel, lowering, lowering_error, lowering_for

Seed = tuple[Value, Value]
"""A region value and the scalar that stands for its element at the indices being evaluated."""


def _tensor(value: Value) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def _unit_map(source: TensorType, target: TensorType, indices: Sequence[Value], k: Kernel) -> list[Value]:
    """Indices into ``target`` of the element at ``indices`` of ``source``, two types whose dims other
    than 1 are the same in order (dims of 1 read index 0)."""
    kept = [i for i, d in zip(indices, source.shape) if d != 1]
    it = iter(kept)
    return [k.index(0) if d == 1 else next(it) for d in target.shape]


class FusedKernel:
    """Emits the scalar expressions of one ``graph.fused`` region inside the kernel ``k``."""

    def __init__(self, op: Operation, k: Kernel):
        self.op = op
        self.k = k
        block = op.regions[0].block
        self.body = [o for o in block.ops if not o.has_trait("terminator")]
        self.result: Value = block.ops[-1].operands[0]
        self.buffers: dict[Value, Value] = dict(zip(block.args, k.inputs))
        anchors = [o for o in self.body if not o.has_trait("elementwise") and not is_unit_reshape(o)]
        if len(anchors) > 1 or len(op.results) != 1:
            raise lowering_error(op, "a fused group needs one result and at most one op that is not elementwise")
        result_op = self.result.defining_op()
        if result_op is None:
            raise lowering_error(op, "a fused group must compute its result")
        self.anchor = anchors[0] if anchors else result_op

    # --- expressions -------------------------------------------------------------------------------
    def emit(self, value: Value, indices: list[Value], seed: Seed | None, memo: dict[Any, Value]) -> Value:
        """The element of region value ``value`` at ``indices`` as a loop scalar."""
        if seed is not None and value is seed[0]:
            return seed[1]
        buffer = self.buffers.get(value)
        if buffer is not None:
            return loop.load(buffer, indices)  # type: ignore[no-any-return]
        key = (id(value), tuple(id(i) for i in indices))
        found = memo.get(key)
        if found is not None:
            return found
        op = value.defining_op()
        if op is None or op is self.anchor:
            raise lowering_error(self.op, f"the fused group reads '{op.name if op else value}' where it cannot")
        shape = _tensor(value).shape
        if is_unit_reshape(op):
            source = op.operands[0]
            out = self.emit(source, _unit_map(_tensor(value), _tensor(source), indices, self.k), seed, memo)
        else:
            xs = [self.emit(u, self._broadcast(u, shape, indices), seed, memo) for u in op.operands]
            operand_type = _tensor(op.operands[-1]).element
            out = SCALAR[op.name](self.k, xs, op.opdef.attr_kwargs(op), operand_type)
        memo[key] = out
        return out

    def _broadcast(self, value: Value, shape: tuple[Any, ...], indices: list[Value]) -> list[Value]:
        """Indices into ``value`` for position ``indices`` of ``shape`` (numpy broadcasting, dims known equal or 1)."""
        own = _tensor(value).shape
        offset = len(shape) - len(own)
        out: list[Value] = []
        for a, d in enumerate(own):
            if d == 1:
                out.append(self.k.index(0))
            elif dims_equal(d, shape[a + offset]):
                out.append(indices[a + offset])
            else:
                raise lowering_error(self.op, f"cannot broadcast {value.type} to {shape} inside a fused group")
        return out

    # --- placeholders ------------------------------------------------------------------------------
    def placeholder(self, value: Value) -> tuple[Value, list[Value]]:
        """A buffer standing for region value ``value`` while the anchor is lowered, and its sizes."""
        t = _tensor(value)
        sizes = [self._size(d) for d in t.shape]
        dynamic = [s for s, d in zip(sizes, t.shape) if isinstance(d, Sym)]
        with self.k.prologue():
            buffer = loop.alloc(*dynamic, type=BufferType(t.shape, t.element, "global"))
        return buffer, sizes

    def _size(self, d: Any) -> Value:
        """An index value for dim ``d``: a constant, or the size of an input or output with that named dim."""
        if isinstance(d, int):
            return self.k.index(d)
        for buffer in [*self.k.inputs, *self.k.outputs]:
            shape = buffer.type.shape  # type: ignore[attr-defined]
            for axis, e in enumerate(shape):
                if isinstance(e, Sym) and e.name is not None and e == d:
                    return self.k.size(buffer, axis)
        raise lowering_error(self.op, f"no input of the fused group gives the size of dim {d}")

    # --- the kernel --------------------------------------------------------------------------------
    def lower(self) -> None:
        """Lower the anchor with placeholders, then inline producers at loads and the epilogue at stores."""
        k = self.k
        real_inputs, real_output = list(k.inputs), k.outputs[0]
        producers: list[tuple[Value, Value, list[Value]]] = []
        operands = []
        for v in self.anchor.operands:
            if v in self.buffers:
                operands.append(self.buffers[v])
            else:
                buffer, sizes = self.placeholder(v)
                producers.append((buffer, v, sizes))
                operands.append(buffer)
        epilogue = self.anchor.results[0] is not self.result
        if epilogue:
            anchor_out, anchor_sizes = self.placeholder(self.anchor.results[0])
        else:
            anchor_out, anchor_sizes = real_output, []
        k.inputs, k.outputs, k.store_epilogue = operands, [anchor_out], epilogue
        try:
            lower = lowering_for(self.anchor.name, k.target)
            if lower is None:
                raise lowering_error(self.anchor, "no loop lowering is registered for this op")
            lower(self.anchor, k)
        finally:
            k.inputs, k.outputs, k.store_epilogue = real_inputs, [real_output], False
        for buffer, value, sizes in producers:
            self._replace_dims(buffer, sizes)
            for use in list(buffer.uses):
                load = use.owner
                if load.name != "loop.load":
                    why = f"the lowering of '{self.anchor.name}' uses an input as '{load.name}'"
                    raise lowering_error(self.op, why)
                self._inline_load(load, value)
            _erase(buffer)
        if epilogue:
            self._replace_dims(anchor_out, anchor_sizes)
            if any(use.owner.name == "loop.load" for use in anchor_out.uses):
                self.buffers[self.anchor.results[0]] = anchor_out  # materialized: the epilogue reads it back
                self._epilogue_nest(real_output)
            else:
                for use in list(anchor_out.uses):
                    self._inline_store(use.owner, real_output)
                _erase(anchor_out)

    def _replace_dims(self, buffer: Value, sizes: list[Value]) -> None:
        for use in list(buffer.uses):
            if use.owner.name == "loop.dim":
                axis = int(use.owner.attr("axis")) % len(sizes)
                use.owner.results[0].replace_all_uses_with(sizes[axis])
                use.owner.erase()

    def _inline_load(self, load: Operation, value: Value) -> None:
        with InsertionPoint.before_op(load):
            scalar = self.emit(value, list(load.operands[1:]), None, {})
        load.results[0].replace_all_uses_with(scalar)
        load.erase()

    def _inline_store(self, store: Operation, output: Value) -> None:
        if store.name != "loop.store":
            raise lowering_error(self.op, f"the lowering of '{self.anchor.name}' uses its result as '{store.name}'")
        value, indices = store.operands[0], list(store.operands[2:])
        with InsertionPoint.before_op(store):
            out_indices = _unit_map(_tensor(self.anchor.results[0]), _tensor(self.result), indices, self.k)
            scalar = self.emit(self.result, out_indices, (self.anchor.results[0], value), {})
            loop.store(scalar, output, out_indices)
        store.erase()

    def _epilogue_nest(self, output: Value) -> None:
        """``output[i] = epilogue(i)`` over the output: the first loop parallel, the last on vector lanes."""
        shape = _tensor(self.result).shape
        with ExitStack() as stack:
            ivs: list[Value] = []
            for axis in range(len(shape)):
                kind = "vectorize" if axis == len(shape) - 1 else "parallel" if axis == 0 else "serial"
                bounds = (self.k.index(0), self.k.size(output, axis), self.k.index(1))
                ivs.append(stack.enter_context(loop.for_(*bounds, kind=kind, name=f"e{axis}")))
            loop.store(self.emit(self.result, ivs, None, {}), output, ivs)


def _erase(buffer: Value) -> None:
    alloc = buffer.defining_op()
    assert alloc is not None
    if buffer.uses:
        raise AssertionError(f"a placeholder buffer is still used by {[u.owner.name for u in buffer.uses]}")
    alloc.erase()


@lowering("graph.fused")
def lower_fused(op: Operation, k: Kernel) -> None:
    """One kernel for the whole group (see the module docstring)."""
    FusedKernel(op, k).lower()
