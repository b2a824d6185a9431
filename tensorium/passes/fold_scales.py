"""Folding a per-channel scale or a permutation of an activation's channels into the op that computes it, so
that inference pays nothing.

AWQ divides a matmul's input channels by scales (:mod:`~tensorium.passes.awq`). Where the input is computed
only for that matmul by an op that is linear per output channel, the division goes into that op's constants
instead of a ``graph.mul``: a ``graph.layer_norm`` or ``graph.rms_norm`` over the last axis (its weight and
bias), a ``graph.matmul`` by a constant weight (the weight's output channels), a ``quant.matmul`` (its scales),
and through a ``graph.add`` of a constant bias to one of these (the bias too). Anything else (an activation
function, a value with other uses) keeps the explicit multiply.

A permutation of the channels (outlier rearrangement, ``rearrange=True``) folds into the same matmuls and bias
adds and also through elementwise functions of one operand (GELU, ReLU, ...), which commute with it; a norm
does not take it (its statistics would need its input permuted too), so there a ``graph.gather`` stays.
"""

from __future__ import annotations

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.rewrite import PatternRewriter
from ..ir.types import TensorType, f32, i64

Edit = tuple[Operation, int, np.ndarray]
"""Operand ``index`` of ``op`` becomes a constant of this value."""


def _constant(value: Value | None) -> np.ndarray | None:
    op = value.defining_op() if value is not None else None
    if op is None or op.name != "graph.constant":
        return None
    attr = op.attributes["value"]
    array = attr.array if isinstance(attr, DenseAttr) else None
    return array if array is not None and array.dtype == np.float32 else None


def _last_axis(op: Operation, rank: int) -> bool:
    axis = int(op.attr("axis", -1))
    return axis in (-1, rank - 1)


def plan(x: Value, factor: np.ndarray) -> list[Edit] | None:
    """The constant edits that make ``x`` come out times ``factor`` along its last axis, or None when ``x`` has
    other uses than one or its producer is not one of the ops of the module docstring."""
    op = x.defining_op()
    channels = factor.shape[0]
    if op is None or len(x.uses) != 1 or not isinstance(x.type, TensorType) or x.type.shape[-1:] != (channels,):
        return None
    if op.name in ("graph.layer_norm", "graph.rms_norm") and _last_axis(op, x.type.rank):
        params = [(i, _constant(v)) for i, v in enumerate(op.operands) if i > 0]
        if len(params) == 0 or any(a is None or a.shape != (channels,) for _, a in params):
            return None
        return [(op, i, a * factor) for i, a in params if a is not None]
    if op.name == "graph.matmul":
        weight = _constant(op.operands[1])
        if weight is None or weight.ndim != 2:
            return None
        scaled = weight * factor[:, None] if op.attr("transpose_b", False) else weight * factor[None, :]
        return [(op, 1, scaled)]
    if op.name == "quant.matmul":
        scale = _constant(op.operands[2])
        if scale is None or scale.ndim != 2 or scale.shape[0] != channels:
            return None
        return [(op, 2, scale * factor[:, None])]
    if op.name == "graph.add":
        for i in (0, 1):
            bias = _constant(op.operands[1 - i])
            if bias is None or bias.shape[-1:] != (channels,) or any(d != 1 for d in bias.shape[:-1]):
                continue
            inner = plan(op.operands[i], factor)
            if inner is not None:
                return [*inner, (op, 1 - i, bias * factor)]
    return None


def fold_channel_scale(x: Value, factor: np.ndarray, rewriter: PatternRewriter) -> bool:
    """Make ``x`` come out times ``factor`` (per channel of its last axis) by changing the constants of the ops
    that compute it (:func:`plan`); False, changing nothing, where it cannot."""
    edits = plan(x, factor.astype(np.float64))
    if edits is None:
        return False
    for op, index, array in edits:
        old = op.operands[index].defining_op()
        value = array.astype(np.float32)
        constant = rewriter.create_before(
            op, "graph.constant", [], {"value": DenseAttr.adopt(value, TensorType(value.shape, f32))}
        )
        rewriter.set_operand(op, index, constant.result)
        if old is not None and not old.results[0].uses:
            rewriter.erase_op(old)
    return True


def permutation_plan(x: Value, perm: np.ndarray) -> list[Edit] | None:
    """The constant edits that make ``x`` come out with its last-axis channels in the order ``perm`` (``x'[..., i]
    = x[..., perm[i]]``), or None (see the module docstring)."""
    op = x.defining_op()
    channels = perm.shape[0]
    if op is None or len(x.uses) != 1 or not isinstance(x.type, TensorType) or x.type.shape[-1:] != (channels,):
        return None
    if op.name == "graph.matmul":
        weight = _constant(op.operands[1])
        if weight is None or weight.ndim != 2:
            return None
        return [(op, 1, weight[perm] if op.attr("transpose_b", False) else weight[:, perm])]
    if op.name == "quant.matmul":
        arrays = [_constant_any(v) for v in op.operands[1:]]
        if any(a is None or a.ndim != 2 or a.shape[0] != channels for a in arrays):
            return None
        return [(op, i + 1, a[perm]) for i, a in enumerate(arrays) if a is not None]
    if op.has_trait("elementwise") and len(op.operands) == 1 and op.operands[0].type == x.type:
        return permutation_plan(op.operands[0], perm)
    if op.name == "graph.add":
        for i in (0, 1):
            bias = _constant(op.operands[1 - i])
            if bias is None or bias.shape[-1:] != (channels,) or any(d != 1 for d in bias.shape[:-1]):
                continue
            inner = permutation_plan(op.operands[i], perm)
            if inner is not None:
                return [*inner, (op, 1 - i, bias[..., perm])]
    return None


def _constant_any(value: Value) -> np.ndarray | None:
    """A constant's array of any element type (k-bit codes included)."""
    op = value.defining_op()
    if op is None or op.name != "graph.constant":
        return None
    attr = op.attributes["value"]
    return attr.array if isinstance(attr, DenseAttr) else None


def permute_channels(x: Value, perm: np.ndarray, anchor: Operation, rewriter: PatternRewriter) -> Value:
    """``x`` with its last-axis channels in the order ``perm``: the same value, its producers' constants
    permuted (:func:`permutation_plan`), or else a ``graph.gather`` before ``anchor``."""
    edits = permutation_plan(x, perm)
    if edits is None:
        indices = DenseAttr.adopt(perm.astype(np.int64), TensorType(perm.shape, i64))
        order = rewriter.create_before(anchor, "graph.constant", [], {"value": indices}).result
        rank = x.type.rank  # type: ignore[attr-defined]
        return rewriter.create_before(anchor, "graph.gather", [x, order], {"axis": rank - 1}).result
    for op, index, array in edits:
        old = op.operands[index]
        value = np.ascontiguousarray(array)
        kind = old.type
        assert isinstance(kind, TensorType)
        permuted = rewriter.create_before(
            op, "graph.constant", [], {"value": DenseAttr.adopt(value, TensorType(value.shape, kind.element))}
        )
        rewriter.set_operand(op, index, permuted.result)
        producer = old.defining_op()
        if producer is not None and not producer.results[0].uses:
            rewriter.erase_op(producer)
    return x
