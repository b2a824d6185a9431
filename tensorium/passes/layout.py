"""layout: convolution nets in the layout the CPU kernels read fastest (NHWC activations, HWIO weights).

- A ``graph.conv2d`` in NCHW / OIHW that the NHWC implicit-GEMM kernel handles (f32, one group, static
  shapes) becomes ``transpose(conv2d_nhwc(transpose(x), W'), to NCHW)``; a constant weight is transposed
  to HWIO here, at compile time, so that no weight is rearranged at run time (HWIO rows are the GEMM's
  B panels).
- Pooling and resizing (``max_pool2d``, ``avg_pool2d``, ``global_avg_pool2d``, ``global_max_pool2d``,
  ``resize``) of a tensor that just came from NHWC run in NHWC too.
- Transposes back to NCHW sink through elementwise ops: ``f(transpose(a, p), b)`` becomes
  ``transpose(f(a, b'), p)``
  when every other operand ``b`` is layout-free (a scalar or splat), a constant (transposed here), or
  already available transposed back; so no run-time transpose is added. Then ``transpose(transpose(x))``
  pairs cancel (the canonical pattern), and the conversions that remain sit at the graph's edges, once.

A ResNet block thus becomes: one transpose of the input to NHWC, the two convolutions with their bias,
residual add and activations in NHWC, and one transpose of the result back. Only ``format=nhwc`` is
implemented (channel-blocked NCHWc is not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import PassError
from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects.graph.canonical import constant_array, transpose_chain
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.types import TensorType, f32
from .base import Pass, register_pass

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
OIHW_TO_HWIO = (2, 3, 1, 0)
LAYOUT_FOLLOWERS = (
    "graph.max_pool2d",
    "graph.avg_pool2d",
    "graph.global_avg_pool2d",
    "graph.global_max_pool2d",
    "graph.resize",
)
"""Ops with a ``layout`` attribute and no weights, which take the layout their input comes in."""


@register_pass
@dataclass(frozen=True)
class Layout(Pass):
    """Move convolution nets to NHWC with transposes only at the edges (see the module docstring)."""

    name: ClassVar[str] = "layout"
    format: str = "nhwc"

    def __post_init__(self) -> None:
        if self.format != "nhwc":
            raise PassError(f"format must be 'nhwc' (the only layout implemented), got '{self.format}'")

    def run(self, module: Operation) -> None:
        patterns = [
            RewritePattern("conv2d_to_nhwc", ("graph.conv2d",), _outside_fused(_conv_to_nhwc)),
            RewritePattern("follow_nhwc", LAYOUT_FOLLOWERS, _outside_fused(_follow_nhwc)),
            RewritePattern("sink_transpose", (), _outside_fused(_sink_transpose)),
            RewritePattern("transpose_chain", ("graph.transpose",), transpose_chain),
        ]
        apply_patterns_greedily(module, patterns)


Rewrite = Callable[[Operation, PatternRewriter], bool]


def _outside_fused(rewrite: Rewrite) -> Rewrite:
    """``rewrite`` for ops that are not inside a ``graph.fused`` group: a kernel is fused around one op that is not
    elementwise, and the transposes a layout change adds would make it several (the CPU lowering refuses such a
    group). Where ``fuse`` ran first, the group's convolution keeps its layout."""

    def guarded(op: Operation, rewriter: PatternRewriter) -> bool:
        parent = op.parent_op
        return (parent is None or parent.name != "graph.fused") and rewrite(op, rewriter)

    return guarded


def _tensor(value: Value) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def _producer(value: Value, name: str) -> Operation | None:
    op = value.defining_op()
    return op if op is not None and op.name == name else None


def _transposed(value: Value, perm: tuple[int, ...], anchor: Operation, rewriter: PatternRewriter) -> Value:
    """``value`` transposed by ``perm`` before ``anchor``: a folded constant (a lower rank is first given leading
    dims of 1, as broadcasting does), an existing transpose of it, or a new transpose op."""
    array = constant_array(value)
    if array is not None:
        full = array.reshape((1,) * (len(perm) - array.ndim) + array.shape)
        folded = np.ascontiguousarray(full.transpose(perm))
        t = TensorType(folded.shape, _tensor(value).element)
        return rewriter.create_before(anchor, "graph.constant", [], {"value": DenseAttr(folded, t)}).result
    existing = _existing_transpose(value, perm, anchor)
    if existing is not None:
        return existing
    return rewriter.create_before(anchor, "graph.transpose", [value], {"perm": perm}).result


def _existing_transpose(value: Value, perm: tuple[int, ...], anchor: Operation) -> Value | None:
    """A ``graph.transpose`` of ``value`` by ``perm`` that comes before ``anchor`` in its block."""
    block = anchor.parent
    if block is None:
        return None
    position = block.index_of(anchor)
    for user in value.users:
        if user.name == "graph.transpose" and tuple(user.attr("perm")) == perm and user.parent is block:
            if block.index_of(user) < position:
                return user.result
    return None


def _conv_to_nhwc(op: Operation, rewriter: PatternRewriter) -> bool:
    attrs = op.opdef.attr_kwargs(op)
    types = [_tensor(v) for v in op.operands] + [_tensor(op.result)]
    if attrs["layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW" or attrs["groups"] != 1:
        return False
    if not all(t.element == f32 and t.is_static for t in types):
        return False
    x, w = op.operands[0], op.operands[1]
    new_attrs = dict(op.attributes) | {"layout": "NHWC", "kernel_layout": "HWIO"}
    operands = [_transposed(x, TO_NHWC, op, rewriter), _transposed(w, OIHW_TO_HWIO, op, rewriter), *op.operands[2:]]
    conv = rewriter.create_before(op, "graph.conv2d", operands, new_attrs)
    back = rewriter.create_before(op, "graph.transpose", [conv.result], {"perm": TO_NCHW})
    rewriter.replace_op(op, back.results)
    return True


def _follow_nhwc(op: Operation, rewriter: PatternRewriter) -> bool:
    """pool(transpose(a, to NCHW)) with layout NCHW -> transpose(pool(a) in NHWC, to NCHW)."""
    source = _producer(op.operands[0], "graph.transpose")
    if op.attr("layout", "NCHW") != "NCHW" or source is None or tuple(source.attr("perm")) != TO_NCHW:
        return False
    pooled = rewriter.create_before(
        op, op.name, [source.operands[0], *op.operands[1:]], dict(op.attributes) | {"layout": "NHWC"}
    )
    back = rewriter.create_before(op, "graph.transpose", [pooled.result], {"perm": TO_NCHW})
    rewriter.replace_op(op, back.results)
    return True


def _is_back_to_nchw(value: Value) -> bool:
    source = _producer(value, "graph.transpose")
    return source is not None and tuple(source.attr("perm")) == TO_NCHW


def _sink_transpose(op: Operation, rewriter: PatternRewriter) -> bool:
    """f(transpose(a, to NCHW), ...) -> transpose(f(a, ...), to NCHW) for an elementwise f, adding no run-time
    transpose. Only transposes back to NCHW sink (towards the outputs), so rewrites never undo each other.

    The transposed operands must have the result's shape (sinking must not move a transpose from a small,
    broadcast tensor onto a large one); the others must be all-ones shapes (kept), constants (transposed
    here) or values already transposed back before ``op``.
    """
    if not op.has_trait("elementwise") or len(op.results) != 1:
        return False
    shape = _tensor(op.result).shape
    perm, inverse = TO_NCHW, TO_NHWC
    if not any(_is_back_to_nchw(v) and _tensor(v).shape == shape for v in op.operands):
        return False
    operands: list[Value] = []
    for v in op.operands:
        inner = _producer(v, "graph.transpose")
        t = _tensor(v)
        if inner is not None and tuple(inner.attr("perm")) == perm and t.shape == shape:
            operands.append(inner.operands[0])
        elif all(d == 1 for d in t.shape) and t.rank <= len(shape):
            operands.append(v)
        elif (constant_array(v) is not None and t.rank <= len(shape)) or (
            t.rank == len(shape) and _existing_transpose(v, inverse, op) is not None
        ):
            operands.append(_transposed(v, inverse, op, rewriter))
        else:
            return False
    inner_op = rewriter.create_before(op, op.name, operands, dict(op.attributes))
    back = rewriter.create_before(op, "graph.transpose", [inner_op.result], {"perm": perm})
    rewriter.replace_op(op, back.results)
    return True
