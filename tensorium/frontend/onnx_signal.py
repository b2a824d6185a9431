"""ONNX signal ops: DFT and STFT as matmuls with constant transform matrices, and the window generators.

Every DFT variant (forward, inverse, one-sided, the inverse of a one-sided transform, with padding
or truncation to ``dft_length``) is real-linear in the real and imaginary parts of its input, so
the importer takes numpy's FFT of the unit vectors to get the four real matrices of that map and
applies them with matmuls. Hann, Hamming and Blackman windows and the MelWeightMatrix filters are
constants of their (constant) arguments.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.shapes import normalize_axis
from ..ir.types import f32
from .onnx_context import ConversionError, Node, scalar_type
from .onnx_ops import Results, converts, element, rank, static_dims, take

Transform = Callable[[np.ndarray], np.ndarray]


def _transform(length: int, inverse: bool, onesided: bool) -> Transform:
    """The complex transform of the last axis that a DFT node computes."""
    if inverse and onesided:
        return lambda z: np.fft.irfft(z, n=length, axis=-1)
    if inverse:
        return lambda z: np.fft.ifft(z, n=length, axis=-1)
    if onesided:
        return lambda z: np.fft.fft(z, n=length, axis=-1)[..., : length // 2 + 1]
    return lambda z: np.fft.fft(z, n=length, axis=-1)


def _dft_last(n: Node, re: Value, im: Value | None, size: int, fn: Transform, real_out: bool) -> Value:
    """``fn`` applied to re + i*im along their last axis; (..., K, 2), or (..., K, 1) for a real result."""
    from_re, from_im = fn(np.eye(size)), fn(1j * np.eye(size))
    parts = []
    for pick in (np.real,) if real_out else (np.real, np.imag):
        out = graph.matmul(re, n.constant(pick(from_re).astype(np.float32), element(re)))
        if im is not None:
            out = graph.add(out, graph.matmul(im, n.constant(pick(from_im).astype(np.float32), element(im))))
        parts.append(graph.unsqueeze(out, axes=(-1,)))
    return parts[0] if len(parts) == 1 else graph.concat(parts, axis=-1)  # type: ignore[no-any-return]


def _complex_parts(x: Value) -> tuple[Value, Value | None]:
    """The real and imaginary parts of (..., 1 or 2) input ``x``, with the last axis dropped."""
    channels = static_dims(x, "DFT")[-1]
    if channels not in (1, 2):
        raise ConversionError(f"the last dim of a DFT input must be 1 (real) or 2 (complex), got {channels}")
    last = rank(x) - 1
    return take(x, last, 0), take(x, last, 1) if channels == 2 else None


@converts("DFT")
def _dft(n: Node) -> Results:
    x = n.input(0)
    r = rank(x)
    if n.opset >= 20:
        axis = int(n.const(2).reshape(())) if n.has(2) else -2
    else:
        axis = n.attr("axis", 1)
    axis = normalize_axis(axis, r)
    if axis == r - 1:
        raise ConversionError("DFT along the last (real/imaginary) axis is not possible")
    inverse, onesided = bool(n.attr("inverse", 0)), bool(n.attr("onesided", 0))
    size = static_dims(x, "DFT")[axis]
    length = int(n.const(1).reshape(())) if n.has(1) else (2 * (size - 1) if inverse and onesided else size)
    perm = list(range(r))
    perm[axis], perm[r - 2] = r - 2, axis
    moved = graph.transpose(x, perm=tuple(perm)) if axis != r - 2 else x
    re, im = _complex_parts(moved)
    out = _dft_last(n, re, im, size, _transform(length, inverse, onesided), real_out=inverse and onesided)
    return graph.transpose(out, perm=tuple(perm)) if axis != r - 2 else out


@converts("STFT")
def _stft(n: Node) -> Results:
    x = n.input(0)
    length = static_dims(x, "STFT")[1]
    step = int(n.const(1).reshape(()))
    window = n.optional(2)
    frame = int(n.const(3).reshape(())) if n.has(3) else (static_dims(window, "STFT")[0] if window else length)
    frames = 1 + (length - frame) // step
    re, im = _complex_parts(x)
    pieces = []
    for f in range(frames):
        parts = [graph.slice(p, starts=(f * step,), ends=(f * step + frame,), axes=(1,)) for p in (re, im) if p]
        if window is not None:
            parts = [graph.mul(p, window) for p in parts]
        pieces.append([graph.unsqueeze(p, axes=(1,)) for p in parts])
    framed = [graph.concat([p[k] for p in pieces], axis=1) for k in range(len(pieces[0]))]
    onesided = bool(n.attr("onesided", 1))
    return _dft_last(
        n, framed[0], framed[1] if len(framed) > 1 else None, frame, _transform(frame, False, onesided), False
    )


def _window(n: Node, values: Callable[[np.ndarray, int], np.ndarray]) -> Value:
    size = int(n.const(0).reshape(()))
    span = size if n.attr("periodic", 1) else size - 1
    to = scalar_type(n.attr("output_datatype")) if "output_datatype" in n.attrs else f32
    return n.constant(values(np.arange(size, dtype=np.float64), span), to)


@converts("HannWindow")
def _hann(n: Node) -> Results:
    return _window(n, lambda i, span: np.sin(i * np.pi / span) ** 2)


@converts("HammingWindow")
def _hamming(n: Node) -> Results:
    return _window(n, lambda i, span: 25 / 46 - 21 / 46 * np.cos(2 * np.pi * i / span))


@converts("BlackmanWindow")
def _blackman(n: Node) -> Results:
    return _window(n, lambda i, span: 0.42 - 0.5 * np.cos(2 * np.pi * i / span) + 0.08 * np.cos(4 * np.pi * i / span))


@converts("MelWeightMatrix")
def _mel_weight_matrix(n: Node) -> Results:
    bins, length, rate = (int(n.const(i).reshape(())) for i in range(3))
    low, high = (float(n.const(i).reshape(())) for i in (3, 4))
    to = scalar_type(n.attr("output_datatype")) if "output_datatype" in n.attrs else f32
    return n.constant(mel_weights(bins, length, rate, low, high), to)


def mel_weights(bins: int, length: int, rate: int, low: float, high: float) -> np.ndarray:
    """The [length // 2 + 1, bins] triangular filters of ONNX's MelWeightMatrix (edges on the mel scale)."""
    low_mel, high_mel = 2595 * np.log10(1 + low / 700), 2595 * np.log10(1 + high / 700)
    edges_mel = np.arange(bins + 2) * ((high_mel - low_mel) / (bins + 2)) + low_mel
    edges = ((length + 1) * (700 * (10 ** (edges_mel / 2595) - 1)) // rate).astype(int)
    out = np.zeros((length // 2 + 1, bins))
    for i in range(bins):
        left, centre, right = edges[i], edges[i + 1], edges[i + 2]
        if centre == left:
            out[centre, i] = 1
        else:
            out[left : centre + 1, i] = (np.arange(left, centre + 1) - left) / (centre - left)
        if right > centre:
            out[centre:right, i] = (right - np.arange(centre, right)) / (right - centre)
    return out
