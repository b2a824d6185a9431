"""Graph ops whose result sizes are known only at run time.

``graph.compress`` keeps the rows of its data operands where a mask is true (numpy.compress along
axis 0, ONNX Compress). Its results' leading dim is a named dim (attribute ``dim``) that no input binds:
the op binds it when it runs, and every later use of the name means that size. Its last result is that
size as a 0-d i64 tensor. nonzero, masked_select, unique and unique_consecutive are built from it
(tensorium/frontend/dynamic_builders.py). The host plan allocates such results at their bound (the
mask's length), reads the size after the kernel ran, and keeps the leading rows
(docs/lowering.md#run-time-sizes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...attributes import StrAttr
from ...core import Operation
from ...opdef import InferError, define
from ...types import Sym, TensorType, Type, i64
from .common import check_dtype, tensors

__all__ = ["RUNTIME_SIZE", "compress", "runtime_dim"]

RUNTIME_SIZE = "runtime_size"
"""The trait of ops whose data results have a leading named dim (attribute ``dim``) bound when the op runs,
whose last result holds that size, and whose first operand's leading dim bounds it."""


def runtime_dim(op: Operation) -> Sym | None:
    """The named dim ``op`` binds at run time (an op with the :data:`RUNTIME_SIZE` trait), else None."""
    if not op.has_trait(RUNTIME_SIZE):
        return None
    return Sym(str(op.attributes["dim"]))


def _compress_infer(mask: Type, data: Sequence[Type], *, dim: str) -> list[Type]:
    m, *rows = tensors(mask, *data)
    check_dtype(m, "bool", "mask")
    if m.rank != 1:
        raise InferError(f"mask must be 1-D, got {m}")
    if not data:
        raise InferError("compress needs at least one data operand")
    try:
        size = Sym(dim)
    except ValueError:
        raise InferError(f"dim '{dim}' is not a dimension name") from None
    for i, t in enumerate(rows):
        if t.rank == 0:
            raise InferError(f"data operand #{i} is 0-d; it needs a leading dim to select rows from")
        n, k = m.shape[0], t.shape[0]
        if isinstance(n, int) and isinstance(k, int) and n != k:
            raise InferError(f"data operand #{i} ({t}) has {k} rows, but the mask has {n} entries")
        if isinstance(n, Sym) and isinstance(k, Sym) and n.name and n != k:
            raise InferError(f"data operand #{i} ({t}) has {k} rows, but the mask has {n} entries")
    results: list[Type] = [t.with_shape((size, *t.shape[1:])) for t in rows]
    return [*results, TensorType((), i64)]


def _compress_reference(mask: np.ndarray, data: Sequence[np.ndarray], *, dim: str) -> tuple[np.ndarray, ...]:
    for i, d in enumerate(data):
        if d.shape[0] != mask.shape[0]:
            raise ValueError(f"data operand #{i} has {d.shape[0]} rows, but the mask has {mask.shape[0]} entries")
    keep = mask.astype(bool)
    return (*(d[keep] for d in data), np.array(np.count_nonzero(keep), np.int64))


def _compress_verify(op: Operation) -> str | None:
    name = str(op.attributes["dim"])
    for operand in op.operands:
        t: Any = operand.type
        if isinstance(t, TensorType) and Sym(name) in t.shape:
            return f"dim [{name}] is bound by this op, but an operand already has it"
    return None


compress = define(
    "graph.compress",
    operands=("mask", "*data"),
    attrs={"dim": StrAttr()},
    infer=_compress_infer,
    reference=_compress_reference,
    verify=_compress_verify,
    traits=("pure", RUNTIME_SIZE),
    num_results=None,
    doc="Keep the rows of each `data` operand (along axis 0) where the 1-D i1 `mask` is true, in order; "
    "the results' leading dim is the run-time dim named `dim`, and the last result is its size (0-d i64).",
)
