"""Tiled GEMM on WebGPU: the ``gpu_gemm`` family of :mod:`tensorium.lowering.gpu_gemm`, within WebGPU's limits.

The kernel is the CUDA backend's (``bm x bk`` and ``bk x bn`` tiles in workgroup memory, copied by all the
workgroup's invocations between barriers, a ``tm x tn`` register tile per invocation), and so are the knobs;
only the legal points differ: those whose invocations fit ``max_compute_invocations_per_workgroup``, whose
tiles (times their ``stages``) fit ``max_compute_workgroup_storage_size`` (16 KiB by default) and whose grid
(column tiles, row tiles, batch) fits ``max_compute_workgroups_per_dimension``, with no warp to fill. Products
smaller than :data:`MIN_OUTPUT` elements keep the ``gemm`` family (one invocation per register tile).

Tiled convolution is the same kernel: the ``gpu_conv`` family of :mod:`tensorium.lowering.gpu_conv` (an implicit
GEMM whose A tiles are gathered from the input window by window as they are copied into workgroup memory,
zeros in the padding) with the same limit-pruned tile points, for f32 convolutions whose implicit GEMM
(``batch * out_height * out_width`` by the output channels) has at least :data:`MIN_OUTPUT` elements. A grouped
convolution is one such product per group, along the grid's z axis, where each group has at least
:data:`MIN_GROUP_CHANNELS` output channels; depthwise ones keep the general ``conv`` family, one invocation per
output (on lavapipe the implicit GEMM ran a 2 x 32 x 16 x 16 depthwise 3 x 3 about 10x slower than that).

So is ``quant.matmul`` with k-bit weights (the ``gpu_qgemm`` tiles, WebGPU's own): B's elements are the
weight's codes dequantized, ``(q - zero) * scale``, as the B tile is copied into workgroup memory, so each
code is unpacked (:mod:`tensorium.lowering.webgpu_quant` rewrites the loads) once per workgroup tile instead of
once per output element; f32 activations of rank 2 and products of at least :data:`MIN_OUTPUT` elements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass

from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.shapes import dims_equal
from ..ir.types import Dim, QuantizedType, TensorType, f32
from ..targets import Target
from .gpu_conv import conv_gemm, lower_gpu_conv
from .gpu_gemm import (
    LARGE_TILES,
    GpuGemmShape,
    TiledOperands,
    emit_tiled_gemm,
    gpu_gemm_space,
    lower_gpu_gemm,
    tile_space,
)
from .gpu_qgemm import NOMINAL_ROWS
from .kernel import LOWERINGS, Kernel, delinearize, register_target_lowering
from .quant_simple import dequantized
from .space import Config, Family, Setting, Space, register_target_family
from .webgpu_schedule import run_time_workgroups

MIN_OUTPUT = 32 * 32
"""Products with fewer output elements than one 32 x 32 tile stay with the ``gemm`` family."""
MIN_GROUP_CHANNELS = 8
"""Grouped convolutions with fewer output channels per group (depthwise ones: 1) keep the ``conv`` family, one
invocation per output: a column tile of the implicit GEMM would be mostly empty."""


def _invocations(values: Mapping[str, Setting]) -> int:
    return (int(values["bm"]) // int(values["tm"])) * (int(values["bn"]) // int(values["tn"]))


@dataclass(frozen=True)
class RunTimeProduct:
    """An f32 ``graph.matmul`` with sizes known only at run time that the tiled GEMM builds: batched (B has A's
    leading dims, named alike, and each batch is one product) or by a 2-D B (A's leading dims together are the
    rows of one product: a linear layer of a model with a run-time batch or sequence). Sizes are numbers where
    static, None where known only at run time."""

    batched: bool
    m: int | None
    n: int | None
    k: int | None
    transpose_b: bool

    @staticmethod
    def of(op: Operation) -> RunTimeProduct | None:
        """The product ``op`` is, or None: for other ops, static products (:class:`GpuGemmShape`), a transposed
        A, and operands whose leading dims or contraction are not known to be equal when compiling."""
        if op.name != "graph.matmul" or op.attr("transpose_a", False):
            return None
        a, b, c = (v.type for v in (*op.operands, *op.results))
        if not all(isinstance(t, TensorType) and t.element == f32 for t in (a, b, c)):
            return None
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        if (a.is_static and b.is_static) or a.rank < 2 or b.rank not in (2, a.rank):
            return None
        transpose_b = bool(op.attr("transpose_b", False))
        depth, n = (b.shape[-1], b.shape[-2]) if transpose_b else (b.shape[-2], b.shape[-1])
        batched = b.rank > 2
        lead = a.shape[:-2] if batched else ()
        rows = a.shape[-2:-1] if batched else a.shape[:-1]
        if not all(dims_equal(x, y) for x, y in zip((*lead, a.shape[-1]), (*b.shape[:-2], depth))):
            return None

        def static(dims: tuple[Dim, ...]) -> int | None:
            return math.prod(d for d in dims if isinstance(d, int)) if all(isinstance(d, int) for d in dims) else None

        return RunTimeProduct(batched, static(rows), static((n,)), static(a.shape[-1:]), transpose_b)

    def nominal(self) -> tuple[int, int, int]:
        """(M, N, K), the sizes known only at run time counted as :data:`NOMINAL_ROWS`: what the defaults go by."""
        m, n, k = (NOMINAL_ROWS if size is None else size for size in (self.m, self.n, self.k))
        return m, n, k


def webgpu_gemm_space(op: Operation, target: Target) -> Space | None:
    """``gpu_gemm``'s knobs on a WebGPU ``target``: workgroups within its invocation and storage limits. A product
    with sizes known only at run time (:class:`RunTimeProduct`) has its grid sized at run time too, one workgroup
    per tile of C on a 2-D grid (checked against the limits at each run)."""
    shape = GpuGemmShape.of(op)
    if shape is None:
        product = RunTimeProduct.of(op)
        if product is None:
            return None
        m, n, _ = product.nominal()
        return _within_limits(tile_space("gpu_gemm", target), target, 1, 1, 1) if m * n >= MIN_OUTPUT else None
    if shape.m * shape.n < MIN_OUTPUT:
        return None
    cuda = gpu_gemm_space(op, target)
    assert cuda is not None
    return _within_limits(cuda, target, shape.m, shape.n, shape.batch)


def webgpu_conv_space(op: Operation, target: Target) -> Space | None:
    """``gpu_conv``'s knobs (the tiled GEMM's) on a WebGPU ``target``, pruned as :func:`webgpu_gemm_space`; a
    grouped convolution (one product per group) where each group has at least :data:`MIN_GROUP_CHANNELS` output
    channels."""
    gemm = conv_gemm(op, grouped=True)
    groups = int(op.attr("groups", 1))
    if gemm is None or gemm[0] * gemm[1] * groups < MIN_OUTPUT or (groups > 1 and gemm[1] < MIN_GROUP_CHANNELS):
        return None
    return _within_limits(tile_space("gpu_conv", target), target, gemm[0], gemm[1], groups)


def _within_limits(cuda: Space, target: Target, m: int, n: int, batch: int) -> Space | None:
    """The points of the tiled kernel's space ``cuda`` for an ``m x n`` C (``batch`` of them) that fit ``target``'s
    invocation, workgroup-storage and grid limits; None where none does."""
    most = min(target.limit("max_compute_invocations_per_workgroup"), target.limit("max_compute_workgroup_size_x"))
    storage = target.limit("max_compute_workgroup_storage_size")
    grid = target.limit("max_compute_workgroups_per_dimension")

    def valid(values: Mapping[str, Setting]) -> bool:
        bm, bn, bk = (int(values[n]) for n in ("bm", "bn", "bk"))
        fits_grid = max(-(-n // bn), -(-m // bm), batch) <= grid
        tiles = 4 * bk * (bm + bn) * int(values.get("stages", 1))  # double-buffered tiles take twice the storage
        return _invocations(values) <= most and tiles <= storage and fits_grid

    space = Space(cuda.family, cuda.knobs, valid)
    return space if any(True for _ in space.points()) else None


SMALL_TILES: dict[str, Setting] = {"bm": 16, "bn": 16, "bk": 8, "tm": 2, "tn": 2}
"""WebGPU's tiles for a C of at most 32 x 32 elements (CUDA's)."""


def webgpu_tile_default(family: str, m: int, n: int, k: int) -> Config:
    """The default tiles of an ``m x n`` C of family ``family`` on WebGPU: :data:`SMALL_TILES` up to 32 x 32
    elements, :data:`~tensorium.lowering.gpu_gemm.LARGE_TILES` beyond 1024 x 1024, and between them 8 x 8 register
    tiles in C tiles of 64 (32 where C has at most 32) rows and columns, where CUDA's rule keeps 2 x 2 and 4 x 4.

    Measured on the adapters this project runs (2026-11-29, Zen 4; ``benchmarks/webgpu_browser.py``, ms per run in
    chromium's SwiftShader / wgpu-py's lavapipe): the 512^3 GEMM 234 / 116 with CUDA's 64 x 64 tiles of 4 x 4, 126 /
    70 with 8 x 8; the MLP (32 rows) 58 / 20 with 32 x 32 tiles of 2 x 2, 24-25 / 9 with 32 x 32 or 32 x 64 tiles
    of 8 x 8; the encoder layer 492 / 182 with CUDA's rule, 198 / 68 with 64 x 64 tiles of 8 x 8 everywhere (its
    64 x 64 attention products included). A software adapter runs invocations as SIMD lanes, so what counts is
    each invocation's reuse of its loads; on other adapters the search space (and the browser demo's tuner) keep
    the other points."""
    size = m * n
    if size <= 32 * 32:
        values = SMALL_TILES
    elif size > 1024 * 1024:
        values = LARGE_TILES
    else:
        values = {"bm": 32 if m <= 32 else 64, "bn": 32 if n <= 32 else 64, "bk": 16, "tm": 8, "tn": 8}
    return Config(family, (*values.items(), ("stages", 2 if k > int(values["bk"]) else 1)))


def webgpu_gemm_default(op: Operation, target: Target, space: Space) -> Config:
    """:func:`webgpu_tile_default` for the product (an f32 matmul) or the convolution's implicit GEMM, the only ops
    these families' spaces take, where legal here; else the legal point with the most invocations and then the
    largest tile (low limits, as tests set)."""
    if op.name == "graph.matmul":
        shape = GpuGemmShape.of(op)
        if shape is None:
            product = RunTimeProduct.of(op)
            assert product is not None  # webgpu_gemm_space offers the family for these products only
            return _legal(webgpu_tile_default("gpu_gemm", *product.nominal()), space)
        config = webgpu_tile_default("gpu_gemm", shape.m, shape.n, shape.k)
    else:
        gemm = conv_gemm(op, grouped=True)
        assert gemm is not None  # as webgpu_conv_space
        config = webgpu_tile_default("gpu_conv", *gemm)
    return _legal(config, space)


def lower_webgpu_gemm(op: Operation, k: Kernel) -> None:
    """The tiled GEMM of :func:`~tensorium.lowering.gpu_gemm.lower_gpu_gemm`; for sizes known only at run time
    (:class:`RunTimeProduct`), on a grid sized at run time, the batch's indices (or, by a 2-D B, each row's)
    delinearized from the run-time batch (rows) into A's, B's and C's leading dims."""
    product = RunTimeProduct.of(op)
    if k.config is None or k.config.family != "gpu_gemm" or product is None:
        lower_gpu_gemm(op, k)
        return
    a, b = k.inputs
    (c,) = k.outputs
    sizes_a, sizes_c = k.sizes(a), k.sizes(c)
    depth, n = k.sizes(b)[-1:-3:-1] if product.transpose_b else k.sizes(b)[-2:]
    lead, lead_c = (sizes_a[:-2], sizes_c[:-2]) if product.batched else (sizes_a[:-1], sizes_c[:-1])

    def b_at(z: Value, q: Value, col: Value) -> Value:
        batch = delinearize(z, lead) if product.batched else []
        return loop.load(b, *batch, *((col, q) if product.transpose_b else (q, col)))  # type: ignore[no-any-return]

    if product.batched:
        batch, m = k.product(lead), sizes_a[-2]

        def a_at(z: Value, row: Value, q: Value) -> Value:
            return loop.load(a, *delinearize(z, lead), row, q)  # type: ignore[no-any-return]

        def store(z: Value, row: Value, col: Value, value: Value) -> None:
            loop.store(value, c, *delinearize(z, lead_c), row, col)

    else:
        batch, m = k.index(1), k.product(lead)

        def a_at(z: Value, row: Value, q: Value) -> Value:
            return loop.load(a, *delinearize(row, lead), q)  # type: ignore[no-any-return]

        def store(z: Value, row: Value, col: Value, value: Value) -> None:
            loop.store(value, c, *delinearize(row, lead_c), col)

    def grid(blocks: Value, threads: int) -> AbstractContextManager[Value]:
        return run_time_workgroups(k.func, loop.mul(blocks, k.index(threads)), threads, k.target)

    sizes = (_number(batch), _number(m), _number(n), _number(depth))
    emit_tiled_gemm(k, k.config, TiledOperands(*sizes, a_at, b_at, store, run_time_grid=grid))


def _number(size: Value) -> int | Value:
    """``size`` as a number where it is a constant (so that the tiles know which edges need no guard)."""
    value = loop.const_value(size)
    return size if value is None else int(value)


def _legal(config: Config, space: Space) -> Config:
    """``config`` where ``space`` holds it, else its point with the most invocations, then the largest tile."""
    legal = list(space.points())
    if config in legal:
        return config
    return max(legal, key=lambda c: (_invocations(c.as_dict()), c.int("bm") * c.int("bn"), c.int("bk")))


register_target_family(
    "webgpu", Family("gpu_gemm", ("graph.matmul",), webgpu_gemm_space, webgpu_gemm_default, epilogues=True)
)
register_target_lowering("webgpu", "graph.matmul", lower_webgpu_gemm)
register_target_family("webgpu", Family("gpu_conv", ("graph.conv2d",), webgpu_conv_space, webgpu_gemm_default))
register_target_lowering("webgpu", "graph.conv2d", lower_gpu_conv)


def qgemm_shape(op: Operation) -> tuple[int, int, int] | None:
    """(M, N, K) of a ``quant.matmul`` the ``gpu_qgemm`` family builds (f32 activations [M, K], a static k-bit
    weight [N, K] expressed in f32), else None."""
    if op.name != "quant.matmul":
        return None
    x, w = (v.type for v in op.operands[:2])
    if not (isinstance(x, TensorType) and isinstance(w, TensorType) and x.is_static and w.is_static):
        return None
    q = w.element
    if x.rank != 2 or x.element != f32 or not isinstance(q, QuantizedType) or q.expressed != f32:
        return None
    return x.static_shape[0], w.static_shape[0], x.static_shape[1]


def webgpu_qgemm_space(op: Operation, target: Target) -> Space | None:
    """The tiled GEMM's knobs for a k-bit ``quant.matmul``, pruned by the target's limits."""
    shape = qgemm_shape(op)
    if shape is None or shape[0] * shape[1] < MIN_OUTPUT:
        return None
    return _within_limits(tile_space("gpu_qgemm", target), target, shape[0], shape[1], 1)


def webgpu_qgemm_default(op: Operation, target: Target, space: Space) -> Config:
    """The tiled GEMM's default tiles for the product's shape, where legal (else as :func:`webgpu_gemm_default`)."""
    shape = qgemm_shape(op)
    assert shape is not None
    return _legal(webgpu_tile_default("gpu_qgemm", *shape), space)


def lower_webgpu_qgemm(op: Operation, k: Kernel) -> None:
    """``x @ dequantize(W)^T`` as the tiled GEMM with B dequantized as its tile is copied, at the kernel's config
    or else the default tiles (``quant.matmul`` has no general family, so the search space cannot anchor on it
    and the tiles are not tuned yet); the general k-bit matmul where no tile fits."""
    shape = qgemm_shape(op)
    space = webgpu_qgemm_space(op, k.target) if shape is not None else None
    config = k.config if k.config is not None and k.config.family == "gpu_qgemm" else None
    if config is None and space is not None:
        config = webgpu_qgemm_default(op, k.target, space)
    if config is None or shape is None:
        LOWERINGS[op.name](op, k)
        return
    x, codes, scale, *zero = k.inputs
    (out,) = k.outputs
    weight = op.operands[1].type
    assert isinstance(weight, TensorType) and isinstance(weight.element, QuantizedType)
    q = weight.element

    def b_at(z: Value, kk: Value, n: Value) -> Value:
        return dequantized(k, codes, scale, zero[0] if zero else None, q, [n, kk])

    def store(z: Value, row: Value, col: Value, value: Value) -> None:
        loop.store(value, out, row, col)

    operands = TiledOperands(1, *shape, lambda z, r, kk: loop.load(x, r, kk), b_at, store)
    emit_tiled_gemm(k, config, operands)


register_target_family("webgpu", Family("gpu_qgemm", ("quant.matmul",), webgpu_qgemm_space, webgpu_qgemm_default))
register_target_lowering("webgpu", "quant.matmul", lower_webgpu_qgemm)
