"""fuse-siblings: horizontal fusion of matmuls that read the same input with constant weights.

Sibling matmuls ``x @ W_g`` (``g`` = 1..G) with one left operand ``x``, the same flags and constant weights
of one shape become one batched matmul over the stacked weight, whose results are contiguous slices:

    y = matmul(x, stack(W_1, ..., W_G))        # [G, ..., M, N]: x broadcast over the stack
    r_g = reshape(slice(y, [g, g + 1]))        # views on the CPU, no copies

A transposed weight (``transpose_b``, as torch Linear stores it) is transposed when stacked, at compile
time. When every sibling's only use adds a constant bias of its own, the biases are stacked too and added
once to ``y``, so that the fuse pass keeps the bias as the GEMM's epilogue. The q, k and v projections of
an attention layer thus run as one GEMM over three times the columns.

With symbolic dims (a dynamic batch or sequence: only the input's batch and row dims can be symbolic, the
weights are constants) a slice of ``y`` starts at a symbolic element offset, which the launch plan cannot make a view
(view offsets are static), so each slice would cost a copy kernel. There the weights are concatenated along
their columns instead, and one split hands out the parts (the layout of a fused qkv projection like GPT-2's):

    y = matmul(x, concat(W_1, ..., W_G, axis=-1))   # [..., M, G * N]
    r_1, ..., r_G = split(y, axis=-1)              # one kernel for all G parts

Each part keeps the symbolic dims of the matmul it replaces (same names, same types).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, functions
from ..ir.dialects.graph.canonical import constant_array
from ..ir.dialects.graph.shape import static_reshape_attrs
from ..ir.rewrite import PatternRewriter
from ..ir.types import ScalarType, TensorType
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class FuseSiblings(Pass):
    """Stack sibling matmuls with constant weights into one batched matmul (see the module docstring)."""

    name: ClassVar[str] = "fuse-siblings"
    min_siblings: int = 2

    def run(self, module: Operation) -> None:
        rewriter = PatternRewriter()
        for func in functions(module):
            groups: dict[tuple[object, ...], list[Operation]] = {}
            for op in func_body(func).ops:
                key = _sibling_key(op)
                if key is not None:
                    groups.setdefault(key, []).append(op)
            for siblings in groups.values():
                if len(siblings) >= max(2, self.min_siblings):
                    _stack(siblings, rewriter)


def _sibling_key(op: Operation) -> tuple[object, ...] | None:
    """What siblings share (left operand, flags, weight type), or None for a matmul that cannot be stacked."""
    if op.name != "graph.matmul":
        return None
    lhs, rhs = op.operands
    if constant_array(rhs) is None or not isinstance(rhs.type, TensorType) or rhs.type.rank != 2:
        return None
    if not isinstance(lhs.type, TensorType) or lhs.type.rank < 2 or not isinstance(op.result.type, TensorType):
        return None
    return (id(lhs), bool(op.attr("transpose_a", False)), bool(op.attr("transpose_b", False)), rhs.type)


def _bias(op: Operation) -> tuple[Operation, np.ndarray] | None:
    """The add of a constant that is ``op``'s only use, with the bias broadcast to [N], or None."""
    users = op.result.users
    if len(op.result.uses) != 1 or users[0].name != "graph.add":
        return None
    add = users[0]
    other = add.operands[1] if add.operands[0] is op.result else add.operands[0]
    array = constant_array(other)
    result = op.result.type
    if array is None or add.result.type != result or not isinstance(result, TensorType):
        return None
    n = result.shape[-1]
    if not isinstance(n, int) or (array.ndim > 1 and any(d != 1 for d in array.shape[:-1])):
        return None
    if array.shape[-1:] not in ((n,), (1,)):
        return None
    return add, np.broadcast_to(array.reshape(-1), (n,))


def _stack(siblings: list[Operation], rewriter: PatternRewriter) -> None:
    """Replace ``siblings`` (and their bias adds) with one matmul over their stacked weights."""
    out_type = siblings[0].result.type
    assert isinstance(out_type, TensorType)
    biases = [_bias(op) for op in siblings]
    bias_adds = [b for b in biases if b is not None]
    with_bias = len(bias_adds) == len(siblings)
    replaced: list[Operation] = [add for add, _ in bias_adds] if with_bias else siblings
    bias_arrays = [array for _, array in bias_adds] if with_bias else None
    if out_type.is_static:
        parts = _stacked_on_a_new_axis(siblings, bias_arrays, rewriter)
    else:
        parts = _stacked_on_the_columns(siblings, bias_arrays, rewriter)
    unused = [v.defining_op() for old in replaced for v in old.operands if v.defining_op() is not None]
    unused += [op.operands[1].defining_op() for op in siblings]
    for op, old, value in zip(siblings, replaced, parts):
        rewriter.replace_op(old, [value])
        if old is not op:
            rewriter.erase_op(op)
    for constant in dict.fromkeys(unused):
        if constant is not None and constant.name == "graph.constant" and not constant.results[0].uses:
            rewriter.erase_op(constant)


def _weights(siblings: list[Operation]) -> list[np.ndarray]:
    """The siblings' weights as ``[K, N]`` arrays (a ``transpose_b`` weight transposed)."""
    transpose_b = bool(siblings[0].attr("transpose_b", False))
    weights = [constant_array(op.operands[1]) for op in siblings]
    return [w.T if transpose_b else w for w in weights if w is not None]


def _constant(rewriter: PatternRewriter, before: Operation, array: np.ndarray, element: ScalarType) -> Value:
    attr = DenseAttr(np.ascontiguousarray(array), TensorType(array.shape, element))
    return rewriter.create_before(before, "graph.constant", [], {"value": attr}).result


def _stacked_on_a_new_axis(
    siblings: list[Operation], biases: list[np.ndarray] | None, rewriter: PatternRewriter
) -> list[Value]:
    """Static shapes: ``y = x @ stack(W_g)`` of shape ``[G, ..., M, N]``; part ``g`` is ``y[g]`` (a view)."""
    first = siblings[0]
    lhs = first.operands[0]
    x_type, out_type = lhs.type, first.result.type
    assert isinstance(x_type, TensorType) and isinstance(out_type, TensorType)
    stacked = np.stack(_weights(siblings))
    batch = (1,) * (x_type.rank - 2)
    weight = _constant(rewriter, first, stacked.reshape((len(siblings), *batch, *stacked.shape[1:])), out_type.element)
    transpose_a = bool(first.attr("transpose_a", False))
    y = rewriter.create_before(first, "graph.matmul", [lhs, weight], {"transpose_a": transpose_a}).result
    if biases is not None:
        stacked_bias = np.stack(biases)
        shape = (len(siblings), *(1,) * (out_type.rank - 1), stacked_bias.shape[-1])
        bias = _constant(rewriter, first, stacked_bias.reshape(shape), out_type.element)
        y = rewriter.create_before(first, "graph.add", [y, bias]).result
    parts = []
    for g in range(len(siblings)):
        part = rewriter.create_before(first, "graph.slice", [y], {"starts": (g,), "ends": (g + 1,), "axes": (0,)})
        attrs = static_reshape_attrs(out_type.static_shape)
        parts.append(rewriter.create_before(first, "graph.reshape", [part.result], attrs))
    return [p.result for p in parts]


def _stacked_on_the_columns(
    siblings: list[Operation], biases: list[np.ndarray] | None, rewriter: PatternRewriter
) -> list[Value]:
    """Symbolic dims: ``y = x @ concat(W_g)`` of shape ``[..., M, G * N]``, cut into the parts by one split."""
    first = siblings[0]
    lhs = first.operands[0]
    out_type = first.result.type
    assert isinstance(out_type, TensorType)
    weights = _weights(siblings)
    weight = _constant(rewriter, first, np.concatenate(weights, axis=1), out_type.element)
    transpose_a = bool(first.attr("transpose_a", False))
    y = rewriter.create_before(first, "graph.matmul", [lhs, weight], {"transpose_a": transpose_a}).result
    if biases is not None:
        bias = _constant(rewriter, first, np.concatenate(biases), out_type.element)
        y = rewriter.create_before(first, "graph.add", [y, bias]).result
    sizes = tuple(w.shape[1] for w in weights)
    split = rewriter.create_before(first, "graph.split", [y], {"axis": out_type.rank - 1, "sizes": sizes})
    return list(split.results)
