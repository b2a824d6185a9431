"""fuse-attention: the attention pattern of imported graphs as one ``graph.attention`` op.

    matmul(softmax(scale(matmul(q, k^T)) [masked]), v)   ->   graph.attention(q, k, v, mask?) {scale, causal}

where ``scale`` is a multiplication or division by a scalar constant (or absent: scale 1); ``k^T`` is
either the matmul's ``transpose_b`` or a transpose of the last two dims of k; the optional masking is
``where(tril, s, -inf)`` with a constant lower triangle (``causal``), ``where(m, s, -inf)`` with a boolean
``m`` that broadcasts to the scores (HuggingFace's padding masks are ``[batch, 1, Sq or 1, Sk]``), or ``s + m``
with a float ``m`` of rank at most 2; and reshapes that only add or drop dims of size 1
(as torch's bmm decomposition leaves them) may sit anywhere in between. Each intermediate value must have
this chain as its only use. A division becomes a multiplication by the reciprocal, so results may differ
by rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir.core import Operation, Value
from ..ir.dialects.graph.canonical import constant_array, splat_value
from ..ir.dialects.graph.shape import is_unit_reshape, static_reshape_attrs
from ..ir.opdef import InferError, lookup
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.shapes import normalize_axis
from ..ir.types import FloatType, TensorType, i1
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class FuseAttention(Pass):
    """Replace attention patterns by ``graph.attention`` (see the module docstring)."""

    name: ClassVar[str] = "fuse-attention"

    def run(self, module: Operation) -> None:
        apply_patterns_greedily(module, [RewritePattern("attention", ("graph.matmul",), _attention)])


def _tensor(value: Value) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def _single_producer(value: Value, name: str | tuple[str, ...]) -> Operation | None:
    """The op named ``name`` that produces ``value`` through unit reshapes, each value on the way used once."""
    names = (name,) if isinstance(name, str) else name
    while True:
        if len(value.uses) != 1:
            return None
        op = value.defining_op()
        if op is None:
            return None
        if op.name in names:
            return op
        if not is_unit_reshape(op):
            return None
        value = op.operands[0]


def _scalar(value: Value) -> float | None:
    """The value of a splat float constant, else None."""
    splat = splat_value(value)
    return float(splat) if isinstance(splat, float) else None


def _is_minus_inf(value: Value) -> bool:
    return _scalar(value) == float("-inf")


def _attention(m2: Operation, rewriter: PatternRewriter) -> bool:
    probs, v = m2.operands
    if m2.attr("transpose_a", False) or m2.attr("transpose_b", False):
        return False
    softmax = _single_producer(probs, "graph.softmax")
    if softmax is None:
        return False
    normalized = _tensor(softmax.result)
    if normalize_axis(int(softmax.attr("axis", -1)), normalized.rank) != normalized.rank - 1:
        return False
    if normalized.shape[-1] != _tensor(probs).shape[-1]:
        return False  # a unit reshape put a size-1 axis last: the softmax does not run over the keys
    scores = softmax.operands[0]
    causal, mask = False, None
    masking = _single_producer(scores, ("graph.where", "graph.add"))
    if masking is not None:
        found = _mask(masking, scores)
        if found is None:
            return False
        causal, mask, scores = found
    scaling = _single_producer(scores, ("graph.mul", "graph.div"))
    scale, product = _scale(scaling) if scaling is not None else (1.0, scores)
    if scale is None or product is None:
        return False
    m1 = _single_producer(product, "graph.matmul")
    if m1 is None or m1.attr("transpose_a", False):
        return False
    q, keys = m1.operands
    reshape_keys: tuple[int, ...] | None = None
    if not m1.attr("transpose_b", False):
        transpose = _single_producer(keys, "graph.transpose")
        perm = tuple(transpose.attr("perm")) if transpose is not None else ()
        rank = len(perm)
        if transpose is None or perm != (*range(rank - 2), rank - 1, rank - 2):
            return False
        shape = _tensor(keys).shape
        if _tensor(transpose.result).shape[-2:] != shape[-2:]:
            return False  # unit reshapes moved a size-1 dim into the swapped pair: not k^T of the matmul
        wanted = (*shape[:-2], shape[-1], shape[-2])
        keys = transpose.operands[0]
        if _tensor(keys).shape != wanted:
            if not all(isinstance(d, int) for d in wanted):
                return False
            reshape_keys = tuple(int(d) for d in wanted)  # type: ignore[arg-type]
    element = _tensor(q).element
    if not isinstance(element, FloatType) or _tensor(v).element != element:
        return False
    attrs = {"scale": scale, "causal": causal}
    key_type = _tensor(keys).with_shape(reshape_keys) if reshape_keys is not None else keys.type
    types = [q.type, key_type, v.type] + ([mask.type] if mask is not None else [])
    opdef = lookup("graph.attention")
    assert opdef is not None
    try:
        (result,) = opdef.infer_types(types, opdef.complete_attrs(attrs))
    except InferError:
        return False  # a mask or batch layout the op does not take
    if result != m2.result.type:
        return False
    if reshape_keys is not None:
        keys = rewriter.create_before(m2, "graph.reshape", [keys], static_reshape_attrs(reshape_keys)).result
    operands = [q, keys, v] + ([mask] if mask is not None else [])
    attention = rewriter.create_before(m2, "graph.attention", operands, attrs)
    rewriter.replace_op(m2, attention.results)
    return True


def _scale(op: Operation) -> tuple[float | None, Value | None]:
    """The scale and the scaled value of ``x * c``, ``c * x`` or ``x / c`` with a scalar constant ``c``."""
    a, b = op.operands
    if op.name == "graph.div":
        c = _scalar(b)
        return (1.0 / c if c else None), a
    if _scalar(b) is not None and _tensor(b).rank == 0:
        return _scalar(b), a
    if _scalar(a) is not None and _tensor(a).rank == 0:
        return _scalar(a), b
    return None, None


def _mask(op: Operation, scores: Value) -> tuple[bool, Value | None, Value] | None:
    """``(causal, mask, unmasked scores)`` for a masking op, or None when it is not one the op takes."""
    if op.name == "graph.where":
        cond, kept, other = op.operands
        if not _is_minus_inf(other):
            return None
        rows, cols = _tensor(kept).shape[-2:]
        triangle = constant_array(cond)
        if triangle is not None and isinstance(rows, int) and isinstance(cols, int) and triangle.ndim == 2:
            if triangle.shape == (rows, cols) and np.array_equal(triangle, np.tril(np.ones((rows, cols), np.bool_))):
                return True, None, kept
        if _tensor(cond).element == i1:
            return False, cond, kept  # any rank: the op's type inference checks that it broadcasts
        return None
    a, b = op.operands
    for mask, kept in ((b, a), (a, b)):
        if _tensor(mask).rank <= 2 and _tensor(mask).element == _tensor(kept).element:
            if _single_producer(kept, ("graph.mul", "graph.div")) is not None:
                return False, mask, kept
    return None
