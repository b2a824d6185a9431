"""Register-blocked convolutions for f32, one group: direct NCHW / OIHW (stride 1), and NHWC / HWIO as an
implicit GEMM (any strides and dilations).

**NCHW.**
Per image, the input is first copied into a zero-padded buffer (one extra channel plane of zeros at
the end, so that vector reads running past a row's end stay inside it). Then, for each output row and
each tile of ``mr`` output channels x ``nr`` output columns, the tile is accumulated over every input
channel and tap with one fused multiply-add per element: the ``nr`` columns on vector lanes read
consecutive padded-input elements, the ``mr`` rows unrolled broadcast one weight each, so the tile
stays in vector registers as in the blocked GEMM. Output rows run in parallel.

The accumulated tile is copied through a small staging buffer to the output (``nr`` or fewer columns)
with the optional ``epilogue`` (bias is applied the same way), so a row narrower than ``nr`` costs
only lanes, not a slower kernel.

**NHWC.** A convolution is a matrix product of the im2col matrix (one row per output pixel, one column per
tap and input channel) and the HWIO weight read as a [KH * KW * C, O] matrix, whose rows are contiguous:
the GEMM's B panels without packing. The input is copied into a zero-padded NHWC buffer when there is
padding; then each tile of ``mr`` output pixels (counted across rows and images, so no lanes are lost at a
row's end) x ``nr`` output channels is accumulated in vector registers as in the blocked GEMM, each
pixel's row of the im2col matrix read in place from the padded input. Pixel tiles (or channel panels when
there are many) run in parallel. The layout pass turns convolution nets to this form.

Other convolutions (grouped, f16, other layout pairs, ...) use the simple nest in nn.py.

**Knobs.** Both register-blocked kernels are the family ``conv`` of :mod:`tensorium.lowering.space`:
``algo`` (``blocked``, or the simple nest), ``mr`` (rows of the tile: output channels for NCHW, output
pixels for NHWC), ``nv`` (vector registers across the tile: ``nr = nv x lanes`` columns), and ``split``,
which loop runs in parallel (NCHW: output ``rows`` or channel tiles; NHWC: ``pixels`` tiles or ``channels``
panels). Legal tiles keep the ``mr x nv`` accumulators, the ``nv`` vectors of the streamed operand and one
broadcast in the target's vector registers. The default rule takes ``mr = 6`` and the most vectors that
fit: 6 x 4 vectors of 16 on AVX-512 (32 registers), 6 x 2 vectors of 8 on AVX2 (16 registers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import BufferType, TensorType, f32
from ..targets import Target
from .kernel import Kernel, shape_of
from .linalg import Epilogue
from .space import Config, Family, Knob, Setting, Space, default_config, register_family

ROWS = (1, 2, 3, 4, 6, 8)
"""Legal rows of a register tile (``mr``)."""
VECTORS = (1, 2, 4)
"""Legal vector registers across a register tile (``nv``): powers of two, as LLVM's vectorization widths
must be (a width of 3 vectors is ignored and the tile runs on scalars, ten times slower)."""
DEFAULT_ROWS = 6


@dataclass(frozen=True)
class ConvTiling:
    """The register tile of a blocked convolution: ``mr`` rows x ``nr`` columns (``nv`` vectors of ``lanes``),
    and which loop runs in parallel (``split``)."""

    mr: int
    nr: int
    lanes: int
    split: str


def fits(mr: int, nv: int, registers: int) -> bool:
    """Whether an ``mr x nv`` tile of accumulators, the ``nv`` vectors it multiplies and one broadcast fit in
    ``registers`` vector registers (beyond that the tile spills to the stack in the innermost loop)."""
    return mr * nv + nv + 1 <= registers


def _registers(target: Target) -> int:
    return target.vector_registers or 16  # targets without vectors (the interpreter) build scalar tiles


def _f32_static_one_group(op: Operation, attrs: dict[str, Any]) -> bool:
    types = [v.type for v in op.operands] + [op.results[0].type]
    return (
        all(getattr(t, "element", None) == f32 and getattr(t, "is_static", False) for t in types)
        and attrs["groups"] == 1
    )


def blocked_conv_applies(op: Operation, attrs: dict[str, Any]) -> bool:
    """Whether ``emit_blocked_conv2d`` handles this conv2d (f32, NCHW/OIHW, stride 1, one group, static)."""
    return (
        _f32_static_one_group(op, attrs)
        and attrs["layout"] == "NCHW"
        and attrs["kernel_layout"] == "OIHW"
        and tuple(attrs["strides"]) == (1, 1)
    )


def nhwc_conv_applies(op: Operation, attrs: dict[str, Any]) -> bool:
    """Whether ``emit_nhwc_conv2d`` handles this conv2d (f32, NHWC/HWIO, one group, static)."""
    return _f32_static_one_group(op, attrs) and attrs["layout"] == "NHWC" and attrs["kernel_layout"] == "HWIO"


def emit_nhwc_conv2d(
    k: Kernel, x: Value, w: Value, bias: Value | None, out: Value, attrs: dict[str, Any], tiling: ConvTiling
) -> None:
    """The implicit-GEMM convolution ``out = conv(x, w) + bias`` for NHWC / HWIO (see the module docstring)."""
    batch, height, width, channels = _static(x)
    taps_h, taps_w, _, outs = _static(w)
    out_h, out_w = _static(out)[1:3]
    top, left, bottom, right = attrs["padding"]
    (stride_h, stride_w), (dil_h, dil_w) = attrs["strides"], attrs["dilations"]
    padded_h, padded_w = height + top + bottom, width + left + right
    idx = k.index
    source = x
    if top or left or bottom or right:
        source = loop.alloc(type=BufferType((batch * padded_h * padded_w * channels,), f32, "global"))
        _pad_nhwc(k, x, source, (batch, height, width, channels), (padded_h, padded_w), (top, left), tiling.lanes)
    flat = source is not x
    pixels = batch * out_h * out_w
    mr, nr = tiling.mr, tiling.nr
    tiles, panels = -(-pixels // mr), -(-outs // nr)
    zero = k.const(0.0, f32)

    def tile(ib: Value, jb: Value, width_: Value) -> None:
        j0 = loop.mul(jb, idx(nr))
        acc = loop.alloc(type=BufferType((mr, nr), f32, "local"))
        with loop.for_(idx(0), idx(mr), idx(1), kind="unroll", name="ii") as ii:
            with loop.for_(idx(0), idx(nr), idx(1), kind="vectorize", factor=nr, name="jj") as jj:
                loop.store(zero, acc, [ii, jj])
        with loop.for_(idx(0), idx(taps_h), idx(1), name="kh") as kh:
            with loop.for_(idx(0), idx(taps_w), idx(1), name="kw") as kw:
                with loop.for_(idx(0), idx(channels), idx(1), name="c") as c:
                    with loop.for_(idx(0), idx(mr), idx(1), kind="unroll", name="ii") as ii:
                        p = loop.min(loop.add(loop.mul(ib, idx(mr)), ii), idx(pixels - 1))
                        n, oh, ow = _pixel(k, p, out_h, out_w)
                        iy = loop.add(loop.mul(oh, idx(stride_h)), loop.mul(kh, idx(dil_h)))
                        ix = loop.add(loop.mul(ow, idx(stride_w)), loop.mul(kw, idx(dil_w)))
                        if flat:
                            row = loop.add(loop.mul(n, idx(padded_h)), iy)
                            at = loop.add(loop.mul(loop.add(loop.mul(row, idx(padded_w)), ix), idx(channels)), c)
                            lhs = loop.load(source, [at])
                        else:
                            lhs = loop.load(source, [n, iy, ix, c])
                        with loop.for_(idx(0), width_, idx(1), kind="vectorize", factor=nr, name="jj") as jj:
                            rhs = loop.load(w, [kh, kw, c, loop.add(j0, jj)])
                            loop.store(loop.fma(lhs, rhs, loop.load(acc, [ii, jj])), acc, [ii, jj])
        with loop.for_(idx(0), idx(mr), idx(1), kind="unroll", name="ii") as ii:
            p = loop.add(loop.mul(ib, idx(mr)), ii)
            with loop.if_(loop.cmp(p, idx(pixels), predicate="lt")):
                n, oh, ow = _pixel(k, p, out_h, out_w)
                with loop.for_(idx(0), width_, idx(1), kind="vectorize", factor=nr, name="jj") as jj:
                    j = loop.add(j0, jj)
                    value = loop.load(acc, [ii, jj])
                    if bias is not None:
                        value = loop.add(value, loop.load(bias, [j]))
                    loop.store(value, out, [n, oh, ow, j])

    def tiles_of(ib: Value, jb: Value) -> None:
        left_ = loop.sub(idx(outs), loop.mul(jb, idx(nr)))
        with loop.if_(loop.cmp(left_, idx(nr), predicate="ge")):
            tile(ib, jb, idx(nr))
        with loop.if_(loop.cmp(left_, idx(nr), predicate="lt")):
            tile(ib, jb, left_)

    by_panels = tiling.split == "channels"
    outer, inner = ((panels, "jb"), (tiles, "ib")) if by_panels else ((tiles, "ib"), (panels, "jb"))
    with loop.for_(idx(0), idx(outer[0]), idx(1), kind="parallel", name=outer[1]) as o:
        with loop.for_(idx(0), idx(inner[0]), idx(1), name=inner[1]) as i:
            tiles_of(i, o) if by_panels else tiles_of(o, i)


def _pixel(k: Kernel, p: Value, out_h: int, out_w: int) -> tuple[Value, Value, Value]:
    """Image, row and column of output pixel number ``p``."""
    row, ow = loop.div(p, k.index(out_w)), loop.rem(p, k.index(out_w))
    return loop.div(row, k.index(out_h)), loop.rem(row, k.index(out_h)), ow


def _pad_nhwc(
    k: Kernel,
    x: Value,
    padded: Value,
    shape: tuple[int, int, int, int],
    padded_size: tuple[int, int],
    offset: tuple[int, int],
    lanes: int,
) -> None:
    """Copy ``x`` [N, H, W, C] into the flat ``padded`` [N, Hp, Wp, C] inside a border of zeros, rows in parallel."""
    idx = k.index
    batch, height, width, channels = shape
    padded_h, padded_w = padded_size
    row_len = padded_w * channels
    with loop.for_(idx(0), idx(batch * padded_h), idx(1), kind="parallel", name="pr") as r:
        start = loop.mul(r, idx(row_len))
        with loop.for_(idx(0), idx(row_len), idx(1), kind="vectorize", factor=lanes, name="pz") as z:
            loop.store(k.const(0.0, f32), padded, [loop.add(start, z)])
        n, y = loop.div(r, idx(padded_h)), loop.sub(loop.rem(r, idx(padded_h)), idx(offset[0]))
        inside = loop.and_(loop.cmp(y, idx(0), predicate="ge"), loop.cmp(y, idx(height), predicate="lt"))
        with loop.if_(inside):
            first = loop.add(start, idx(offset[1] * channels))
            with loop.for_(idx(0), idx(width), idx(1), name="px") as xx:
                at = loop.add(first, loop.mul(xx, idx(channels)))
                with loop.for_(idx(0), idx(channels), idx(1), kind="vectorize", factor=lanes, name="pc") as c:
                    loop.store(loop.load(x, [n, y, xx, c]), padded, [loop.add(at, c)])


def emit_blocked_conv2d(
    k: Kernel,
    x: Value,
    w: Value,
    bias: Value | None,
    out: Value,
    attrs: dict[str, Any],
    tiling: ConvTiling,
    epilogue: Epilogue | None = None,
) -> None:
    """Build the blocked convolution ``out = epilogue(conv(x, w) + bias)`` (see the module docstring)."""
    batch, channels, height, width = _static(x)
    outs, _, taps_h, taps_w = _static(w)
    out_h, out_w = _static(out)[2:]
    top, left, bottom, right = attrs["padding"]
    dil_h, dil_w = attrs["dilations"]
    padded_h, padded_w = height + top + bottom, width + left + right
    plane = padded_h * padded_w
    mr, nr = tiling.mr, tiling.nr
    tiles_o, tiles_w = -(-outs // mr), -(-out_w // nr)
    # Flat, with zeros after the last plane, so that the lanes past a row's end read in bounds.
    furthest = (channels - 1) * plane + (padded_h - 1) * padded_w + tiles_w * nr + (taps_w - 1) * dil_w
    padded = loop.alloc(type=BufferType((max(channels * plane, furthest),), f32, "global"))
    zero = k.const(0.0, f32)
    idx = k.index

    def tile(n: Value, oh: Value, ob: Value, wb: Value) -> None:
        o0, w0 = loop.mul(ob, idx(mr)), loop.mul(wb, idx(nr))
        acc = loop.alloc(type=BufferType((mr, nr), f32, "local"))
        with loop.for_(idx(0), idx(mr), idx(1), kind="unroll", name="ii") as ii:
            with loop.for_(idx(0), idx(nr), idx(1), kind="vectorize", factor=nr, name="jj") as jj:
                loop.store(zero, acc, [ii, jj])
        with loop.for_(idx(0), idx(channels), idx(1), name="c") as c:
            base = loop.mul(c, idx(plane))
            with loop.for_(idx(0), idx(taps_h), idx(1), name="kh") as kh:
                row = loop.add(oh, loop.mul(kh, idx(dil_h)))
                with loop.for_(idx(0), idx(taps_w), idx(1), name="kw") as kw:
                    column = loop.add(w0, loop.mul(kw, idx(dil_w)))
                    with loop.for_(idx(0), idx(mr), idx(1), kind="unroll", name="ii") as ii:
                        o = loop.min(loop.add(o0, ii), idx(outs - 1))
                        weight = loop.load(w, [o, c, kh, kw])
                        with loop.for_(idx(0), idx(nr), idx(1), kind="vectorize", factor=nr, name="jj") as jj:
                            at = loop.add(loop.add(base, loop.mul(row, idx(padded_w))), column)
                            value = loop.load(padded, [loop.add(at, jj)])
                            loop.store(loop.fma(weight, value, loop.load(acc, [ii, jj])), acc, [ii, jj])
        _store_tile(k, acc, out, bias, epilogue, (n, oh, o0, w0), (outs, out_w), tiling)

    by_rows = tiling.split == "rows"
    outer, inner = ((out_h, "oh"), (tiles_o, "ob")) if by_rows else ((tiles_o, "ob"), (out_h, "oh"))
    with k.loops([idx(batch)], ["n"]) as (n,):
        _pad_input(k, x, padded, n, (channels, padded_h, padded_w), (height, width), (top, left), tiling.lanes)
        with loop.for_(idx(0), idx(outer[0]), idx(1), kind="parallel", name=outer[1]) as a:
            with loop.for_(idx(0), idx(inner[0]), idx(1), name=inner[1]) as b:
                with loop.for_(idx(0), idx(tiles_w), idx(1), name="wb") as wb:
                    tile(n, a, b, wb) if by_rows else tile(n, b, a, wb)


def _static(buffer: Value) -> list[int]:
    """The static shape of a buffer (``blocked_conv_applies`` checked there is one)."""
    dims = shape_of(buffer)
    assert all(isinstance(d, int) for d in dims)
    return [int(d) for d in dims]  # type: ignore[arg-type]


def _pad_input(
    k: Kernel,
    x: Value,
    padded: Value,
    n: Value,
    padded_shape: tuple[int, int, int],
    size: tuple[int, int],
    offset: tuple[int, int],
    lanes: int,
) -> None:
    """Copy image ``n`` of ``x`` inside a zero border into the flat ``padded``, whose tail past the planes is zeroed."""
    idx = k.index
    planes, rows, cols = padded_shape
    total = shape_of(padded)[0]
    assert isinstance(total, int)
    with loop.for_(idx(planes * rows * cols), idx(total), idx(1), kind="vectorize", factor=lanes, name="pt") as pt:
        loop.store(k.const(0.0, f32), padded, [pt])
    with loop.for_(idx(0), idx(planes), idx(1), kind="parallel", name="pc") as c:
        start = loop.mul(c, idx(rows * cols))
        with loop.for_(idx(0), idx(rows * cols), idx(1), kind="vectorize", factor=lanes, name="px") as px:
            loop.store(k.const(0.0, f32), padded, [loop.add(start, px)])
        with loop.for_(idx(0), idx(size[0]), idx(1), name="y") as y:
            row = loop.add(start, loop.add(loop.mul(loop.add(y, idx(offset[0])), idx(cols)), idx(offset[1])))
            with loop.for_(idx(0), idx(size[1]), idx(1), kind="vectorize", factor=lanes, name="x") as xx:
                loop.store(loop.load(x, [n, c, y, xx]), padded, [loop.add(row, xx)])


def _store_tile(
    k: Kernel,
    acc: Value,
    out: Value,
    bias: Value | None,
    epilogue: Epilogue | None,
    at: tuple[Value, Value, Value, Value],
    sizes: tuple[int, int],
    tiling: ConvTiling,
) -> None:
    """Copy the tile at image, row, first channel and first column ``at`` to a staging buffer (constant
    indices keep ``acc`` in registers), then to the output of ``sizes`` channels x columns."""
    idx = k.index
    n, oh, o0, w0 = at
    outs, out_w = sizes
    mr, nr = tiling.mr, tiling.nr
    staged = loop.alloc(type=BufferType((mr, nr), f32, "local"))
    with loop.for_(idx(0), idx(mr), idx(1), kind="unroll", name="ii") as ii:
        with loop.for_(idx(0), idx(nr), idx(1), kind="vectorize", factor=nr, name="jj") as jj:
            loop.store(loop.load(acc, [ii, jj]), staged, [ii, jj])
    columns = loop.min(idx(nr), loop.sub(idx(out_w), w0))
    with loop.for_(idx(0), idx(mr), idx(1), name="si") as si:
        o = loop.add(o0, si)
        with loop.if_(loop.cmp(o, idx(outs), predicate="lt")):
            shift = loop.load(bias, [o]) if bias is not None else None
            with loop.for_(idx(0), columns, idx(1), kind="vectorize", factor=tiling.lanes, name="sj") as sj:
                indices = [n, o, oh, loop.add(w0, sj)]
                value = loop.load(staged, [si, sj])
                if shift is not None:
                    value = loop.add(value, shift)
                if epilogue is not None:
                    value = epilogue(value, indices)
                loop.store(value, out, indices)


def _blocked_kind(op: Operation) -> str | None:
    """``nchw`` or ``nhwc`` when a register-blocked kernel applies to the conv2d ``op``, else None."""
    attrs = op.opdef.attr_kwargs(op)
    if blocked_conv_applies(op, attrs):
        return "nchw"
    if nhwc_conv_applies(op, attrs):
        return "nhwc"
    return None


def _outs(op: Operation) -> int:
    """Output channels of a static HWIO weight."""
    t = op.operands[1].type
    assert isinstance(t, TensorType) and isinstance(t.shape[3], int)
    return t.shape[3]


SPLITS = {"nchw": ("rows", "channels"), "nhwc": ("pixels", "channels")}


def _conv_space(op: Operation, target: Target) -> Space | None:
    """The tiles and parallel splits of the blocked kernels (see the module docstring); None when only the
    simple nest applies. NHWC tiles are no wider than the output channels rounded up to vectors."""
    kind = _blocked_kind(op)
    if kind is None:
        return None
    vectors: tuple[int, ...] = VECTORS
    if kind == "nhwc":
        vectors = tuple(v for v in VECTORS if v <= max(1, -(-_outs(op) // target.lanes(32))))
    splits, registers = SPLITS[kind], _registers(target)

    def valid(values: Mapping[str, Setting]) -> bool:
        mr, nv = int(values["mr"]), int(values["nv"])
        if values["algo"] == "simple":  # tile knobs mean nothing to it: one point
            return (mr, nv, values["split"]) == (ROWS[0], vectors[0], splits[0])
        return fits(mr, nv, registers)

    knobs = (
        Knob("algo", ("blocked", "simple"), "the register-blocked kernel, or the simple nest"),
        Knob("mr", ROWS, "rows of the register tile: output channels (NCHW) or output pixels (NHWC)"),
        Knob("nv", vectors, "vector registers across the tile: nr = nv x lanes columns or channels"),
        Knob("split", splits, "which tiles run in parallel"),
    )
    return Space("conv", knobs, valid)


def _conv_default(op: Operation, target: Target, space: Space) -> Config:
    """Six rows and the most vectors that fit the registers (AVX-512: 6 x 4 vectors of 16, the GEMM's tile;
    AVX2: 6 x 2 of 8). NCHW splits output rows. NHWC splits channel panels for deep layers, which have many
    channels and few pixels: when the channels fill four panels of the widest tile (four vectors: 256
    channels on AVX-512, 128 on AVX2), else pixel tiles, which give threads more and equal work."""
    vectors = next(k.values for k in space.knobs if k.name == "nv")
    nv = max((int(v) for v in vectors if fits(DEFAULT_ROWS, int(v), _registers(target))), default=1)
    split = "rows"
    if _blocked_kind(op) == "nhwc":
        panels = -(-_outs(op) // (max(VECTORS) * target.lanes(32)))
        split = "channels" if panels >= 4 else "pixels"
    return Config("conv", (("algo", "blocked"), ("mr", DEFAULT_ROWS), ("nv", nv), ("split", split)))


def conv_tiling(k: Kernel, op: Operation) -> ConvTiling | None:
    """The register tile the kernel's ``conv`` config (else the target's default) gives the conv2d ``op``;
    None when the simple nest is to be built."""
    config = k.config if k.config is not None and k.config.family == "conv" else default_config(op, k.target)
    if config is None or config.family != "conv" or config["algo"] != "blocked":
        return None  # (a target's own family, gpu_conv say, is the default of the conv alone, not of its group)
    lanes = k.target.lanes(32)
    return ConvTiling(config.int("mr"), config.int("nv") * lanes, lanes, str(config["split"]))


register_family(Family("conv", ("graph.conv2d",), _conv_space, _conv_default))
