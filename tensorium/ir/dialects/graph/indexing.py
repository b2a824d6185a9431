"""Indexing ops: gathers and scatters along one axis, element-wise or by index tuples (ONNX
Gather, GatherElements, GatherND, ScatterElements, ScatterND) and embedding lookup.

Index operands take any integer element type. Negative indices count from the end of their axis,
except in ``embedding``; an index out of range is an interpreter error. Scatters with reduction
"none" keep the last of several updates to one element; the other reductions fold every update
into the data in order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...attributes import IntAttr, StrAttr
from ...opdef import InferError, define
from ...shapes import check_dims_match, normalize_axis
from ...types import Dim, TensorType, Type
from .common import check_dtype, same_element, tensors

REDUCTIONS = ("none", "add", "mul", "max", "min")


def checked_indices(indices: np.ndarray, size: int, what: str, negative: bool = True) -> np.ndarray:
    """``indices`` as int64 in 0..size-1 (negative ones counted from the end), or ValueError."""
    low = -size if negative else 0
    bad = (indices < low) | (indices >= size)
    if bad.any():
        value = indices[tuple(np.argwhere(bad)[0])]
        raise ValueError(f"index {value} is out of range for {what} of size {size}")
    wide = indices.astype(np.int64)
    return np.where(wide < 0, wide + size, wide)


def _index_tensor(t: Type) -> TensorType:
    (out,) = tensors(t)
    check_dtype(out, "int", "indices")
    return out


def _data_and_indices(data: Type, indices: Type) -> tuple[TensorType, TensorType]:
    """The data (or table) tensor and the integer index tensor."""
    (d,) = tensors(data)
    return d, _index_tensor(indices)


# gather ---------------------------------------------------------------------------------------
def _gather_infer(data: Type, indices: Type, *, axis: int) -> Type:
    d, idx = _data_and_indices(data, indices)
    axis = normalize_axis(axis, d.rank)
    return d.with_shape(d.shape[:axis] + idx.shape + d.shape[axis + 1 :])


def _gather_reference(data: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
    axis %= data.ndim
    return np.take(data, checked_indices(indices, data.shape[axis], f"axis {axis}"), axis=axis)


gather = define(
    "graph.gather",
    operands=("data", "indices"),
    attrs={"axis": IntAttr(0)},
    infer=_gather_infer,
    reference=_gather_reference,
    traits=("pure",),
    doc="Pick slices of `data` along `axis` (numpy.take, ONNX Gather): the result shape is "
    "data[:axis] + indices + data[axis+1:].",
)


# gather_elements / scatter_elements -----------------------------------------------------------
def _oversized_dim(data_shape: Sequence[Dim], indices_shape: Sequence[Dim], axis: int) -> str | None:
    """What is wrong when a static dim of the indices off ``axis`` is larger than data's, else None."""
    for i, (n, k) in enumerate(zip(data_shape, indices_shape)):
        if i != axis and isinstance(n, int) and isinstance(k, int) and k > n:
            return f"indices dim {i} ({k}) is larger than the data dim ({n})"
    return None


def _check_element_indices(d: TensorType, idx: TensorType, axis: int, op: str) -> int:
    """``axis`` normalized, after checking ``idx`` has the rank of ``d`` and fits it off the axis."""
    if idx.rank != d.rank:
        raise InferError(f"{op} indices must have the rank of data ({d.rank}), got {idx}")
    axis = normalize_axis(axis, d.rank)
    oversized = _oversized_dim(d.shape, idx.shape, axis)
    if oversized:
        raise InferError(f"{op} {oversized}")
    return axis


def _element_positions(data_shape: tuple[int, ...], indices: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Full index arrays selecting, for each index element, its data element along ``axis``."""
    oversized = _oversized_dim(data_shape, indices.shape, axis)
    if oversized:
        raise ValueError(oversized)
    grids: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
    grids[axis] = checked_indices(indices, data_shape[axis], f"axis {axis}")
    return tuple(np.broadcast_arrays(*grids))


def _gather_elements_infer(data: Type, indices: Type, *, axis: int) -> Type:
    d, idx = _data_and_indices(data, indices)
    _check_element_indices(d, idx, axis, "gather_elements")
    return idx.with_element(d.element)


def _gather_elements_reference(data: np.ndarray, indices: np.ndarray, *, axis: int) -> np.ndarray:
    return data[_element_positions(data.shape, indices, axis % data.ndim)]


gather_elements = define(
    "graph.gather_elements",
    operands=("data", "indices"),
    attrs={"axis": IntAttr(0)},
    infer=_gather_elements_infer,
    reference=_gather_elements_reference,
    traits=("pure",),
    doc="out[i][j] = data[indices[i][j]][j] for axis 0 (torch.gather, ONNX GatherElements); the "
    "result has the shape of `indices`, whose dims off the axis may not exceed data's.",
)


def _scatter(target: np.ndarray, positions: np.ndarray, values: np.ndarray, reduction: str) -> None:
    """Write ``values`` into rows ``positions`` of ``target`` in place, folding with ``reduction``."""
    if reduction == "none":
        unique, first_from_end = np.unique(positions[::-1], return_index=True)
        target[unique] = values[len(positions) - 1 - first_from_end]
        return
    ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]
    ufunc.at(target, positions, values)


def _scatter_operands(
    data: Type, indices: Type, updates: Type, reduction: str
) -> tuple[TensorType, TensorType, TensorType]:
    """The data, index and updates tensors of a scatter, after checking their element types."""
    d, u = tensors(data, updates)
    idx = _index_tensor(indices)
    same_element([d, u], "data and updates")
    if reduction in ("add", "mul"):
        check_dtype(d, "number", f'data of reduction "{reduction}"')
    return d, idx, u


def _scatter_elements_infer(data: Type, indices: Type, updates: Type, *, axis: int, reduction: str) -> Type:
    d, idx, u = _scatter_operands(data, indices, updates, reduction)
    _check_element_indices(d, idx, axis, "scatter_elements")
    if u.rank != idx.rank:
        raise InferError(f"scatter_elements updates {u} must have the shape of indices {idx}")
    for i, (a, b) in enumerate(zip(idx.shape, u.shape)):
        check_dims_match(a, b, f"scatter_elements updates differ from indices in dim {i}")
    return d


def _scatter_elements_reference(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int, reduction: str
) -> np.ndarray:
    if updates.shape != indices.shape:
        raise ValueError(f"updates shape {list(updates.shape)} differs from indices shape {list(indices.shape)}")
    out = data.copy()
    positions = np.ravel_multi_index(_element_positions(data.shape, indices, axis % data.ndim), data.shape)
    _scatter(out.reshape(-1), positions.reshape(-1), updates.reshape(-1), reduction)
    return out


scatter_elements = define(
    "graph.scatter_elements",
    operands=("data", "indices", "updates"),
    attrs={"axis": IntAttr(0), "reduction": StrAttr("none", choices=REDUCTIONS)},
    infer=_scatter_elements_infer,
    reference=_scatter_elements_reference,
    traits=("pure",),
    doc="A copy of `data` with out[indices[i][j]][j] = updates[i][j] for axis 0 (ONNX ScatterElements); "
    '`reduction` folds updates in (add, mul, max, min); with "none" the last duplicate wins.',
)


# gather_nd / scatter_nd -----------------------------------------------------------------------
def _tuple_length(idx: TensorType, limit: int, op: str) -> int:
    """The static length of the index tuples (last dim of ``idx``), checked to lie in 1..limit."""
    if idx.rank < 1:
        raise InferError(f"{op} indices need rank >= 1, got {idx}")
    m = idx.shape[-1]
    if not isinstance(m, int):
        raise InferError(f"{op} indices need a static last dim, got {idx}")
    if not 1 <= m <= limit:
        raise InferError(f"{op} index tuples have length {m}, which must be in 1..{limit}")
    return m


def _flat_positions(indices: np.ndarray, shape: tuple[int, ...], first_axis: int) -> np.ndarray:
    """Flat positions (into ``shape``) of the index tuples on the last axis of ``indices``."""
    m = len(shape)
    tuples = indices.reshape(-1, m)
    columns = [checked_indices(tuples[:, j], n, f"axis {first_axis + j}") for j, n in enumerate(shape)]
    return np.ravel_multi_index(tuple(columns), shape) if tuples.size else np.zeros(0, np.int64)


def _gather_nd_infer(data: Type, indices: Type, *, batch_dims: int) -> Type:
    d, idx = _data_and_indices(data, indices)
    b = batch_dims
    if not 0 <= b < min(d.rank, idx.rank):
        raise InferError(f"gather_nd batch_dims {b} must be in 0..{min(d.rank, idx.rank) - 1} for {d} and {idx}")
    m = _tuple_length(idx, d.rank - b, "gather_nd")
    batch = tuple(check_dims_match(d.shape[i], idx.shape[i], f"gather_nd batch dim {i} differs") for i in range(b))
    return d.with_shape(batch + idx.shape[b:-1] + d.shape[b + m :])


def _gather_nd_reference(data: np.ndarray, indices: np.ndarray, *, batch_dims: int) -> np.ndarray:
    b = batch_dims
    if data.shape[:b] != indices.shape[:b]:
        raise ValueError(f"batch dims of data {list(data.shape[:b])} and indices {list(indices.shape[:b])} differ")
    m = indices.shape[-1]
    batches = int(np.prod(data.shape[:b], dtype=np.int64))
    per_batch = int(np.prod(indices.shape[b:-1], dtype=np.int64))
    inner = data.shape[b + m :]
    rows = data.reshape((batches, int(np.prod(data.shape[b : b + m], dtype=np.int64))) + inner)
    positions = _flat_positions(indices, data.shape[b : b + m], b).reshape(batches, per_batch)
    out = rows[np.arange(batches)[:, None], positions]
    return out.reshape(indices.shape[:-1] + inner)


gather_nd = define(
    "graph.gather_nd",
    operands=("data", "indices"),
    attrs={"batch_dims": IntAttr(0)},
    infer=_gather_nd_infer,
    reference=_gather_nd_reference,
    traits=("pure",),
    doc="Pick slices of `data` by index tuples on the last axis of `indices` (ONNX GatherND); the "
    "first `batch_dims` dims are shared batch dims.",
)


def _scatter_nd_infer(data: Type, indices: Type, updates: Type, *, reduction: str) -> Type:
    d, idx, u = _scatter_operands(data, indices, updates, reduction)
    m = _tuple_length(idx, d.rank, "scatter_nd")
    expected: tuple[Dim, ...] = idx.shape[:-1] + d.shape[m:]
    if u.rank != len(expected):
        raise InferError(f"scatter_nd updates must have shape indices[:-1] + data[{m}:] = {list(expected)}, got {u}")
    for i, (a, b) in enumerate(zip(expected, u.shape)):
        check_dims_match(a, b, f"scatter_nd updates dim {i} differs from indices[:-1] + data[{m}:]")
    return d


def _scatter_nd_reference(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, reduction: str) -> np.ndarray:
    m = indices.shape[-1]
    inner = data.shape[m:]
    if updates.shape != indices.shape[:-1] + inner:
        raise ValueError(f"updates shape {list(updates.shape)} is not {list(indices.shape[:-1] + inner)}")
    out = data.copy()
    rows = out.reshape((int(np.prod(data.shape[:m], dtype=np.int64)),) + inner)
    positions = _flat_positions(indices, data.shape[:m], 0)
    _scatter(rows, positions, updates.reshape((len(positions),) + inner), reduction)
    return out


scatter_nd = define(
    "graph.scatter_nd",
    operands=("data", "indices", "updates"),
    attrs={"reduction": StrAttr("none", choices=REDUCTIONS)},
    infer=_scatter_nd_infer,
    reference=_scatter_nd_reference,
    traits=("pure",),
    doc="A copy of `data` with the slices named by index tuples set from `updates` (ONNX ScatterND, "
    'torch index_put; accumulate is reduction "add"); with "none" the last duplicate wins.',
)


# embedding ------------------------------------------------------------------------------------
def _embedding_infer(weight: Type, indices: Type) -> Type:
    w, idx = _data_and_indices(weight, indices)
    if w.rank != 2:
        raise InferError(f"embedding weight must have rank 2, got {w}")
    return w.with_shape(idx.shape + (w.shape[1],))


def _embedding_reference(weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    return weight[checked_indices(indices, weight.shape[0], "the embedding table", negative=False)]


embedding = define(
    "graph.embedding",
    operands=("weight", "indices"),
    infer=_embedding_infer,
    reference=_embedding_reference,
    traits=("pure",),
    doc="Rows of the rank-2 `weight` table named by `indices` (0..rows-1): shape indices + [dim].",
)
