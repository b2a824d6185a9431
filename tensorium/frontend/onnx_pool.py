"""Pooling of any rank as a reduction over window offsets (3-D pooling, dilated averages, LpPool), and MaxUnpool.

The graph dialect pools 1-D and 2-D windows (``graph.max_pool2d``, ``graph.avg_pool2d``). What they
do not cover is written as one strided slice of the padded input per kernel offset, combined by max
or sum; an average divides by a constant count of the window elements that are not padding (or
that are, with ``count_include_pad``), computed at import by the same slicing over a mask.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import i64
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, cast, converts, element, rank, static_dims

Combine = Callable[[Value, Value], Value]


def pads_nd(n: Node, x: Value, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]) -> tuple:
    """[begin..., end...] padding of each spatial dim from ``pads`` or ``auto_pad``."""
    k = len(kernel)
    auto = n.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        dims = static_dims(x, f"{n.op_type} with auto_pad")[2:]
        begin, end = [], []
        for size, kern, s, d in zip(dims, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (kern - 1) * d + 1 - size, 0)
            small = total // 2
            begin.append(small if auto == "SAME_UPPER" else total - small)
            end.append(total - begin[-1])
        return tuple(begin + end)
    if auto == "VALID":
        return (0,) * (2 * k)
    return tuple(n.attr("pads", (0,) * (2 * k)))


def _output_size(size: int, kernel: int, stride: int, dilation: int, begin: int, end: int, ceil: bool) -> int:
    extent = (kernel - 1) * dilation + 1
    span = size + begin + end - extent
    if not ceil:
        return span // stride + 1
    out = -(-span // stride) + 1
    return out - 1 if (out - 1) * stride >= size + begin else out  # a window must start inside the input


class Windows:
    """The windows of one pooling node: kernel, strides, dilations, pads and output size per spatial dim."""

    def __init__(self, n: Node, x: Value, kernel: Sequence[int]):
        k = len(kernel)
        self.dims = static_dims(x, n.op_type)[2:]
        self.kernel = tuple(kernel)
        self.strides = tuple(n.attr("strides", (1,) * k))
        self.dilations = tuple(n.attr("dilations", (1,) * k))
        pads = pads_nd(n, x, self.kernel, self.strides, self.dilations)
        self.begin, self.end = pads[:k], pads[k:]
        ceil = bool(n.attr("ceil_mode", 0))
        self.out = tuple(
            _output_size(size, kern, s, d, b, e, ceil)
            for size, kern, s, d, b, e in zip(
                self.dims, self.kernel, self.strides, self.dilations, self.begin, self.end
            )
        )
        # the padded input must reach the last window's end (ceil mode may need more than ``end``)
        self.extra = tuple(
            max((o - 1) * s + (kern - 1) * d + 1 - (size + b + e), 0)
            for o, s, kern, d, size, b, e in zip(
                self.out, self.strides, self.kernel, self.dilations, self.dims, self.begin, self.end
            )
        )

    def _windows(self) -> Iterator[tuple[slice, ...]]:
        """For each kernel offset, the strided slices of the padded spatial dims its windows read."""
        for offset in itertools.product(*(range(kern) for kern in self.kernel)):
            yield tuple(
                slice(o * d, o * d + (n - 1) * s + 1, s)
                for o, d, n, s in zip(offset, self.dilations, self.out, self.strides)
            )

    def _padded(self, x: Value, fill: float) -> Value:
        pads = (0, 0, *self.begin, 0, 0, *(e + x_ for e, x_ in zip(self.end, self.extra)))
        return graph.pad(x, pads=pads, value=fill) if any(pads) else x

    def _take(self, padded: Value, window: tuple[slice, ...]) -> Value:
        return graph.slice(  # type: ignore[no-any-return]
            padded,
            starts=tuple(w.start for w in window),
            ends=tuple(w.stop for w in window),
            axes=tuple(range(2, 2 + len(window))),
            steps=self.strides,
        )

    def reduce(self, x: Value, fill: float, combine: Combine) -> Value:
        """Combine every window offset's strided slice of ``x`` padded with ``fill``."""
        padded = self._padded(x, fill)
        out: Value | None = None
        for window in self._windows():
            part = self._take(padded, window)
            out = part if out is None else combine(out, part)
        assert out is not None
        return out

    def argmax(self, n: Node, x: Value, column_major: bool) -> tuple[Value, Value]:
        """Max pooling with the flat index (into all of ``x``) of each window's first largest element."""
        padded = self._padded(x, -math.inf)
        region = tuple(s + b + e + x_ for s, b, e, x_ in zip(self.dims, self.begin, self.end, self.extra))
        flat = np.arange(math.prod(self.dims)).reshape(self.dims[::-1] if column_major else self.dims)
        positions = np.full(region, -1, dtype=np.int64)
        positions[tuple(slice(b, b + s) for b, s in zip(self.begin, self.dims))] = flat.T if column_major else flat
        best: Value | None = None
        index: Value | None = None
        for window in self._windows():
            part = self._take(padded, window)
            here = n.constant(positions[window][None, None])
            if best is None or index is None:
                best, index = part, graph.broadcast_to(here, shape=static_dims(part, "MaxPool"))
                continue
            better = graph.gt(part, best)
            best, index = graph.where(better, part, best), graph.where(better, here, index)
        assert best is not None and index is not None
        batch, channels = static_dims(x, "MaxPool")[:2]
        planes = np.arange(batch * channels, dtype=np.int64).reshape(batch, channels, *(1,) * len(self.dims))
        return best, graph.add(index, n.constant(planes * math.prod(self.dims)))

    def counts(self, include_pad: bool) -> np.ndarray:
        """How many elements each window averages over: the input's, plus the pads' with ``include_pad``."""
        region = tuple(s + b + e for s, b, e in zip(self.dims, self.begin, self.end))
        mask = np.zeros(tuple(r + x for r, x in zip(region, self.extra)))
        if include_pad:
            mask[tuple(slice(0, r) for r in region)] = 1
        else:
            mask[tuple(slice(b, b + s) for b, s in zip(self.begin, self.dims))] = 1
        total = np.zeros(self.out)
        for window in self._windows():
            total += mask[window]
        return total


def window_pool(n: Node, x: Value, kind: str) -> Value:
    """Max, average or Lp pooling of N x C x ... input ``x`` over windows of any rank."""
    if "kernel_shape" not in n.attrs:
        raise ConversionError(f"{n.op_type} needs kernel_shape")
    windows = Windows(n, x, n.attr("kernel_shape"))
    if kind == "max":
        return windows.reduce(x, -math.inf, graph.max)
    if kind == "lp":
        p = float(n.attr("p", 2))
        powered = graph.pow(graph.abs(x), n.scalar(p, x))
        total = windows.reduce(powered, 0.0, graph.add)
        return graph.pow(total, n.scalar(1.0 / p, x))  # type: ignore[no-any-return]
    total = windows.reduce(x, 0.0, graph.add)
    counts = windows.counts(bool(n.attr("count_include_pad", 0)))
    shaped = counts.reshape((1, 1, *counts.shape)).astype(np.float64)
    return graph.div(total, n.constant(shaped, element(x)))  # type: ignore[no-any-return]


@converts("LpPool")
def _lp_pool(n: Node) -> Results:
    x = n.input(0)
    if rank(x) < 3:
        raise ConversionError(f"LpPool needs an N x C x ... input, got rank {rank(x)}")
    return window_pool(n, x, "lp")


@converts("MaxUnpool")
def _max_unpool(n: Node) -> Results:
    x, where = n.input(0), cast(n.input(1), i64)
    dims = static_dims(x, "MaxUnpool")
    kernel = n.attr("kernel_shape")
    k = len(kernel)
    strides, pads = n.attr("strides", (1,) * k), n.attr("pads", (0,) * (2 * k))
    inferred = [
        *dims[:2],
        *(
            (d - 1) * s - (pads[i] + pads[i + k]) + kern
            for i, (d, s, kern) in enumerate(zip(dims[2:], strides, kernel))
        ),
    ]
    # the indices are flat positions in the whole unpooled tensor, as MaxPool's Indices output gives them
    zeros = n.constant(np.zeros(math.prod(inferred)), element(x))
    flat = graph.scatter_elements(zeros, graph.reshape(where, shape=(-1,)), graph.reshape(x, shape=(-1,)), axis=0)
    out = graph.reshape(flat, shape=tuple(inferred))
    if not n.has(2):
        return out
    wanted = n.ints(2)
    grow = [w - i for w, i in zip(wanted, inferred)]
    if any(g < 0 for g in grow):
        raise ConversionError(f"MaxUnpool output_shape {list(wanted)} is smaller than the unpooled {inferred}")
    return graph.pad(out, pads=(0,) * len(grow) + tuple(grow))
