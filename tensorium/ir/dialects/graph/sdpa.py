"""Scaled dot-product attention as one op, so that a backend can schedule it as a whole.

``graph.attention(q, k, v, mask?) {scale, causal = false}`` is ``softmax(q @ k^T * scale + mask) @ v`` over
the last two dims (batch dims broadcast): q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] -> [..., Sq, Dv].
A float ``mask`` is added to the scaled scores; an ``i1`` mask keeps the scores where it is true and puts
-inf elsewhere; ``causal`` keeps only ``j <= i`` (the top-left-aligned lower triangle, as
``torch.nn.functional.scaled_dot_product_attention``). The fuse-attention pass recognizes the pattern in
imported graphs.
"""

from __future__ import annotations

import numpy as np

from ...attributes import BoolAttr, FloatAttr
from ...opdef import InferError, define
from ...shapes import broadcast_shapes, check_dims_match
from ...types import TensorType, Type, i1
from .common import check_dtype, same_element, tensors
from .linalg import _matmul_reference
from .nn import _softmax


def _attention_infer(q: Type, k: Type, v: Type, mask: Type | None, *, scale: float, causal: bool) -> Type:
    qt, kt, vt = tensors(q, k, v)
    element = same_element([qt, kt, vt])
    check_dtype(qt, "float")
    if min(qt.rank, kt.rank, vt.rank) < 2:
        raise InferError("attention operands need rank >= 2")
    check_dims_match(qt.shape[-1], kt.shape[-1], "attention: q and k have different head dims")
    check_dims_match(kt.shape[-2], vt.shape[-2], "attention: k and v have different lengths")
    try:
        batch = broadcast_shapes(broadcast_shapes(qt.shape[:-2], kt.shape[:-2]), vt.shape[:-2])
    except InferError as e:
        raise InferError(f"attention batch dimensions: {e}") from None
    if mask is not None:
        (mt,) = tensors(mask)
        if mt.element not in (element, i1):
            raise InferError(f"attention mask must be {element} or i1, got {mt.element}")
        try:
            broadcast_shapes(mt.shape, batch + (qt.shape[-2], kt.shape[-2]))
        except InferError as e:
            raise InferError(f"attention mask does not broadcast to the scores: {e}") from None
    return TensorType(batch + (qt.shape[-2], vt.shape[-1]), element)


def _attention_reference(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, *, scale: float, causal: bool
) -> np.ndarray:
    scores = _matmul_reference(q, k, transpose_a=False, transpose_b=True) * np.array(scale, q.dtype)
    if causal:
        rows, cols = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((rows, cols), bool)), scores, np.array(-np.inf, q.dtype))
    if mask is not None:
        scores = np.where(mask, scores, np.array(-np.inf, q.dtype)) if mask.dtype == np.bool_ else scores + mask
    return _matmul_reference(_softmax(scores.astype(q.dtype), -1, log=False), v, transpose_a=False, transpose_b=False)


attention = define(
    "graph.attention",
    operands=("q", "k", "v", "mask?"),
    attrs={"scale": FloatAttr(), "causal": BoolAttr(False)},
    infer=_attention_infer,
    reference=_attention_reference,
    traits=("pure",),
    doc="softmax(q @ k^T * scale + mask) @ v over the last two dims: q [..., Sq, D], k [..., Sk, D], "
    "v [..., Sk, Dv]; an i1 mask keeps where true, `causal` keeps j <= i.",
)
