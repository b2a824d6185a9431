"""Splitting graph ops whose kernels would bind more storage buffers than a WebGPU target allows.

A kernel binds one storage buffer per operand and result of its graph op (``max_storage_buffers_per_shader_stage``,
8 by default, is the WebGPU specification's minimum: tinygrad fails past it). Before lowering,
:func:`split_for_storage_buffers` rewrites a copy of the graph module so that each kernel fits:

- a ``graph.fused`` group over the limit is cut into consecutive groups of its ops, each passing one value
  to the next and binding at most the limit (a single op where no group of several fits);
- a ``graph.concat`` of more inputs than the limit allows becomes a tree of concats of at most
  ``limit - 1`` inputs each (concatenation is associative).

What still does not fit (an op that alone binds more, at a very low limit) is left for the limit pass
:func:`~tensorium.lowering.webgpu_limits.check_storage_buffers`, whose error names the kernel.
"""

from __future__ import annotations

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Region, Value
from ..ir.dialects import graph
from ..ir.dialects.builtin import func_body, lookup_func
from ..ir.dialects.graph.fusion import fused, yield_
from ..ir.rewrite import is_trivially_dead
from ..ir.shapes import normalize_axes, normalize_axis
from ..ir.types import FloatType, IntegerType, TensorType
from ..targets import Target
from .webgpu_int64 import held_in_i32
from .webgpu_limits import storage_bytes

__all__ = ["band_axis", "bindings_of", "split_for_binding_size", "split_for_storage_buffers", "static_bytes"]


def bindings_of(op: Operation) -> int:
    """Storage buffers the kernel of graph op ``op`` binds: one per operand and result, and one more for the
    status buffer of a kernel whose i64 values it may check at run time (:func:`_status_bindings`)."""
    return len(op.operands) + len(op.results) + _status_bindings([op])


_I64_ARITHMETIC = frozenset(
    {"graph.add", "graph.sub", "graph.mul", "graph.neg", "graph.div", "graph.reduce_sum", "graph.reduce_prod"}
)
"""Graph ops whose i64 results the proof may leave to run-time overflow checks."""


def _status_bindings(ops: list[Operation]) -> int:
    """1 where one of ``ops`` (or of the groups among them) may check its i64 values at run time, which needs a
    status buffer (:func:`~tensorium.lowering.webgpu_int64.guard_i64`): a cast to i64 from a float or a u32, or
    i64 arithmetic (:data:`_I64_ARITHMETIC`); else 0. Conservative: the proof decides later whether it checks."""
    for op in ops:
        for inner in op.walk():
            if not inner.results or not isinstance(result := inner.results[0].type, TensorType):
                continue
            if not held_in_i32(result.element):
                continue
            if inner.name in _I64_ARITHMETIC:
                return 1
            source = inner.operands[0].type if inner.name == "graph.cast" else None
            if isinstance(source, TensorType) and (
                isinstance(source.element, FloatType)
                or (
                    isinstance(source.element, IntegerType) and not source.element.signed and source.element.width == 32
                )
            ):
                return 1
    return 0


def split_for_storage_buffers(module: Operation, target: Target, func: str = "main") -> Operation:
    """``module`` when every op of ``@func`` fits the target's storage-buffer limit, else a rewritten copy
    (see the module docstring); the caller's module is never changed."""
    limit = target.limit("max_storage_buffers_per_shader_stage")
    main = lookup_func(module, func)
    if main is None or all(bindings_of(op) <= limit for op in func_body(main).ops):
        return module
    module = module.clone()
    main = lookup_func(module, func)
    assert main is not None
    for op in list(func_body(main).ops):
        if bindings_of(op) <= limit:
            continue
        if op.name == "graph.fused":
            _split_fused(op, limit)
        elif op.name == "graph.concat" and limit >= 3:
            _split_concat(op, limit - 1)
    return module


def split_for_binding_size(module: Operation, target: Target, func: str = "main") -> Operation:
    """``module`` when every tensor of ``@func`` fits ``max_storage_buffer_binding_size``, else a rewritten copy in
    which ops that bind a larger tensor work on bands along its :func:`band_axis` (axis 0, or the first dim over 1
    of a batch of one): each band's operands are slices along it (views, copied out of the large buffer), the op
    runs per band, and a concat along it (buffer copies, no binding) joins the bands into the large result. Row-wise
    ops are cut (elementwise ops, softmax over another axis, reductions that keep the band axis, matmuls of A's rows
    by a 2-D B, batched matmuls by batches of A and B, gathers along a later axis, transposes, convolutions and
    pools of a batch of images, pools of one image's channels, a convolution of one NCHW image in bands of its
    output channels); fused groups binding a large tensor are split into their ops first. Where one row alone is
    over the limit, each band is one row, cut again along its own band axis (one attention head's scores, in bands
    of their rows). A transpose's band is a slice of its source along another axis, no view: where the source is
    over the limit, that slice is taken of each view of the source's own bands and joined by copies
    (:func:`_slice`). A lookup in a table over the limit along its band axis (``graph.embedding``, ``graph.gather``:
    an LM's token embedding) is cut along that axis: each band gathers at its own indices (clamped into the band),
    and a chain of ``graph.where`` keeps, for each index, the band that holds its row (exact: each row comes from
    one band). A matmul by a 2-D B over the limit (a weight: an LM head, say) is cut along B's rows, which are
    contiguous, so each band is a view: with ``transpose_b`` (B stored [N, K]) each band makes a band of the
    result's columns, joined by a concat along the last axis; otherwise (B stored [K, N]) each band multiplies the
    matching slice of A's last axis and the partial products are added. What cannot be cut is left to the limit
    pass, which names it."""
    limit = target.limit("max_storage_buffer_binding_size")
    main = lookup_func(module, func)
    if main is None or not any(_too_large(op, limit) for op in func_body(main).ops):
        return module
    module = module.clone()
    main = lookup_func(module, func)
    assert main is not None
    for op in list(func_body(main).ops):
        if op.name == "graph.fused" and _too_large(op, limit):
            _split_fused(op, 1)
    for op in list(func_body(main).ops):
        if op.name == "graph.matmul" and static_bytes(op.operands[1]) > limit and op.operands[1].type.rank == 2:  # type: ignore[attr-defined]
            _cut_weight(op, limit)
    for op in list(func_body(main).ops):
        lookup = _lookup_axis(op)
        if lookup is not None and static_bytes(op.operands[0]) > limit:
            _cut_table(op, lookup, limit)
    for op in list(func_body(main).ops):
        cut = _row_operands(op)
        if cut is not None and _too_large(op, limit):
            _cut_rows(op, cut, limit)
    _read_pieces_of_joins(func_body(main))
    return split_for_storage_buffers(module, target, func)


def _read_pieces_of_joins(body: Block) -> None:
    """Slices of a ``graph.concat`` along its axis that take whole pieces of it, or a part of one piece, read those
    pieces instead; joins left unused are erased. Where one op's bands feed the next op's bands (attention's
    scores, their softmax, its product by the values), the large joined tensors between them are then never built:
    no buffer over the binding size, or over ``max_buffer_size``, holds them."""
    changed = True
    while changed:
        changed = False
        for op in list(body.ops):
            replacement = _piece_read(op) if op.name == "graph.slice" else None
            if replacement is not None:
                _replace(op, replacement)
                changed = True
    while True:
        dead = [op for op in body.ops if op.name in ("graph.concat", "graph.slice") and is_trivially_dead(op)]
        if not dead:
            return
        for op in reversed(dead):
            op.erase()


def _piece_read(op: Operation) -> Value | None:
    """What slice ``op`` reads of the concat it slices, as that concat's pieces (inserted before ``op``: the piece
    itself, a concat of whole pieces, or a slice of one piece); None where it is no slice of a concat along the
    concat's axis with step 1 and bounds within it."""
    join = op.operands[0].defining_op()
    t = op.operands[0].type
    if join is None or join.name != "graph.concat" or not isinstance(t, TensorType) or not t.is_static:
        return None
    axes, starts, ends, steps = (list(op.attr(name) or []) for name in ("axes", "starts", "ends", "steps"))
    if len(axes) != 1 or (steps and steps != [1]) or len(starts) != 1 or len(ends) != 1:
        return None
    axis = normalize_axis(int(axes[0]), t.rank)
    start, end = int(starts[0]), int(ends[0])
    if axis != normalize_axis(int(join.attr("axis")), t.rank) or not 0 <= start < end <= t.static_shape[axis]:
        return None
    spans = []
    first = 0
    for piece in join.operands:
        size = piece.type.static_shape[axis]  # type: ignore[attr-defined]
        if first < end and first + size > start:
            spans.append((piece, first, first + size))
        first += size
    with InsertionPoint.before_op(op) as point:
        if spans[0][1] == start and spans[-1][2] == end:
            if len(spans) == 1:
                return spans[0][0]  # type: ignore[no-any-return]
            pieces = [piece for piece, _, _ in spans]
            return point.insert(graph.concat.build(pieces, {"axis": axis}, loc=op.loc)).results[0]  # type: ignore[no-any-return]
        if len(spans) == 1:
            piece, lo, _ = spans[0]
            return _rows(point, piece, start - lo, end - lo, op, axis)
    return None


def _too_large(op: Operation, limit: int) -> bool:
    return any(static_bytes(v) > limit for v in _values(op))


def static_bytes(value: Value) -> int:
    """Bytes of ``value`` in WebGPU storage (:func:`.webgpu_limits.storage_bytes`) if a static tensor, else 0."""
    t = value.type
    return storage_bytes(t) if isinstance(t, TensorType) and t.is_static else 0


def band_axis(t: TensorType) -> int | None:
    """The axis along which static tensor type ``t`` is cut into bands: its first dim over 1 (every dim before it
    is 1, so a band is one contiguous run of its memory: a view, and bands joined along it are buffer copies);
    None when every dim is 1."""
    return next((a for a, d in enumerate(t.static_shape) if d > 1), None)


def _row_operands(op: Operation) -> tuple[int, list[int | None]] | None:
    """The result's band axis (:func:`band_axis`) and, per operand, the axis along which the operand is cut with
    the result's bands (None: the band reads it whole), when band ``i`` of the result depends on band ``i`` of
    those operands only; None for other ops."""
    if len(op.results) != 1 or not all(isinstance(v.type, TensorType) and v.type.is_static for v in _values(op)):
        return None  # a band of a dynamic operand cannot be sized when compiling
    result = op.results[0].type
    assert isinstance(result, TensorType)
    axis = band_axis(result)
    if axis is None:
        return None
    rows = result.static_shape[axis]
    attrs = op.opdef.attr_kwargs(op) if op.opdef is not None else {}
    if op.has_trait("elementwise"):
        return axis, [_aligned_axis(v, result.rank, axis, rows) for v in op.operands]
    if op.name in ("graph.softmax", "graph.log_softmax") and normalize_axis(attrs["axis"], result.rank) != axis:
        return axis, [axis]
    if op.name == "graph.transpose":
        perm = [normalize_axis(a, result.rank) for a in attrs["perm"]]
        return axis, [perm[axis]]
    if not op.operands:
        return None
    source = op.operands[0].type
    assert isinstance(source, TensorType)  # static, as every operand here
    if op.name == "graph.conv2d" and _output_channel_bands(op, attrs, source, axis):
        return axis, [None, 0, 0][: len(op.operands)]
    cut = band_axis(source)
    if cut is None or source.static_shape[cut] != rows:
        return None
    if op.name.startswith("graph.reduce_") and "axes" in attrs:
        axes = normalize_axes(attrs["axes"], source.rank)
        kept = cut if attrs.get("keepdims") else cut - sum(a < cut for a in axes)
        return (kept, [cut]) if cut not in axes and kept == axis else None
    if op.name == "graph.matmul" and not attrs.get("transpose_a") and cut < source.rank - 1 == result.rank - 1:
        return _product_cuts(op.operands[1].type, source, cut, axis)
    if op.name in WINDOW_OPS and cut == axis:
        channels = 1 if attrs.get("layout", "NCHW") == "NCHW" else 3
        # pooling works channel by channel; a convolution mixes the channels, so only its batch is cut here
        if cut == 0 or (cut == channels and op.name != "graph.conv2d"):
            return axis, [cut, *[None] * (len(op.operands) - 1)]
        return None
    if op.name == "graph.gather" and cut < normalize_axis(int(attrs.get("axis", 0)), source.rank) and cut == axis:
        return axis, [cut, None]
    return None


def _product_cuts(b: object, a: TensorType, cut: int, axis: int) -> tuple[int, list[int | None]] | None:
    """The cuts of a matmul of A (``a``, cut along ``cut``) by B (``b``) in bands of its result's ``axis``: A's rows
    by a 2-D B, read whole; batches of a batched B too, B cut along the same batch axis (read whole where it is 1
    there, broadcast); or, where every batch dim is 1, A's rows by B's one matrix."""
    if not isinstance(b, TensorType) or cut != axis or b.rank not in (2, a.rank):
        return None
    if b.rank == 2 or cut == a.rank - 2:
        return axis, [cut, None]
    own = b.static_shape[cut]
    if own == a.static_shape[cut]:
        return axis, [cut, cut]
    return (axis, [cut, None]) if own == 1 else None


WINDOW_OPS = (
    "graph.conv2d",
    "graph.max_pool2d",
    "graph.avg_pool2d",
    "graph.global_avg_pool2d",
    "graph.global_max_pool2d",
)
"""Ops over windows of an NCHW or NHWC image: cut along the batch, and (all but the convolution) along the channels."""


def _output_channel_bands(op: Operation, attrs: dict[str, object], source: TensorType, axis: int) -> bool:
    """Whether convolution ``op`` (one NCHW image, no groups, an ``O...`` kernel layout) is cut into bands of its
    output channels: each band convolves the whole input with a view of the weight's rows (and the bias's)."""
    return (
        attrs.get("layout", "NCHW") == "NCHW"
        and source.static_shape[0] == 1
        and attrs.get("groups", 1) == 1
        and str(attrs.get("kernel_layout", "OIHW")).startswith("O")
        and axis == 1
    )


def _values(op: Operation) -> tuple[Value, ...]:
    return (*op.operands, *op.results)


def _aligned_axis(value: Value, rank: int, axis: int, rows: int) -> int | None:
    """The axis of elementwise operand ``value`` that broadcasts to ``axis`` of a rank-``rank`` result of ``rows``
    along it, when ``value`` has those rows there (not broadcast along it); else None."""
    t = value.type
    assert isinstance(t, TensorType)
    own = axis - (rank - t.rank)
    return own if own >= 0 and t.static_shape[own] == rows else None


def _cut_rows(op: Operation, axes: tuple[int, list[int | None]], limit: int) -> None:
    """Replace ``op`` by per-band copies of it joined by a concat along the result's band axis (see
    split_for_binding_size). Where one row alone is over ``limit``, the bands are single rows, each cut again
    along its own band axis where that fits (the scores of one attention head, cut into bands of its rows);
    where it does not, ``op`` stays as it is and the limit pass names the tensor."""
    axis, cuts = axes
    result = op.results[0].type
    assert isinstance(result, TensorType)
    rows = result.static_shape[axis]
    row_bytes = _row_bytes(op, axes)
    band = _band(limit, row_bytes, rows)
    deeper = band is None and rows > 1 and row_bytes > limit
    if band is None and not deeper:
        return
    block = op.parent
    assert block is not None
    existing = {id(o) for o in block.ops} if deeper else set()  # what an undo of the second level keeps
    attrs = _attrs(op)
    values = list(op.operands)
    parts: list[Value] = []
    with InsertionPoint.before_op(op) as point:
        for start in range(0, rows, band or 1):
            end = min(rows, start + (band or 1))
            operands = [v if c is None else _slice(point, v, c, start, end, op, limit) for v, c in zip(values, cuts)]
            parts.append(point.insert(op.opdef.build(operands, attrs, loc=op.loc)).results[0])
        joined = point.insert(graph.concat.build(parts, {"axis": axis}, loc=op.loc))
    if deeper:
        bands = [part.defining_op() for part in parts]
        nested = [(b, _row_operands(b)) for b in bands if b is not None]
        if any(n is None or _rows_per_band(b, n, limit) is None for b, n in nested):
            for new in reversed([o for o in block.ops if id(o) not in existing]):
                new.erase()
            return
        for b, n in nested:
            assert n is not None
            _cut_rows(b, n, limit)
    _replace(op, joined.results[0])


def _row_bytes(op: Operation, axes: tuple[int, list[int | None]]) -> int:
    """The bytes of one row, along the band axis, of the largest of ``op``'s result and the operands it cuts."""
    axis, cuts = axes
    rows = op.results[0].type.static_shape[axis]  # type: ignore[attr-defined]
    cut_values = [v for v, c in zip(op.operands, cuts) if c is not None]
    return max(static_bytes(v) // rows for v in (*cut_values, op.results[0]))


def _rows_per_band(op: Operation, axes: tuple[int, list[int | None]], limit: int) -> int | None:
    """Rows per band of ``op`` cut along ``axes`` (:func:`_band`)."""
    return _band(limit, _row_bytes(op, axes), op.results[0].type.static_shape[axes[0]])  # type: ignore[attr-defined]


def _slice(point: InsertionPoint, value: Value, axis: int, start: int, end: int, op: Operation, limit: int) -> Value:
    """``value[start:end]`` along ``axis``. Where that is not a view (a dim before ``axis`` is over 1) of a ``value``
    over ``limit``, a slice kernel would bind ``value`` whole: the slice is then taken of each view of ``value``'s
    own bands (along its :func:`band_axis`, which comes before ``axis``; single rows over ``limit`` are cut the
    same way along their next axis) and the pieces joined along that axis (copies)."""
    t = value.type
    assert isinstance(t, TensorType)
    own = band_axis(t)
    if own is None or own >= axis or static_bytes(value) <= limit:
        return _rows(point, value, start, end, op, axis)
    rows = t.static_shape[own]
    band = max(1, limit // (static_bytes(value) // rows))
    pieces = [
        _slice(point, _rows(point, value, first, min(rows, first + band), op, own), axis, start, end, op, limit)
        for first in range(0, rows, band)
    ]
    return point.insert(graph.concat.build(pieces, {"axis": own}, loc=op.loc)).results[0]  # type: ignore[no-any-return]


def _band(limit: int, row_bytes: int, rows: int) -> int | None:
    """Rows per band when rows of ``row_bytes`` are cut to fit ``limit``; None when a row alone is over it (the limit
    pass names the tensor) or all ``rows`` fit already."""
    band = limit // max(1, row_bytes)
    return band if 1 <= band < rows else None


def _bands_of(value: Value, limit: int, axis: int = 0) -> tuple[int, int] | None:
    """(rows, rows per band) of static tensor ``value`` cut along ``axis`` (0 by default) to fit ``limit``, as
    :func:`_band`."""
    t = value.type
    assert isinstance(t, TensorType)
    rows = t.static_shape[axis]
    band = _band(limit, static_bytes(value) // rows, rows)
    return None if band is None else (rows, band)


def _attrs(op: Operation) -> dict[str, object]:
    """``op``'s attributes as its builder takes them (the ones set)."""
    return {k: v for k, v in op.opdef.attr_kwargs(op).items() if v is not None} if op.opdef is not None else {}


def _rows(point: InsertionPoint, value: Value, start: int, end: int, op: Operation, axis: int = 0) -> Value:
    """Rows ``start:end`` (along ``axis``, 0 by default) of ``value``: a ``graph.slice`` inserted at ``point`` with
    ``op``'s location (along axis 0, a view of a large buffer)."""
    bounds = {"starts": [start], "ends": [end], "axes": [axis], "steps": [1]}
    return point.insert(graph.slice_.build([value], bounds, loc=op.loc)).results[0]  # type: ignore[no-any-return]


def _replace(op: Operation, value: Value) -> None:
    """Hand ``op``'s result (and its name) over to ``value``, and erase ``op``."""
    value.name_hint = op.results[0].name_hint
    op.results[0].replace_all_uses_with(value)
    op.erase()


def _lookup_axis(op: Operation) -> int | None:
    """The axis along which ``op`` picks whole slices of a static table, its operand 0, at its indices, operand 1,
    when that is the table's :func:`band_axis` (an embedding's rows; a gather's axis): else None."""
    if op.name not in ("graph.embedding", "graph.gather"):
        return None
    table, indices = (v.type for v in op.operands)
    if not (isinstance(table, TensorType) and table.is_static and isinstance(indices, TensorType)):
        return None
    axis = 0 if op.name == "graph.embedding" else normalize_axis(int(op.attr("axis", 0)), table.rank)
    return axis if axis == band_axis(table) else None


def _cut_table(op: Operation, axis: int, limit: int) -> None:
    """Replace lookup ``op`` by lookups in bands of its table along ``axis`` (see split_for_binding_size)."""
    table, indices = op.operands
    table_type, index_type = table.type, indices.type
    assert isinstance(table_type, TensorType) and isinstance(index_type, TensorType)
    bands = _bands_of(table, limit, axis)
    if bands is None:
        return
    rows, band = bands
    attrs = _attrs(op)
    element = index_type.element
    signed = bool(getattr(element, "signed", True))
    # the result is table[:axis] (all 1) + indices + table[axis + 1:]; where() broadcasts the leading 1s
    trailing = list(range(index_type.rank, index_type.rank + table_type.rank - 1 - axis))
    with InsertionPoint.before_op(op) as point:

        def build(opdef: object, operands: list[Value], **attributes: object) -> Value:
            return point.insert(opdef.build(operands, attributes, loc=op.loc)).results[0]  # type: ignore[attr-defined]

        def scalar(value: int) -> Value:
            attr = DenseAttr(np.array(value), TensorType((), element))
            return point.insert(graph.constant.build([], {"value": attr}, loc=op.loc)).results[0]

        zero = scalar(0)
        index = indices
        if op.name == "graph.gather" and signed:  # negative indices count from the table's end
            index = build(graph.where, [build(graph.lt, [index, zero]), build(graph.add, [index, scalar(rows)]), index])
        picked: Value | None = None
        for start in range(0, rows, band):
            end = min(rows, start + band)
            piece = _rows(point, table, start, end, op, axis)
            local = build(graph.sub, [index, scalar(start)]) if start else index
            inside = build(graph.and_, [build(graph.ge, [local, zero]), build(graph.lt, [local, scalar(end - start)])])
            part = build(op.opdef, [piece, build(graph.where, [inside, local, zero])], **attrs)
            if picked is None:
                picked = part
                continue
            mask = build(graph.unsqueeze, [inside], axes=trailing) if trailing else inside
            picked = build(graph.where, [mask, part, picked])
    assert picked is not None
    _replace(op, picked)


def _cut_weight(op: Operation, limit: int) -> None:
    """Replace matmul ``op`` by matmuls by bands of rows of its B (see split_for_binding_size)."""
    a, b = op.operands
    result = op.results[0].type
    assert isinstance(result, TensorType)
    bands = _bands_of(b, limit)
    if bands is None:
        return
    rows, band = bands
    attrs = _attrs(op)
    transposed = bool(attrs.get("transpose_b"))
    if attrs.get("transpose_a") and not transposed:
        return
    a_rank = a.type.rank  # type: ignore[attr-defined]
    parts: list[Value] = []
    with InsertionPoint.before_op(op) as point:
        for start in range(0, rows, band):
            end = min(rows, start + band)
            piece = _rows(point, b, start, end, op)
            lhs = a if transposed else _rows(point, a, start, end, op, axis=a_rank - 1)
            parts.append(point.insert(graph.matmul.build([lhs, piece], attrs, loc=op.loc)).results[0])
        joined: Value
        if transposed:
            joined = point.insert(graph.concat.build(parts, {"axis": result.rank - 1}, loc=op.loc)).results[0]
        else:
            joined = parts[0]
            for part in parts[1:]:
                joined = point.insert(graph.add.build([joined, part], {}, loc=op.loc)).results[0]
    _replace(op, joined)


def _split_fused(op: Operation, limit: int) -> None:
    """Replace fused group ``op`` by consecutive groups of its ops (single ops where a group would not fit),
    each binding at most ``limit`` buffers and passing one value on."""
    body = op.regions[0].block
    terminator = body.terminator
    assert terminator is not None
    ops = [inner for inner in body.ops if inner is not terminator]
    mapping: dict[Value, Value] = dict(zip(body.args, op.operands))
    start = 0
    with InsertionPoint.before_op(op) as point:
        while start < len(ops):
            end = start
            for stop in range(start + 1, len(ops)):
                segment = ops[start : stop + 1]
                if len(_inputs(segment)) + 1 + _status_bindings(segment) > limit:
                    break
                if _closed(segment, terminator):
                    end = stop
            segment = ops[start : end + 1]
            point.insert(_outlined(segment, mapping) if len(segment) > 1 else segment[0].clone(mapping))
            start = end + 1
    for result, value in zip(op.results, terminator.operands):
        result.replace_all_uses_with(mapping.get(value, value))
    op.erase()


def _inputs(segment: list[Operation]) -> list[Value]:
    """The values ``segment`` uses that it does not make, in first-use order."""
    made = {id(r) for o in segment for r in o.results}
    found: list[Value] = []
    for o in segment:
        found += [v for v in o.operands if id(v) not in made and v not in found]
    return found


def _closed(segment: list[Operation], terminator: Operation) -> bool:
    """Whether only the last op's result of ``segment`` is used after it (so one fused op can stand for it)."""
    members = {id(o) for o in segment}
    for o in segment[:-1]:
        for r in o.results:
            if any(id(use.owner) not in members or use.owner is terminator for use in r.uses):
                return False
    return True


def _outlined(segment: list[Operation], mapping: dict[Value, Value]) -> Operation:
    """A new ``graph.fused`` op computing ``segment`` (operands through ``mapping``, which learns its result)."""
    inputs = _inputs(segment)
    block = Block([v.type for v in inputs], [v.name_hint for v in inputs])
    inner: dict[Value, Value] = dict(zip(inputs, block.args))
    for o in segment:
        block.append(o.clone(inner))
    output = segment[-1].results[0]
    with InsertionPoint(block):
        yield_(inner[output])
    group = fused.build([mapping.get(v, v) for v in inputs], result_types=[output.type], loc=segment[-1].loc)
    group.add_region(Region([block]))
    mapping[output] = group.results[0]
    return group


def _split_concat(op: Operation, width: int) -> None:
    """Replace ``op`` (a concat of more than ``width`` inputs) by a tree of concats of at most ``width``."""
    axis = op.attr("axis")
    values = list(op.operands)
    with InsertionPoint.before_op(op) as point:
        while len(values) > width:
            joined = []
            for start in range(0, len(values), width):
                chunk = values[start : start + width]
                if len(chunk) == 1:
                    joined.append(chunk[0])
                    continue
                part = graph.concat.build(chunk, {"axis": axis}, loc=op.loc)
                point.insert(part)
                joined.append(part.results[0])
            values = joined
        last = graph.concat.build(values, {"axis": axis}, loc=op.loc)
        point.insert(last)
    _replace(op, last.results[0])
