"""Lowering neural-network ops: convolutions, pooling, batch normalization and resize.

Spatial ops loop over the result in its storage order (loop names by role: ``n``, ``c`` or ``o``,
``oh``, ``ow``) and address data through the layout's (N, C, H, W) axes. A window position outside the
input (padding, or past it in ``ceil_mode``) is skipped by a ``loop.if`` guard, emitted only on the sides
where it can happen; window loops are ``r*`` (channels ``rc``, taps ``rh``, ``rw``). Accumulation
follows the references: in at least f32, the result rounded once to the element type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ..ir.core import Block, Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.graph.nn import _KERNEL_AXES, _LAYOUT_AXES
from ..ir.shapes import normalize_axis
from ..ir.types import BufferType, FloatType, IntegerType, ScalarType, f64, index
from .conv import blocked_conv_applies, conv_tiling, emit_blocked_conv2d, emit_nhwc_conv2d, nhwc_conv_applies
from .kernel import Kernel, compute_type, convert, element_of, lowering, shape_of
from .linalg import Epilogue
from .schedule import element_bits

Combine = Callable[[Value, Value], Value]


def place(axes: Sequence[int], logical: Sequence[Value]) -> list[Value]:
    """Buffer indices for ``logical`` positions whose role ``r`` sits at buffer axis ``axes[r]``."""
    out = list(logical)
    for role, axis in enumerate(axes):
        out[axis] = logical[role]
    return out


@contextmanager
def role_nest(k: Kernel, buffer: Value, axes: Sequence[int], names: Sequence[str]) -> Iterator[list[Value]]:
    """A nest over ``buffer`` in storage order, loops named by role; yields the ivs in role order."""
    roles = [list(axes).index(a) for a in range(len(axes))]
    with k.loops(k.sizes(buffer), [names[r] for r in roles]) as ivs:
        yield [ivs[axes[r]] for r in range(len(axes))]


@contextmanager
def when(conditions: Sequence[Value]) -> Iterator[None]:
    """Build under a ``loop.if`` on the conjunction of ``conditions`` (directly when there are none)."""
    if not conditions:
        yield
        return
    cond = conditions[0]
    for c in conditions[1:]:
        cond = loop.and_(cond, c)
    with loop.if_(cond):
        yield


def fold(
    k: Kernel,
    t: ScalarType,
    init: Value,
    bounds: Sequence[Value],
    names: Sequence[str],
    step: Callable[[list[Value]], tuple[list[Value], Callable[[], Value]]],
    combine: Combine,
) -> Value:
    """Fold terms over a nest into a local accumulator from ``init``, skipping iterations whose conditions fail.

    ``step(ivs)`` gives the conditions and a function building the term (under the guard).
    """
    acc = loop.alloc(type=BufferType((), t, "local"))
    loop.store(init, acc)
    with k.loops(bounds, names) as ivs:
        conditions, term = step(ivs)
        with when(conditions):
            loop.store(combine(loop.load(acc), term()), acc)
    return loop.load(acc)  # type: ignore[no-any-return]


def scaled(k: Kernel, iv: Value, factor: int) -> Value:
    """``iv * factor`` (no op for 1)."""
    return iv if factor == 1 else loop.mul(iv, k.index(factor))  # type: ignore[no-any-return]


def window_index(
    k: Kernel, out: Value, tap: Value, stride: int, dilation: int, pad: int, size: Value, high: bool
) -> tuple[Value, list[Value]]:
    """The input position ``out * stride + tap * dilation - pad`` and the checks that it is inside ``[0, size)``.

    The low check is needed only with padding before; the high one only when ``high`` says windows may run
    past the end.
    """
    position = loop.add(scaled(k, out, stride), scaled(k, tap, dilation))
    checks: list[Value] = []
    if pad:
        position = loop.sub(position, k.index(pad))
        checks.append(loop.cmp(position, k.index(0), predicate="ge"))
    if high:
        checks.append(loop.cmp(position, size, predicate="lt"))
    return position, checks


def _lowest(t: ScalarType) -> object:
    if isinstance(t, FloatType):
        return float("-inf")
    assert isinstance(t, IntegerType)
    return t.min_value


@lowering("graph.conv2d")
def lower_conv2d(op: Operation, k: Kernel) -> None:
    """out[n, o, y, x] = bias[o] + sum over the group's channels and the taps of input * weight (zero padding)."""
    bias = k.inputs[2] if len(k.inputs) == 3 else None
    emit_conv2d(k, op, k.inputs[0], k.inputs[1], bias, k.outputs[0])


def emit_conv2d(
    k: Kernel, op: Operation, x: Value, w: Value, bias: Value | None, out: Value, epilogue: Epilogue | None = None
) -> None:
    """Build loops computing ``out = epilogue(conv2d(x, w) + bias)`` for the graph conv2d ``op``'s attributes.

    A register-blocked kernel of conv.py when one applies (f32 NCHW with stride 1, or NHWC without an
    ``epilogue``; one group) and the ``conv`` config asks for it, else the simple nest.
    ``epilogue(value, indices)`` turns each result element (bias added) into the value stored.
    """
    attrs = op.opdef.attr_kwargs(op)
    tiling = conv_tiling(k, op)
    if tiling is not None and blocked_conv_applies(op, attrs):
        emit_blocked_conv2d(k, x, w, bias, out, attrs, tiling, epilogue)
        return
    if tiling is not None and nhwc_conv_applies(op, attrs) and epilogue is None:
        emit_nhwc_conv2d(k, x, w, bias, out, attrs, tiling)
        return
    axes, kernel_axes = _LAYOUT_AXES[attrs["layout"]], _KERNEL_AXES[attrs["kernel_layout"]]
    strides, padding, dilations, groups = attrs["strides"], attrs["padding"], attrs["dilations"], attrs["groups"]
    acc_t = compute_type(element_of(out))
    in_h, in_w = k.size(x, axes[2]), k.size(x, axes[3])
    per_group = k.size(w, kernel_axes[1])
    taps = [k.size(w, kernel_axes[2]), k.size(w, kernel_axes[3])]
    outs_per_group = k.size(w, kernel_axes[0])
    if groups > 1:
        total, count = outs_per_group, k.index(groups)
        with k.prologue():
            outs_per_group = loop.div(total, count)
    with role_nest(k, out, axes, ("n", "o", "oh", "ow")) as (n, o, oy, ox):
        first_channel = k.index(0)
        if groups > 1:
            first_channel = loop.mul(loop.div(o, outs_per_group), per_group)

        def step(ivs: list[Value]) -> tuple[list[Value], Callable[[], Value]]:
            rc, ry, rx = ivs
            iy, check_y = window_index(k, oy, ry, strides[0], dilations[0], padding[0], in_h, padding[2] > 0)
            ix, check_x = window_index(k, ox, rx, strides[1], dilations[1], padding[1], in_w, padding[3] > 0)

            checks = check_y + check_x

            def term() -> Value:
                # A padded tap adds 0 * weight rather than nothing: NaN where the weight is infinite, as the
                # reference (and torch) compute with explicit zero padding.
                inside = checks[0] if checks else None
                for c in checks[1:]:
                    inside = loop.and_(inside, c)
                y, xx = (iy, ix) if inside is None else (loop.select(inside, i, k.index(0)) for i in (iy, ix))
                channel = rc if groups == 1 else loop.add(first_channel, rc)
                value = convert(loop.load(x, place(axes, [n, channel, y, xx])), acc_t)
                if inside is not None:
                    value = loop.select(inside, value, k.const(0, acc_t))
                weight = loop.load(w, place(kernel_axes, [o, rc, ry, rx]))
                return loop.mul(value, convert(weight, acc_t))  # type: ignore[no-any-return]

            return [], term

        total = fold(k, acc_t, k.const(0, acc_t), [per_group, *taps], ["rc", "rh", "rw"], step, loop.add)
        if bias is not None:
            total = loop.add(total, convert(loop.load(bias, [o]), acc_t))
        indices = place(axes, [n, o, oy, ox])
        if epilogue is not None:
            total = epilogue(total, indices)
        loop.store(convert(total, element_of(out)), out, indices)


@lowering("graph.conv_transpose2d")
def lower_conv_transpose2d(op: Operation, k: Kernel) -> None:
    """Gather form: out[n, o, y, x] sums input[n, c, iy, ix] * weight[c, o % og, ty, tx] over the taps with
    ``y + pad = iy * stride + ty * dilation`` (and likewise for x), then adds the bias."""
    x, w = k.inputs[0], k.inputs[1]
    bias = k.inputs[2] if len(k.inputs) == 3 else None
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    axes = _LAYOUT_AXES[attrs["layout"]]
    strides, padding, dilations, groups = attrs["strides"], attrs["padding"], attrs["dilations"], attrs["groups"]
    acc_t = compute_type(element_of(out))
    sizes = [k.size(x, axes[2]), k.size(x, axes[3])]
    outs_per_group = k.size(w, 1)
    in_per_group = k.size(x, axes[1])
    if groups > 1:
        channels, count = in_per_group, k.index(groups)
        with k.prologue():
            in_per_group = loop.div(channels, count)
    taps = [k.size(w, 2), k.size(w, 3)]
    with role_nest(k, out, axes, ("n", "o", "oh", "ow")) as (n, o, oy, ox):
        first_channel, o_in_group = k.index(0), o
        if groups > 1:
            first_channel = loop.mul(loop.div(o, outs_per_group), in_per_group)
            o_in_group = loop.rem(o, outs_per_group)

        def source(out_iv: Value, tap: Value, axis: int) -> tuple[Value, list[Value]]:
            shifted = loop.sub(loop.add(out_iv, k.index(padding[axis])), scaled(k, tap, dilations[axis]))
            checks = [loop.cmp(shifted, k.index(0), predicate="ge")]
            if strides[axis] == 1:
                checks.append(loop.cmp(shifted, sizes[axis], predicate="lt"))
                return shifted, checks
            stride = k.index(strides[axis])
            position = loop.div(shifted, stride)
            checks.append(loop.cmp(loop.rem(shifted, stride), k.index(0), predicate="eq"))
            checks.append(loop.cmp(position, sizes[axis], predicate="lt"))
            return position, checks

        def step(ivs: list[Value]) -> tuple[list[Value], Callable[[], Value]]:
            rc, ry, rx = ivs
            iy, check_y = source(oy, ry, 0)
            ix, check_x = source(ox, rx, 1)

            def term() -> Value:
                channel = rc if groups == 1 else loop.add(first_channel, rc)
                value = loop.load(x, place(axes, [n, channel, iy, ix]))
                weight = loop.load(w, [channel, o_in_group, ry, rx])
                return loop.mul(convert(value, acc_t), convert(weight, acc_t))  # type: ignore[no-any-return]

            return check_y + check_x, term

        total = fold(k, acc_t, k.const(0, acc_t), [in_per_group, *taps], ["rc", "rh", "rw"], step, loop.add)
        if bias is not None:
            total = loop.add(total, convert(loop.load(bias, [o]), acc_t))
        loop.store(convert(total, element_of(out)), out, place(axes, [n, o, oy, ox]))


def _window_counts(k: Kernel, start: Value, kernel: int, low: int, high: Value) -> Value:
    """How many of the cells ``start .. start + kernel - 1`` lie in ``[low, high)``."""
    end = loop.min(loop.add(start, k.index(kernel)), high)
    return loop.sub(end, loop.max(start, k.index(low)))  # type: ignore[no-any-return]


@lowering("graph.max_pool2d", "graph.avg_pool2d")
def lower_pool2d(op: Operation, k: Kernel) -> None:
    """The maximum (from the lowest value) or the mean of each window's input cells; average divisors count
    input cells, plus the declared padding cells when ``count_include_pad``."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    axes = _LAYOUT_AXES[attrs["layout"]]
    kernel, strides, padding = attrs["kernel"], attrs["strides"], attrs["padding"]
    dilations = attrs.get("dilations", (1, 1))
    is_max = op.name == "graph.max_pool2d"
    t = element_of(x)
    acc_t = t if is_max else compute_type(t)
    sizes = [k.size(x, axes[2]), k.size(x, axes[3])]
    high = [padding[2] > 0 or attrs["ceil_mode"], padding[3] > 0 or attrs["ceil_mode"]]
    with role_nest(k, out, axes, ("n", "c", "oh", "ow")) as (n, c, oy, ox):

        def step(ivs: list[Value]) -> tuple[list[Value], Callable[[], Value]]:
            ry, rx = ivs
            iy, check_y = window_index(k, oy, ry, strides[0], dilations[0], padding[0], sizes[0], high[0])
            ix, check_x = window_index(k, ox, rx, strides[1], dilations[1], padding[1], sizes[1], high[1])
            return check_y + check_x, lambda: convert(loop.load(x, place(axes, [n, c, iy, ix])), acc_t)

        init = k.const(_lowest(t) if is_max else 0, acc_t)
        taps = [k.index(kernel[0]), k.index(kernel[1])]
        total = fold(k, acc_t, init, taps, ["rh", "rw"], step, loop.max if is_max else loop.add)
        if not is_max:
            counts = []
            for axis, iv in enumerate((oy, ox)):
                start = loop.sub(scaled(k, iv, strides[axis]), k.index(padding[axis]))
                if attrs["count_include_pad"]:
                    low, end = -padding[axis], loop.add(sizes[axis], k.index(padding[axis + 2]))
                else:
                    low, end = 0, sizes[axis]
                counts.append(_window_counts(k, start, kernel[axis], low, end))
            total = loop.div(total, convert(loop.mul(counts[0], counts[1]), acc_t))
        loop.store(convert(total, element_of(out)), out, place(axes, [n, c, oy, ox]))


@lowering("graph.global_avg_pool2d", "graph.global_max_pool2d")
def lower_global_pool2d(op: Operation, k: Kernel) -> None:
    """The mean or the maximum over both spatial dims; the maximum starts from the first cell, after a check
    that the spatial dims are not empty at run time (an error, as the graph op's)."""
    x, out = k.inputs[0], k.outputs[0]
    axes = _LAYOUT_AXES[op.opdef.attr_kwargs(op)["layout"]]
    is_max = op.name == "graph.global_max_pool2d"
    acc_t = element_of(x) if is_max else compute_type(element_of(x))
    zero = k.index(0)
    spatial = [k.size(x, axes[2]), k.size(x, axes[3])]
    if is_max:
        k.check_not_empty(spatial, "of an input whose spatial dimensions are empty at run time")
    with role_nest(k, out, axes, ("n", "c", "oh", "ow")) as (n, c, _, _):

        def step(ivs: list[Value]) -> tuple[list[Value], Callable[[], Value]]:
            return [], lambda: convert(loop.load(x, place(axes, [n, c, *ivs])), acc_t)

        if is_max:
            init = loop.load(x, place(axes, [n, c, zero, zero]), loc=op.loc)
            total = fold(k, acc_t, init, spatial, ["rh", "rw"], step, loop.max)
        else:
            total = fold(k, acc_t, k.const(0, acc_t), spatial, ["rh", "rw"], step, loop.add)
            total = loop.div(total, convert(k.product(spatial), acc_t))
        loop.store(convert(total, element_of(out)), out, place(axes, [n, c, zero, zero]))


@lowering("graph.batch_norm")
def lower_batch_norm(op: Operation, k: Kernel) -> None:
    """(x - mean) / sqrt(var + eps) * scale + bias, the parameters read at the channel index, in at least f32."""
    x, scale, bias, mean, var = k.inputs
    out = k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    rank = len(shape_of(x))
    axis = normalize_axis(attrs["axis"], rank)
    acc_t = compute_type(element_of(x))
    with k.loops(k.sizes(out), [f"i{a}" for a in range(rank)]) as ivs:
        _vectorize_innermost(k, ivs, acc_t)

        def param(p: Value) -> Value:
            return convert(loop.load(p, [ivs[axis]]), acc_t)

        centered = loop.sub(convert(loop.load(x, ivs), acc_t), param(mean))
        y = loop.div(centered, loop.sqrt(loop.add(param(var), k.const(attrs["eps"], acc_t))))
        y = loop.add(loop.mul(y, param(scale)), param(bias))
        loop.store(convert(y, element_of(out)), out, ivs)


def _vectorize_innermost(k: Kernel, ivs: Sequence[Value], t: ScalarType) -> None:
    """Put the innermost of a nest (of two loops or more) on the target's lanes of ``t`` times the ``norm``
    config's ``unroll``; the default schedule keeps that factor and makes the outer loops parallel."""
    if len(ivs) < 2:
        return
    block = ivs[-1].owner
    assert isinstance(block, Block) and block.parent is not None and block.parent.parent is not None
    lanes = k.target.lanes(max(32, element_bits(t))) * int(k.knob("norm", "unroll", 1))
    if lanes > 1:
        block.parent.parent.attributes.update(kind="vectorize", factor=lanes)


def _source_coordinate(k: Kernel, iv: Value, size: Value, out: int, mode: str) -> Value:
    """Where output position ``iv`` samples an input axis of ``size`` (f64, as the reference computes)."""
    i = convert(iv, f64)
    n = convert(size, f64)
    if mode == "asymmetric":
        return loop.div(loop.mul(i, n), k.const(float(out), f64))  # type: ignore[no-any-return]
    if mode == "align_corners":
        if out == 1:
            return k.const(0.0, f64)
        span = loop.sub(n, k.const(1.0, f64))
        return loop.div(loop.mul(i, span), k.const(float(out - 1), f64))  # type: ignore[no-any-return]
    if mode == "pytorch_half_pixel" and out == 1:
        return k.const(-0.5, f64)
    centre = loop.div(loop.mul(loop.add(i, k.const(0.5, f64)), n), k.const(float(out), f64))
    return loop.sub(centre, k.const(0.5, f64))  # type: ignore[no-any-return]


def _nearest(k: Kernel, coordinate: Value, mode: str) -> Value:
    """The rounded coordinate (still f64) by ``nearest_mode``."""
    half = k.const(0.5, f64)
    if mode == "floor":
        return loop.floor(coordinate)  # type: ignore[no-any-return]
    if mode == "ceil":
        return loop.neg(loop.floor(loop.neg(coordinate)))  # type: ignore[no-any-return]
    if mode == "round_prefer_floor":
        return loop.neg(loop.floor(loop.neg(loop.sub(coordinate, half))))  # type: ignore[no-any-return]
    return loop.floor(loop.add(coordinate, half))  # type: ignore[no-any-return]


def _clamped_index(k: Kernel, coordinate: Value, last: Value) -> Value:
    """An integral f64 coordinate clamped to ``[0, last]``, as an index."""
    top = convert(last, f64)
    return loop.cast(loop.max(loop.min(coordinate, top), k.const(0.0, f64)), dtype=index)  # type: ignore[no-any-return]


@lowering("graph.resize")
def lower_resize(op: Operation, k: Kernel) -> None:
    """Nearest: copy the input cell at the rounded, clamped source position. Bilinear: interpolate in f64
    along the height, then the width, between the clamped floor and floor + 1 cells (the reference's order)."""
    x, out = k.inputs[0], k.outputs[0]
    attrs = op.opdef.attr_kwargs(op)
    axes = _LAYOUT_AXES[attrs["layout"]]
    size, coordinate_mode = attrs["size"], attrs["coordinate_mode"]
    spatial = [k.size(x, axes[2]), k.size(x, axes[3])]
    lasts = [k.last(x, axes[2]), k.last(x, axes[3])]
    with role_nest(k, out, axes, ("n", "c", "oh", "ow")) as (n, c, oy, ox):
        coordinates = [_source_coordinate(k, iv, spatial[a], size[a], coordinate_mode) for a, iv in enumerate((oy, ox))]
        if attrs["mode"] == "nearest":
            iy, ix = (
                _clamped_index(k, _nearest(k, co, attrs["nearest_mode"]), lasts[a]) for a, co in enumerate(coordinates)
            )
            loop.store(loop.load(x, place(axes, [n, c, iy, ix])), out, place(axes, [n, c, oy, ox]))
            return
        one = k.const(1.0, f64)
        corners: list[tuple[Value, Value, Value]] = []
        for a, co in enumerate(coordinates):
            low = loop.floor(co)
            corners.append(
                (_clamped_index(k, low, lasts[a]), _clamped_index(k, loop.add(low, one), lasts[a]), loop.sub(co, low))
            )
        (y0, y1, fy), (x0, x1, fx) = corners

        def lerp(a: Value, b: Value, fraction: Value) -> Value:
            return loop.add(loop.mul(a, loop.sub(one, fraction)), loop.mul(b, fraction))  # type: ignore[no-any-return]

        def column(ix: Value) -> Value:
            top = convert(loop.load(x, place(axes, [n, c, y0, ix])), f64)
            bottom = convert(loop.load(x, place(axes, [n, c, y1, ix])), f64)
            return lerp(top, bottom, fy)

        y = lerp(column(x0), column(x1), fx)
        loop.store(convert(y, element_of(out)), out, place(axes, [n, c, oy, ox]))
