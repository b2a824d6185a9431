"""Contractions: batched matmul with transpose flags, and the general einsum form."""

from __future__ import annotations

import re

import numpy as np

from ...attributes import BoolAttr, StrAttr
from ...opdef import InferError, define
from ...shapes import broadcast_shapes, check_dims_match
from ...types import Dim, TensorType, Type
from .common import check_dtype, same_element, tensors


def _matmul_infer(lhs: Type, rhs: Type, *, transpose_a: bool, transpose_b: bool) -> Type:
    a, b = tensors(lhs, rhs)
    element = same_element([a, b])
    check_dtype(a, "number")
    if a.rank < 2 or b.rank < 2:
        raise InferError(f"matmul operands need rank >= 2, got ranks {a.rank} and {b.rank}")
    m, k = (a.shape[-1], a.shape[-2]) if transpose_a else (a.shape[-2], a.shape[-1])
    k2, n = (b.shape[-1], b.shape[-2]) if transpose_b else (b.shape[-2], b.shape[-1])
    check_dims_match(k, k2, "matmul contraction dimensions differ")
    try:
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except InferError as e:
        raise InferError(f"matmul batch dimensions: {e}") from None
    return TensorType(batch + (m, n), element)


def _matmul_reference(a: np.ndarray, b: np.ndarray, *, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    if a.dtype.kind == "f" and a.dtype.itemsize < 4:
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    return np.matmul(a, b)


matmul = define(
    "graph.matmul",
    operands=("lhs", "rhs"),
    attrs={"transpose_a": BoolAttr(False), "transpose_b": BoolAttr(False)},
    infer=_matmul_infer,
    reference=_matmul_reference,
    traits=("pure",),
    doc="Batched matrix product [..., M, K] x [..., K, N] -> [..., M, N]; batch dims broadcast.",
)

_EINSUM = re.compile(r"([a-zA-Z]*(?:,[a-zA-Z]*)*)->([a-zA-Z]*)")


def parse_equation(equation: str, n_operands: int) -> tuple[list[str], str]:
    """Operand subscripts and output subscripts of an explicit einsum equation."""
    m = _EINSUM.fullmatch(equation.replace(" ", ""))
    if m is None:
        raise InferError(f"einsum equation '{equation}' must look like 'ij,jk->ik'")
    inputs = m.group(1).split(",")
    if len(inputs) != n_operands:
        raise InferError(f"einsum equation '{equation}' names {len(inputs)} operands, got {n_operands}")
    output = m.group(2)
    if len(set(output)) != len(output):
        raise InferError(f"einsum output '{output}' repeats a letter")
    known = set("".join(inputs))
    for letter in output:
        if letter not in known:
            raise InferError(f"einsum output letter '{letter}' appears in no operand")
    return inputs, output


def _einsum_infer(inputs: list[Type], *, equation: str) -> Type:
    ts = tensors(*inputs)
    if not ts:
        raise InferError("einsum needs at least one operand")
    element = same_element(ts)
    subs, output = parse_equation(equation, len(ts))
    sizes: dict[str, Dim] = {}
    for sub, t in zip(subs, ts):
        if len(sub) != t.rank:
            raise InferError(f"einsum subscripts '{sub}' do not match operand of rank {t.rank}")
        for letter, dim in zip(sub, t.shape):
            if letter in sizes:
                sizes[letter] = check_dims_match(sizes[letter], dim, f"einsum dimension '{letter}' differs")
            else:
                sizes[letter] = dim
    return TensorType(tuple(sizes[c] for c in output), element)


def _einsum_reference(arrays: list[np.ndarray], *, equation: str) -> np.ndarray:
    return np.asarray(np.einsum(equation.replace(" ", ""), *arrays))


einsum = define(
    "graph.einsum",
    operands=("*inputs",),
    attrs={"equation": StrAttr()},
    infer=_einsum_infer,
    reference=_einsum_reference,
    traits=("pure",),
    doc="A general contraction written as an explicit einsum equation ('bij,bjk->bik').",
)
