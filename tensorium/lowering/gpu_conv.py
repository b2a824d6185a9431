"""The ``gpu_conv`` kernel family: 2-D convolution on GPUs as an implicit GEMM.

A convolution is the product of an ``M x K`` matrix A, ``M = batch * out_height * out_width`` and ``K = in_channels
* kernel_height * kernel_width``, whose row ``(n, oh, ow)`` holds the input window of that output position, with
the ``K x out_channels`` matrix of the weights. The implicit GEMM never builds A: the GEMM kernel of
:mod:`.gpu_gemm` (shared-memory tiles, register tiles, double buffering, the same knobs) gathers each element
of an A tile straight from the input as it copies the tile into shared memory,

    A[(n, oh, ow), (c, kh, kw)] = x[n, c, oh * sh - pad_top + kh * dh, ow * sw - pad_left + kw * dw]  (0: padding)
    B[(c, kh, kw), o] = w[o, c, kh, kw]
    out[n, o, oh, ow] = (A B)[(n, oh, ow), o] + bias[o]

so the input is read once per tile of output channels instead of once per output element and weight. f32
convolutions with static shapes, in any of the graph's layouts (NCHW or NHWC input, OIHW, HWIO or OHWI weights),
strides and dilations. A grouped convolution of ``G`` groups is ``G`` such products, one per block of the grid's
z axis (``conv_gemm(op, grouped=True)``): group ``g`` reads input channels ``g * C/G ...`` and writes output
channels ``g * O/G ...``, ``K = C/G * kernel_height * kernel_width``; the WebGPU backend builds them this way
where each group has enough output channels (:mod:`.webgpu_gemm`), the CUDA backend only convolutions of one
group. Others (depthwise ones) keep the ``conv`` family, bound to the grid.
"""

from __future__ import annotations

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.types import TensorType, f32
from ..targets import Target
from .gpu_gemm import TiledOperands, emit_tiled_gemm, tile_default, tile_space
from .kernel import LOWERINGS, Kernel, register_target_lowering
from .space import Config, Family, Space, register_target_family

INPUT_AXES = {"NCHW": "nchw", "NHWC": "nhwc"}
WEIGHT_AXES = {"OIHW": "oihw", "HWIO": "hwio", "OHWI": "ohwi"}
"""The order of the logical axes in memory, per layout attribute."""


def conv_gemm(op: Operation, grouped: bool = False) -> tuple[int, int, int] | None:
    """(M, N, K) of the implicit GEMM of a conv2d this family builds (of each group's, with ``grouped``), or None
    (convolutions of several groups unless ``grouped``)."""
    groups = int(op.attr("groups", 1)) if op.name == "graph.conv2d" else 0
    if groups < 1 or (groups > 1 and not grouped):
        return None
    types = [v.type for v in (*op.operands, *op.results)]
    if not all(isinstance(t, TensorType) and t.element == f32 and t.is_static for t in types):
        return None
    w, out = (
        _logical(op.operands[1], WEIGHT_AXES[str(op.attr("kernel_layout", "OIHW"))]),
        _logical(op.results[0], INPUT_AXES[str(op.attr("layout", "NCHW"))]),
    )
    return out["n"] * out["h"] * out["w"], out["c"] // groups, w["i"] * w["h"] * w["w"]


def _logical(value: Value, axes: str) -> dict[str, int]:
    """The sizes of ``value``'s axes by their letter (``n``, ``c``, ``h``, ``w``; ``o``, ``i`` for weights)."""
    t = value.type
    assert isinstance(t, TensorType)
    return dict(zip(axes, t.static_shape))


def gpu_conv_space(op: Operation, target: Target) -> Space | None:
    """The tile knobs of the GPU GEMM, for the implicit GEMM."""
    return None if conv_gemm(op) is None else tile_space("gpu_conv", target)


def gpu_conv_default(op: Operation, target: Target, space: Space) -> Config:
    """The GPU GEMM's default tiles for the implicit GEMM's shape."""
    gemm = conv_gemm(op, grouped=True)  # a grouped one where the target's space offered this family
    assert gemm is not None
    return tile_default("gpu_conv", *gemm)


def lower_gpu_conv(op: Operation, k: Kernel) -> None:
    """The implicit GEMM of the module docstring at ``k``'s config; the general convolution for other families."""
    gemm = conv_gemm(op, grouped=True)  # a grouped one only where the target's space offered this family
    if k.config is None or k.config.family != "gpu_conv" or gemm is None:
        LOWERINGS[op.name](op, k)
        return
    groups = int(op.attr("groups", 1))
    x, w, *bias = k.inputs
    (out,) = k.outputs
    in_axes = INPUT_AXES[str(op.attr("layout", "NCHW"))]
    w_axes = WEIGHT_AXES[str(op.attr("kernel_layout", "OIHW"))]
    xs, ws, outs = _logical(op.operands[0], in_axes), _logical(op.operands[1], w_axes), _logical(op.results[0], in_axes)
    sh, sw = (int(v) for v in op.attr("strides", (1, 1)))
    dh, dw = (int(v) for v in op.attr("dilations", (1, 1)))
    top, left = (int(v) for v in tuple(op.attr("padding", (0, 0, 0, 0)))[:2])
    i = k.index

    def position(row: Value) -> tuple[Value, Value, Value]:
        """(n, oh, ow) of a row of A (or C)."""
        ow, rest = loop.rem(row, i(outs["w"])), loop.div(row, i(outs["w"]))
        return loop.div(rest, i(outs["h"])), loop.rem(rest, i(outs["h"])), ow

    def tap(q: Value) -> tuple[Value, Value, Value]:
        """(c, kh, kw) of a column of A (a row of B)."""
        kw, rest = loop.rem(q, i(ws["w"])), loop.div(q, i(ws["w"]))
        return loop.div(rest, i(ws["h"])), loop.rem(rest, i(ws["h"])), kw

    def grouped(z: Value, channel: Value, per_group: int) -> Value:
        """The channel of all groups that ``channel`` of group ``z`` is (itself for one group)."""
        return channel if groups == 1 else loop.add(loop.mul(z, i(per_group)), channel)

    def source(row: Value, q: Value) -> tuple[Value, Value, Value, Value]:
        """(n, c, ih, iw): the input element A[row, q] reads (possibly in the padding; c within the group)."""
        n, oh, ow = position(row)
        c, kh, kw = tap(q)
        ih = loop.add(loop.sub(loop.mul(oh, i(sh)), i(top)), loop.mul(kh, i(dh)))
        iw = loop.add(loop.sub(loop.mul(ow, i(sw)), i(left)), loop.mul(kw, i(dw)))
        return n, c, ih, iw

    def a_at(z: Value, row: Value, q: Value) -> Value:
        n, c, ih, iw = source(row, q)
        return loop.load(x, *_ordered(in_axes, n=n, c=grouped(z, c, ws["i"]), h=ih, w=iw))  # type: ignore[no-any-return]

    def a_valid(z: Value, row: Value, q: Value) -> Value:
        _, _, ih, iw = source(row, q)
        inside = [
            loop.cmp(ih, i(0), predicate="ge"),
            loop.cmp(ih, i(xs["h"]), predicate="lt"),
            loop.cmp(iw, i(0), predicate="ge"),
            loop.cmp(iw, i(xs["w"]), predicate="lt"),
        ]
        return loop.and_(loop.and_(inside[0], inside[1]), loop.and_(inside[2], inside[3]))  # type: ignore[no-any-return]

    def b_at(z: Value, q: Value, o: Value) -> Value:
        c, kh, kw = tap(q)
        return loop.load(w, *_ordered(w_axes, o=grouped(z, o, gemm[1]), i=c, h=kh, w=kw))  # type: ignore[no-any-return]

    def store(z: Value, row: Value, o: Value, value: Value) -> None:
        n, oh, ow = position(row)
        o = grouped(z, o, gemm[1])
        if bias:
            value = loop.add(value, loop.load(bias[0], o))
        loop.store(value, out, *_ordered(in_axes, n=n, c=o, h=oh, w=ow))

    emit_tiled_gemm(k, k.config, TiledOperands(groups, *gemm, a_at, b_at, store, a_valid))


def _ordered(axes: str, **indices: Value) -> list[Value]:
    """``indices`` (by axis letter) in the memory order ``axes``."""
    return [indices[a] for a in axes]


register_target_family("cuda", Family("gpu_conv", ("graph.conv2d",), gpu_conv_space, gpu_conv_default))
register_target_lowering("cuda", "graph.conv2d", lower_gpu_conv)
