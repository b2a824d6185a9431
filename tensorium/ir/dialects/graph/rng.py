"""Graph ops: random numbers from Tensorium's own counter-based generator.

``graph.random`` draws element i of its result from a hash of (seed, i) alone, so the interpreter and
every backend produce the same numbers without sharing generator state. The seed is the op's ``seed``
attribute (one per op, fixed when the model is built), mixed at run time with an optional ``key``
operand: two int64 numbers (a user seed and a call counter) that a frontend feeds from a bound parameter
the runtime advances after every call, so successive calls draw fresh numbers and a seed reproduces
them (without ``key`` every call draws the same numbers). The hash keeps every
intermediate below 2**47, so it needs only 64-bit integer multiply, remainder, division and xor:
three rounds of a Lehmer step modulo 2**31 - 1 each followed by an xor with the value shifted right by
13 bits. Uniform draws are (h + 0.5) / (2**31 - 1) in (0, 1); normal draws combine two uniform
streams by Box-Muller. The numbers are for dropout masks and noise, not for cryptography.
"""

from __future__ import annotations

import math

import numpy as np

from ...attributes import IntAttr, IntsAttr, ScalarTypeAttr, StrAttr
from ...opdef import InferError, define
from ...types import ScalarType, TensorType, Type, i64
from .common import check_dtype

__all__ = ["KEY_SCALE", "MODULUS", "mix", "mixed_seed", "random", "random_bits", "random_reference", "start_offset"]

MODULUS = 2**31 - 1
MULTIPLIER = 48271
INDEX_SCALE = 2654435
SEED_SCALE = 40503
STREAM_SCALE = 977
ROUNDS = 3
SHIFT = 2**13
KEY_SCALE = 65539


def mix(seed: int, word: int) -> int:
    """One key word folded into a seed: an add of the word (reduced mod 2**31 - 1, scaled), then a Lehmer
    step and the xor shift, so nearby keys give unrelated seeds."""
    x = (seed % MODULUS + (word % MODULUS) * KEY_SCALE + 1) % MODULUS
    x = (x * MULTIPLIER) % MODULUS
    return x ^ (x // SHIFT)


def mixed_seed(seed: int, key: np.ndarray | None) -> int:
    """The seed the hash starts from: ``seed`` itself without a key, else each of the key's two words
    (non-negative int64) folded in by :func:`mix`."""
    if key is None:
        return seed
    words = [int(w) for w in np.asarray(key).reshape(-1)]
    if any(w < 0 for w in words):
        raise ValueError(f"random key words must be >= 0, got {words}")
    for word in words:
        seed = mix(seed, word)
    return seed


def start_offset(seed: int, stream: int) -> int:
    """What the first step adds to ``index * INDEX_SCALE``: the seed's and the stream's share."""
    return (seed % MODULUS) * SEED_SCALE + stream * STREAM_SCALE + 12345


def random_bits(seed: int, stream: int, index: np.ndarray) -> np.ndarray:
    """The generator's hash of (seed, stream, index) for an int64 index array: int64 values in [0, 2**31 - 1)."""
    x = (index * INDEX_SCALE + start_offset(seed, stream)) % MODULUS
    for _ in range(ROUNDS):
        x = (x * MULTIPLIER) % MODULUS
        x = x ^ (x // SHIFT)
    return x


def _uniform(seed: int, stream: int, index: np.ndarray) -> np.ndarray:
    return (random_bits(seed, stream, index).astype(np.float64) + 0.5) / MODULUS


def random_reference(
    key: np.ndarray | None, *, shape: tuple[int, ...], dtype: ScalarType, distribution: str, seed: int
) -> np.ndarray:
    """The op's values in f64 (the interpreter casts them to ``dtype``)."""
    seed = mixed_seed(seed, key)
    index = np.arange(math.prod(shape), dtype=np.int64)
    if distribution == "uniform":
        values = _uniform(seed, 0, index)
    else:
        radius = np.sqrt(-2.0 * np.log(_uniform(seed, 0, index)))
        values = radius * np.cos(2.0 * math.pi * _uniform(seed, 1, index))
    return values.reshape(shape)


def _random_infer(key: Type | None, *, shape: tuple[int, ...], dtype: ScalarType, distribution: str, seed: int) -> Type:
    if key is not None and (not isinstance(key, TensorType) or key.shape != (2,) or key.element != i64):
        raise InferError(f"random key must be tensor<2xi64> (a seed and a call counter), got {key}")
    if any(d < 0 for d in shape):
        raise InferError(f"random shape {list(shape)} has a negative dim")
    if seed < 0:
        raise InferError(f"random seed must be >= 0, got {seed}")
    t = TensorType(tuple(shape), dtype)
    check_dtype(t, "float", "random")
    return t


random = define(
    "graph.random",
    operands=("key?",),
    attrs={
        "shape": IntsAttr(),
        "dtype": ScalarTypeAttr(),
        "distribution": StrAttr("uniform", choices=("uniform", "normal")),
        "seed": IntAttr(0),
    },
    infer=_random_infer,
    reference=random_reference,
    traits=("pure",),
    doc="Random numbers of a float `dtype` from the counter-based generator: element i depends only on "
    "`seed`, the optional run-time `key` (tensor<2xi64>: a user seed and a call counter) and i. `uniform` in "
    "(0, 1), `normal` with mean 0 and variance 1 (Box-Muller).",
)
