"""Shape ops: reshape, transpose, broadcast, squeeze/unsqueeze, slice, concat/split, pad, tile,
arange and triangular masks.

Attribute conventions follow ONNX: reshape's 0 copies an input dim, slice takes starts/ends/axes/
steps with Python-style clamping, pad lists all begins then all ends. Shape inference keeps a named
symbolic dim wherever the result dim is provably the same size, and gives ``?`` where it is unknown.
"""

from __future__ import annotations

import math

import numpy as np

from ...attributes import BoolAttr, FloatAttr, IntAttr, IntsAttr, ScalarTypeAttr, StrAttr
from ...core import Operation
from ...opdef import InferError, define
from ...shapes import check_dims_match, dim_product, leftover_dim, normalize_axes, normalize_axis, solve_reshape
from ...types import DYN, Dim, FloatType, IntegerType, ScalarType, Sym, TensorType, Type, storage_dtype
from .common import check_dtype, same_element, tensors

INT64_MAX = 2**63 - 1
"""ONNX's "to the end" value for slice ends (and, negated, "to the beginning")."""


# reshape --------------------------------------------------------------------------------------
def _reshape_infer(x: Type, *, shape: tuple[int, ...], allowzero: bool) -> Type:
    (t,) = tensors(x)
    if sum(1 for s in shape if s == -1) > 1:
        raise InferError(f"reshape shape {list(shape)} has more than one -1")
    bad = [s for s in shape if s < -1]
    if bad:
        raise InferError(f"reshape shape {list(shape)} has a negative size {bad[0]}")
    if allowzero and 0 in shape and -1 in shape:
        raise InferError(f"reshape shape {list(shape)} mixes 0 and -1 with allowzero")
    copied = [] if allowzero else [i for i, s in enumerate(shape) if s == 0]
    if copied and copied[-1] >= t.rank:
        raise InferError(f"reshape shape {list(shape)} copies dim {copied[-1]} but the input has rank {t.rank}")
    # A copied dim appears on both sides, so it cancels out of the size equation.
    rest_in = [d for i, d in enumerate(t.shape) if i not in copied]
    rest_target = [s for i, s in enumerate(shape) if i not in copied]
    try:
        solved = iter(solve_reshape(rest_in, rest_target))
    except InferError:
        count = f" ({t.num_elements} elements)" if t.is_static else ""
        raise InferError(f"cannot reshape {t}{count} to shape {list(shape)}") from None
    return t.with_shape(tuple(t.shape[i] if i in copied else next(solved) for i in range(len(shape))))


def _reshape_reference(x: np.ndarray, *, shape: tuple[int, ...], allowzero: bool) -> np.ndarray:
    copied = [] if allowzero else [i for i, s in enumerate(shape) if s == 0]
    target = [x.shape[i] if i in copied else s for i, s in enumerate(shape)]
    if -1 in target:
        # Solve -1 without the copied dims, so that zero-sized copied dims leave it determined.
        rest = math.prod(n for i, n in enumerate(x.shape) if i not in copied)
        known = math.prod(s for i, s in enumerate(shape) if i not in copied and s != -1)
        if rest % known:
            raise ValueError(f"cannot reshape an array of shape {list(x.shape)} to shape {list(shape)}")
        target[target.index(-1)] = rest // known
    return np.reshape(x, target)


def static_reshape_attrs(shape: tuple[int, ...]) -> dict[str, object]:
    """The attributes of a ``graph.reshape`` to the static ``shape``: with ``allowzero`` where ``shape`` holds a 0,
    which would otherwise copy the input's dim at that position (ONNX's rule) instead of meaning size 0."""
    shape = tuple(int(d) for d in shape)
    return {"shape": shape, "allowzero": True} if 0 in shape else {"shape": shape}


reshape = define(
    "graph.reshape",
    operands=("x",),
    attrs={"shape": IntsAttr(), "allowzero": BoolAttr(False)},
    infer=_reshape_infer,
    reference=_reshape_reference,
    traits=("pure",),
    doc="Reshape (ONNX): one -1 is inferred; 0 copies the input dim at that position unless `allowzero`.",
)


# reshape_dims -----------------------------------------------------------------------------------
def _reshape_dims_infer(
    x: Type, sources: list[Type], *, shape: tuple[int, ...], positions: tuple[int, ...], axes: tuple[int, ...]
) -> Type:
    t, *given = tensors(x, *sources)
    if not len(positions) == len(axes) == len(given):
        raise InferError(
            f"reshape_dims has {len(given)} source(s) but {len(positions)} position(s) and {len(axes)} axis(es)"
        )
    if any(s < -1 for s in shape):
        raise InferError(f"reshape shape {list(shape)} has a negative size")
    if len(set(positions)) != len(positions) or any(not 0 <= p < len(shape) or shape[p] != -1 for p in positions):
        raise InferError(f"positions {list(positions)} must be distinct positions of a -1 in shape {list(shape)}")
    target: list[Dim] = list(shape)
    for k, (p, a, src) in enumerate(zip(positions, axes, given)):
        target[p] = src.shape[normalize_axis(a, src.rank, f"axis of source #{k}")]
    inferred = [i for i, d in enumerate(target) if d == -1]
    if len(inferred) > 1:
        raise InferError(f"reshape shape {list(shape)} leaves more than one -1 to infer")
    known = [d for d in target if d != -1]
    if not inferred:
        in_static, in_names, in_anonymous = dim_product(t.shape)
        out_static, out_names, out_anonymous = dim_product(known)
        if not (in_anonymous or out_anonymous) and in_names == out_names and in_static != out_static:
            raise InferError(f"cannot reshape {t} to {'x'.join(map(str, target))}")
        return t.with_shape(tuple(known))
    fill = leftover_dim(t.shape, known)
    if fill == DYN and all(isinstance(d, int) for d in [*t.shape, *known]):
        raise InferError(f"cannot reshape {t} to shape {list(shape)} with the sources' dims")
    return t.with_shape(tuple(fill if d == -1 else d for d in target))


def _reshape_dims_reference(
    x: np.ndarray,
    sources: list[np.ndarray],
    *,
    shape: tuple[int, ...],
    positions: tuple[int, ...],
    axes: tuple[int, ...],
) -> np.ndarray:
    target = list(shape)
    for p, a, src in zip(positions, axes, sources):
        target[p] = src.shape[a]
    return np.reshape(x, target)


reshape_dims = define(
    "graph.reshape_dims",
    operands=("x", "*sources"),
    attrs={"shape": IntsAttr(), "positions": IntsAttr(), "axes": IntsAttr()},
    infer=_reshape_dims_infer,
    reference=_reshape_dims_reference,
    traits=("pure",),
    doc="Reshape to `shape` (a 0 is size 0, one free -1 is inferred) where the -1 at `positions[k]` is dim "
    "`axes[k]` of source `k`: a reshape to run-time sizes that other tensors carry ([batch*seq]x8 to "
    "[batch]x[seq]x8). Only the sources' shapes are read.",
)


# transpose ------------------------------------------------------------------------------------
def _transpose_infer(x: Type, *, perm: tuple[int, ...]) -> Type:
    (t,) = tensors(x)
    if sorted(perm) != list(range(t.rank)):
        raise InferError(f"perm {list(perm)} is not a permutation of the {t.rank} axes of {t}")
    return t.with_shape(tuple(t.shape[p] for p in perm))


transpose = define(
    "graph.transpose",
    operands=("x",),
    attrs={"perm": IntsAttr()},
    infer=_transpose_infer,
    reference=lambda x, *, perm: np.transpose(x, perm),
    traits=("pure",),
    doc="Permute axes: result axis i is input axis perm[i].",
)


# broadcast_to ---------------------------------------------------------------------------------
def _broadcast_to_infer(x: Type, *, shape: tuple[int, ...]) -> Type:
    (t,) = tensors(x)
    if len(shape) < t.rank:
        raise InferError(f"cannot broadcast {t} to shape {list(shape)} of lower rank")
    offset = len(shape) - t.rank
    out: list[Dim] = []
    for i, s in enumerate(shape):
        d = t.shape[i - offset] if i >= offset else None
        if s == -1:
            if d is None:
                raise InferError(f"broadcast shape {list(shape)} has -1 at position {i}, which has no input dim")
            out.append(d)
        elif s < 0:
            raise InferError(f"broadcast shape {list(shape)} has a negative size {s}")
        elif isinstance(d, int) and d not in (1, s):
            raise InferError(f"cannot broadcast {t} to shape {list(shape)}: input dim {d} is neither 1 nor {s}")
        else:
            out.append(s)
    return t.with_shape(tuple(out))


def _broadcast_to_reference(x: np.ndarray, *, shape: tuple[int, ...]) -> np.ndarray:
    offset = len(shape) - x.ndim
    target = [x.shape[i - offset] if s == -1 else s for i, s in enumerate(shape)]
    return np.broadcast_to(x, target).copy()  # not ascontiguousarray, which turns a 0-d array into 1-d


broadcast_to = define(
    "graph.broadcast_to",
    operands=("x",),
    attrs={"shape": IntsAttr()},
    infer=_broadcast_to_infer,
    reference=_broadcast_to_reference,
    traits=("pure",),
    doc="Broadcast to `shape` (numpy rules, right-aligned); -1 keeps the input's dim.",
)


# squeeze / unsqueeze --------------------------------------------------------------------------
def _squeeze_infer(x: Type, *, axes: tuple[int, ...]) -> Type:
    (t,) = tensors(x)
    norm = normalize_axes(axes, t.rank)
    for a in norm:
        if isinstance(t.shape[a], int) and t.shape[a] != 1:
            raise InferError(f"cannot squeeze axis {a} of size {t.shape[a]} (it must be 1)")
    return t.with_shape(tuple(d for i, d in enumerate(t.shape) if i not in norm))


squeeze = define(
    "graph.squeeze",
    operands=("x",),
    attrs={"axes": IntsAttr()},
    infer=_squeeze_infer,
    reference=lambda x, *, axes: np.squeeze(x, tuple(a % x.ndim for a in axes)),
    traits=("pure",),
    doc="Remove the size-1 dims `axes` (negative counts from the end).",
)


def _unsqueeze_infer(x: Type, *, axes: tuple[int, ...]) -> Type:
    (t,) = tensors(x)
    norm = normalize_axes(axes, t.rank + len(axes))
    dims = iter(t.shape)
    return t.with_shape(tuple(1 if i in norm else next(dims) for i in range(t.rank + len(axes))))


unsqueeze = define(
    "graph.unsqueeze",
    operands=("x",),
    attrs={"axes": IntsAttr()},
    infer=_unsqueeze_infer,
    reference=lambda x, *, axes: np.expand_dims(x, tuple(axes)),
    traits=("pure",),
    doc="Insert size-1 dims at `axes`, positions in the result (negative counts from its end), as ONNX.",
)


# slice ----------------------------------------------------------------------------------------
def slice_plan(
    rank: int, starts: tuple[int, ...], ends: tuple[int, ...], axes: tuple[int, ...], steps: tuple[int, ...]
) -> list[tuple[int, int, int, int]]:
    """(axis, start, end, step) per sliced axis, with axes and steps defaulted and checked."""
    if len(starts) != len(ends):
        raise InferError(f"slice starts {list(starts)} and ends {list(ends)} differ in length")
    axes = axes or tuple(range(len(starts)))
    steps = steps or (1,) * len(starts)
    if len(axes) != len(starts):
        raise InferError(f"slice axes {list(axes)} and starts {list(starts)} differ in length")
    if len(steps) != len(starts):
        raise InferError(f"slice steps {list(steps)} and starts {list(starts)} differ in length")
    normalize_axes(axes, rank)
    if 0 in steps:
        raise InferError(f"slice steps {list(steps)} contain 0")
    return [(a % rank, s, e, st) for a, s, e, st in zip(axes, starts, ends, steps)]


def is_full_range(start: int, end: int, step: int) -> bool:
    """True when slicing any dim with these bounds keeps every element (in order or reversed)."""
    if step == 1:
        return (start == 0 or start <= -INT64_MAX) and end >= INT64_MAX
    if step == -1:
        return (start == -1 or start >= INT64_MAX) and end <= -INT64_MAX
    return False


def _slice_infer(
    x: Type, *, starts: tuple[int, ...], ends: tuple[int, ...], axes: tuple[int, ...], steps: tuple[int, ...]
) -> Type:
    (t,) = tensors(x)
    out = list(t.shape)
    for axis, start, end, step in slice_plan(t.rank, starts, ends, axes, steps):
        d = t.shape[axis]
        if isinstance(d, int):
            out[axis] = len(range(*slice(start, end, step).indices(d)))
        elif not is_full_range(start, end, step):
            out[axis] = DYN
    return t.with_shape(tuple(out))


def _slice_reference(
    x: np.ndarray, *, starts: tuple[int, ...], ends: tuple[int, ...], axes: tuple[int, ...], steps: tuple[int, ...]
) -> np.ndarray:
    index = [slice(None)] * x.ndim
    for axis, start, end, step in slice_plan(x.ndim, starts, ends, axes, steps):
        index[axis] = slice(start, end, step)
    return x[tuple(index)]


slice_ = define(
    "graph.slice",
    operands=("x",),
    attrs={"starts": IntsAttr(), "ends": IntsAttr(), "axes": IntsAttr(()), "steps": IntsAttr(())},
    infer=_slice_infer,
    reference=_slice_reference,
    traits=("pure",),
    doc="Strided slice (ONNX Slice): negative indices count from the end, bounds clamp, steps may be "
    "negative, ends of 2**63-1 mean to the end; `axes` default to the leading axes, `steps` to 1.",
)


# concat / split -------------------------------------------------------------------------------
def _concat_infer(inputs: list[Type], *, axis: int) -> Type:
    ts = tensors(*inputs)
    if not ts:
        raise InferError("concat needs at least one operand")
    element = same_element(ts)
    rank = ts[0].rank
    if any(t.rank != rank for t in ts):
        raise InferError(f"concat operands must have one rank, got {', '.join(str(t) for t in ts)}")
    axis = normalize_axis(axis, rank)
    out = list(ts[0].shape)
    for t in ts[1:]:
        for i, d in enumerate(t.shape):
            if i != axis:
                out[i] = check_dims_match(out[i], d, f"concat operands differ in dim {i}")
    static = 0
    syms: list[Sym] = []
    for t in ts:
        d = t.shape[axis]
        if isinstance(d, int):
            static += d
        else:
            syms.append(d)
    if not syms:
        out[axis] = static
    elif len(syms) == 1 and static == 0:
        out[axis] = syms[0]
    else:
        out[axis] = DYN
    return TensorType(tuple(out), element)


concat = define(
    "graph.concat",
    operands=("*inputs",),
    attrs={"axis": IntAttr()},
    infer=_concat_infer,
    reference=lambda inputs, *, axis: np.concatenate(inputs, axis=axis),
    traits=("pure",),
    doc="Join operands along `axis`; every other dim must match.",
)


def _split_infer(x: Type, *, axis: int, sizes: tuple[int, ...]) -> list[Type]:
    (t,) = tensors(x)
    axis = normalize_axis(axis, t.rank)
    if not sizes:
        raise InferError("split needs at least one size")
    if any(s < 0 for s in sizes):
        raise InferError(f"split sizes {list(sizes)} must not be negative")
    d = t.shape[axis]
    if isinstance(d, int) and sum(sizes) != d:
        raise InferError(f"split sizes {list(sizes)} sum to {sum(sizes)}, but axis {axis} of {t} has size {d}")
    return [t.with_shape(t.shape[:axis] + (s,) + t.shape[axis + 1 :]) for s in sizes]


def _split_reference(x: np.ndarray, *, axis: int, sizes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    axis %= x.ndim
    if sum(sizes) != x.shape[axis]:
        raise ValueError(f"split sizes {list(sizes)} sum to {sum(sizes)}, but axis {axis} has size {x.shape[axis]}")
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


split = define(
    "graph.split",
    operands=("x",),
    attrs={"axis": IntAttr(), "sizes": IntsAttr()},
    infer=_split_infer,
    reference=_split_reference,
    traits=("pure",),
    num_results=None,
    doc="Cut `x` along `axis` into one result per entry of `sizes` (which must sum to the dim).",
)


# pad ------------------------------------------------------------------------------------------
def _check_fill_value(element: ScalarType, value: float) -> None:
    if isinstance(element, FloatType):
        return
    if not (math.isfinite(value) and value == int(value)):
        raise InferError(f"pad value {value} is not an integer, as element type {element} needs")
    if isinstance(element, IntegerType) and not element.min_value <= value <= element.max_value:
        raise InferError(f"pad value {value} does not fit element type {element}")


def _pad_infer(x: Type, *, pads: tuple[int, ...], mode: str, value: float) -> Type:
    (t,) = tensors(x)
    if len(pads) != 2 * t.rank:
        raise InferError(f"pads {list(pads)} must have 2 * rank = {2 * t.rank} entries")
    if mode != "constant" and value != 0.0:
        raise InferError(f'pad value only applies to mode "constant", not "{mode}"')
    _check_fill_value(t.element, value)
    out: list[Dim] = []
    for i, d in enumerate(t.shape):
        begin, end = pads[i], pads[i + t.rank]
        if not isinstance(d, int):
            out.append(d if begin == end == 0 else DYN)
            continue
        cropped = d + min(begin, 0) + min(end, 0)
        if cropped < 0:
            raise InferError(f"pads {list(pads)} crop more than the {d} elements of axis {i}")
        grow = max(begin, 0) + max(end, 0)
        if grow and mode == "reflect" and max(begin, end) >= cropped:
            raise InferError(f"reflect pads on axis {i} must be smaller than its size {cropped}")
        if grow and mode == "edge" and cropped == 0:
            raise InferError(f"edge pads on axis {i} need a non-empty dim")
        out.append(cropped + grow)
    return t.with_shape(tuple(out))


def _pad_reference(x: np.ndarray, *, pads: tuple[int, ...], mode: str, value: float) -> np.ndarray:
    rank = x.ndim
    if rank == 0:
        return x.copy()  # nothing to pad, and np.pad rejects 0-d arrays
    crop = tuple(slice(-min(pads[i], 0), x.shape[i] + min(pads[i + rank], 0)) for i in range(rank))
    widths = [(max(pads[i], 0), max(pads[i + rank], 0)) for i in range(rank)]
    cropped = x[crop]
    if mode == "constant":
        return np.pad(cropped, widths, constant_values=np.asarray(value).astype(x.dtype))
    for i, (begin, end) in enumerate(widths):
        if (begin or end) and (cropped.shape[i] == 0 or (mode == "reflect" and max(begin, end) >= cropped.shape[i])):
            raise ValueError(f"{mode} pads ({begin}, {end}) do not fit axis {i} of size {cropped.shape[i]}")
    return np.pad(cropped, widths, mode="reflect" if mode == "reflect" else "edge")


pad = define(
    "graph.pad",
    operands=("x",),
    attrs={
        "pads": IntsAttr(),
        "mode": StrAttr("constant", choices=("constant", "reflect", "edge")),
        "value": FloatAttr(0.0),
    },
    infer=_pad_infer,
    reference=_pad_reference,
    traits=("pure",),
    doc="Pad (ONNX order: all begins, then all ends); negative pads crop first. `reflect` mirrors "
    "without the edge element (pads must be smaller than the dim), `edge` repeats it.",
)


# tile -----------------------------------------------------------------------------------------
def _tile_infer(x: Type, *, repeats: tuple[int, ...]) -> Type:
    (t,) = tensors(x)
    if len(repeats) != t.rank:
        raise InferError(f"repeats {list(repeats)} must have one entry per axis of {t}")
    if any(r < 0 for r in repeats):
        raise InferError(f"repeats {list(repeats)} must not be negative")
    out: list[Dim] = []
    for d, r in zip(t.shape, repeats):
        if r == 0:
            out.append(0)
        elif isinstance(d, int):
            out.append(d * r)
        else:
            out.append(d if r == 1 else DYN)
    return t.with_shape(tuple(out))


tile = define(
    "graph.tile",
    operands=("x",),
    attrs={"repeats": IntsAttr()},
    infer=_tile_infer,
    reference=lambda x, *, repeats: np.tile(x, repeats),
    traits=("pure",),
    doc="Repeat the whole tensor `repeats[i]` times along each axis i.",
)


# arange ---------------------------------------------------------------------------------------
def _arange_length(start: float, limit: float, step: float) -> int:
    return max(math.ceil((limit - start) / step), 0)


def _arange_infer(*, start: float, limit: float, step: float, dtype: ScalarType) -> Type:
    t = TensorType((0,), dtype)
    check_dtype(t, "number", "arange")
    if not all(math.isfinite(v) for v in (start, limit, step)):
        raise InferError(f"arange bounds must be finite, got start {start}, limit {limit}, step {step}")
    if step == 0:
        raise InferError("arange step must not be 0")
    if not isinstance(dtype, FloatType) and not all(v == int(v) for v in (start, step)):
        raise InferError(f"arange start {start} and step {step} must be integers for element type {dtype}")
    return t.with_shape((_arange_length(start, limit, step),))


def _arange_reference(*, start: float, limit: float, step: float, dtype: ScalarType) -> np.ndarray:
    count = _arange_length(start, limit, step)
    if isinstance(dtype, IntegerType) and not dtype.is_bool:  # integral start and step: exact, wrapped to dtype
        return (int(start) + int(step) * np.arange(count, dtype=np.int64)).astype(storage_dtype(dtype))
    return start + step * np.arange(count, dtype=np.float64)


arange = define(
    "graph.arange",
    attrs={"start": FloatAttr(0.0), "limit": FloatAttr(), "step": FloatAttr(1.0), "dtype": ScalarTypeAttr()},
    infer=_arange_infer,
    reference=_arange_reference,
    traits=("pure",),
    doc="start, start + step, ... up to (not including) limit: max(ceil((limit - start) / step), 0) "
    "elements of `dtype` (integer elements wrap to its width, as a cast from i64).",
)


# triu / tril ----------------------------------------------------------------------------------
def _triangle_infer(x: Type, *, k: int) -> Type:
    (t,) = tensors(x)
    if t.rank < 2:
        raise InferError(f"needs rank >= 2, got {t}")
    return t


triu = define(
    "graph.triu",
    operands=("x",),
    attrs={"k": IntAttr(0)},
    infer=_triangle_infer,
    reference=lambda x, *, k: np.triu(x, k),
    traits=("pure",),
    doc="Zero the elements below diagonal `k` of the last two dims (numpy.triu).",
)
tril = define(
    "graph.tril",
    operands=("x",),
    attrs={"k": IntAttr(0)},
    infer=_triangle_infer,
    reference=lambda x, *, k: np.tril(x, k),
    traits=("pure",),
    doc="Zero the elements above diagonal `k` of the last two dims (numpy.tril).",
)


VIEW_RESHAPES = frozenset({"graph.reshape", "graph.reshape_dims", "graph.squeeze", "graph.unsqueeze"})
"""Ops that reinterpret their first operand's row-major elements with a new shape."""


def is_unit_reshape(op: Operation) -> bool:
    """True for a reshape, squeeze or unsqueeze that only adds or drops size-1 dims (statically), so the
    elements keep their order and each index maps to an index of the other shape."""
    if op.name not in VIEW_RESHAPES:
        return False
    source, result = op.operands[0].type, op.results[0].type
    if not (isinstance(source, TensorType) and isinstance(result, TensorType)):
        return False
    return [d for d in source.shape if d != 1] == [d for d in result.shape if d != 1]


def view_offset(op: Operation) -> int | None:
    """The element offset at which ``op``'s result is its operand's row-major memory, or None when it is not
    a view: reshape, squeeze and unsqueeze always are (offset 0); a slice is when the elements it keeps are
    one contiguous run (the axes before the last cut one kept at one index, that one cut to a range with
    step 1, the rest whole), with static shapes."""
    if op.name in VIEW_RESHAPES:
        return 0
    if op.name != "graph.slice":
        return None
    source, result = op.operands[0].type, op.result.type
    if not (isinstance(source, TensorType) and source.is_static and isinstance(result, TensorType)):
        return None
    attrs = op.opdef.attr_kwargs(op)
    shape = source.static_shape
    first = [0] * len(shape)
    count = list(shape)
    for axis, start, end, step in slice_plan(len(shape), attrs["starts"], attrs["ends"], attrs["axes"], attrs["steps"]):
        kept = range(*slice(start, end, step).indices(shape[axis]))
        if len(kept) > 1 and step != 1:
            return None
        first[axis], count[axis] = (kept[0] if kept else 0), len(kept)
    if 0 in count:
        return None
    partial = [a for a in range(len(shape)) if count[a] != shape[a]]
    if partial and any(count[a] != 1 for a in range(partial[-1])):
        return None
    offset, stride = 0, 1
    for axis in reversed(range(len(shape))):
        offset += first[axis] * stride
        stride *= shape[axis]
    return offset
