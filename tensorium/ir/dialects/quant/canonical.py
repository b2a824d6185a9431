"""Canonicalization of the quant dialect: a float matmul by a dequantized constant weight is the k-bit matmul.

``graph.matmul(x, quant.dequantize(Wq, scale, zero))`` with constant ``Wq``, scales and zero points (what ONNX
QDQ models and torch.export's weight-only quantized linears give) becomes ``quant.matmul``, whose weight stays
k-bit; a ``[K, N]`` weight is transposed to the ``[N, K]`` the op takes, with the quantization axis of its type
moved along. The patterns name graph ops only by their names: the dialects do not import each other.
"""

from __future__ import annotations

import numpy as np

from ...attributes import DenseAttr
from ...core import Operation, Value
from ...rewrite import PatternRewriter, pattern
from ...types import QuantizedType, TensorType


def _constant(value: Value) -> DenseAttr | None:
    op = value.defining_op()
    if op is None or op.name != "graph.constant":
        return None
    attr = op.attributes.get("value")
    return attr if isinstance(attr, DenseAttr) else None


def _transposed(attr: DenseAttr, element: object | None = None) -> tuple[np.ndarray, TensorType]:
    array = np.ascontiguousarray(attr.array.T)
    t = TensorType(array.shape, element if element is not None else attr.type.element)  # type: ignore[arg-type]
    return array, t


@pattern("graph.matmul", canonical=True)
def matmul_of_dequantized_weight(op: Operation, rewriter: PatternRewriter) -> bool:
    """``x @ dequantize(Wq)`` -> ``quant.matmul(x, Wq)`` for a constant 2-D k-bit weight."""
    lhs, rhs = op.operands
    producer = rhs.defining_op()
    if producer is None or producer.name != "quant.dequantize" or op.attr("transpose_a", False):
        return False
    constants = [_constant(v) for v in producer.operands]
    if any(c is None for c in constants) or not isinstance(lhs.type, TensorType):
        return False
    weight = constants[0]
    assert weight is not None
    q = weight.type.element
    if not isinstance(q, QuantizedType) or weight.type.rank != 2 or lhs.type.element != q.expressed:
        return False
    operands: list[Value] = [lhs]
    if op.attr("transpose_b", False):
        operands += list(producer.operands)
    else:
        axis = None if q.axis is None else 1 - (q.axis % 2)
        moved = QuantizedType(q.bits, q.signed, q.expressed, q.granularity, axis, q.group_size)
        for i, attr in enumerate(constants):
            assert attr is not None
            array, t = _transposed(attr, moved if i == 0 else None) if attr.type.rank == 2 else (attr.array, attr.type)
            operands.append(
                rewriter.create_before(op, "graph.constant", [], {"value": DenseAttr.adopt(array, t)}).result
            )
    rewriter.replace_op_with_new(op, "quant.matmul", operands)
    if not producer.results[0].uses:
        rewriter.erase_op(producer)
    return True
