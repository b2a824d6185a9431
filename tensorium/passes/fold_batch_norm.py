"""fold-batch-norm: inference batch norm folded into the convolution that feeds it.

``batch_norm(conv2d(x, W, b), scale, beta, mean, var)`` with every parameter a constant and the
convolution used by nothing else becomes ``conv2d(x, W', b')`` with, per output channel ``o``,

    k[o] = scale[o] / sqrt(var[o] + eps)
    W'[o] = W[o] * k[o]
    b'[o] = (b[o] - mean[o]) * k[o] + beta[o]        (b = 0 when the convolution has no bias)

computed in float64 and rounded once to the convolution's element type (a batch norm whose folded
weights or bias would not be finite, such as one with a zero variance and no epsilon, stays as it is).
The result differs from the unfolded program only by rounding (the products are reassociated), which is
why this is a pass of its own and not a canonicalization. Convolutions in either layout and any kernel
layout are folded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Operation
from ..ir.dialects.graph.canonical import constant_array
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.shapes import normalize_axis
from ..ir.types import TensorType, storage_dtype
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class FoldBatchNorm(Pass):
    """Fold constant inference batch norms into the convolutions before them (see the module docstring)."""

    name: ClassVar[str] = "fold-batch-norm"

    def run(self, module: Operation) -> None:
        apply_patterns_greedily(module, [RewritePattern("fold_batch_norm_into_conv", ("graph.batch_norm",), _fold)])


def _fold(bn: Operation, rewriter: PatternRewriter) -> bool:
    conv = bn.operands[0].defining_op()
    if conv is None or conv.name != "graph.conv2d" or len(conv.result.uses) != 1:
        return False
    out_type = conv.result.type
    assert isinstance(out_type, TensorType)
    attrs = conv.opdef.attr_kwargs(conv)
    channel_axis = 1 if attrs["layout"] == "NCHW" else 3
    if normalize_axis(int(bn.attr("axis", 1)), out_type.rank) != channel_axis:
        return False
    weight = constant_array(conv.operands[1])
    bias = constant_array(conv.operands[2]) if len(conv.operands) > 2 else np.zeros(1)
    params = [constant_array(v) for v in bn.operands[1:]]
    if weight is None or bias is None or any(p is None for p in params):
        return False
    scale, beta, mean, var = (np.asarray(p, np.float64) for p in params)  # type: ignore[arg-type]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = scale / np.sqrt(var + float(bn.attr("eps", 1e-5)))
    out_axis = attrs["kernel_layout"].index("O")
    shape = [-1 if a == out_axis else 1 for a in range(weight.ndim)]
    dtype = storage_dtype(out_type.element)
    folded_weight = (weight.astype(np.float64) * factor.reshape(shape)).astype(dtype)
    folded_bias = ((bias.astype(np.float64) - mean) * factor + beta).astype(dtype)
    if not (np.isfinite(folded_weight).all() and np.isfinite(folded_bias).all()):
        return False  # an infinite scale or mean (a zero variance without eps) is not distributive: inf * 0
    w_type, b_type = conv.operands[1].type, TensorType(folded_bias.shape, out_type.element)
    assert isinstance(w_type, TensorType)
    new_w = rewriter.create_before(bn, "graph.constant", [], {"value": DenseAttr(folded_weight, w_type)}).result
    new_b = rewriter.create_before(bn, "graph.constant", [], {"value": DenseAttr(folded_bias, b_type)}).result
    folded = rewriter.create_before(bn, "graph.conv2d", [conv.operands[0], new_w, new_b], dict(conv.attributes))
    rewriter.replace_op(bn, folded.results)
    rewriter.erase_op(conv)
    return True
