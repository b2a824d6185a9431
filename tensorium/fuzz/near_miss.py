"""Near misses: the patterns of the pattern-matching passes with one element changed, which the pass must
refuse (a pass that over-matches computes something else, and the oracle sees it).

Each :class:`NearMissPattern` names its pass, the values it grows from, the exact pattern and its misses:
small builders that write the pattern out around a value ``x`` at the current insertion point with one
thing wrong (a softmax over the queries, a mask on the other side of the ``where``, siblings that read
different inputs, a batch norm along another axis, transposes whose permutations do not cancel, ``x * 0``
of floats, ``1 + x`` or ``x * -1`` of integers and floats, ...). A builder returns the value that may stand
in for ``x`` (same type) or None, and the values to return as extra outputs (what keeps an intermediate
alive, or a result of another type).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.core import Value
from ..ir.dialects.graph.shape import INT64_MAX
from ..ir.types import FloatType, IntegerType, TensorType, i1, storage_dtype
from .builder import build_op as op

Built = tuple[Value | None, list[Value]]
"""What a miss builds: a stand-in of ``x``'s type (or None) and extra outputs."""


@dataclass
class Materials:
    """What a miss builds from: the random source (constants are drawn from it too)."""

    rng: np.random.Generator

    def constant(self, t: TensorType, splat: float | None = None, low: float = -1.0) -> Value:
        """A constant of type ``t``: ``splat`` everywhere, or random floats in [low, 1] (bools at random)."""
        dtype = storage_dtype(t.element)
        if splat is not None:
            array = np.full(t.static_shape, splat, dtype=dtype)
        elif t.element == i1:
            array = self.rng.random(t.static_shape) < 0.6
        else:
            array = self.rng.uniform(low, 1, t.static_shape).astype(dtype)
        return op("graph.constant", value=DenseAttr(array, t))

    def scalar(self, value: float, like: Value) -> Value:
        return self.constant(TensorType((), _type(like).element), value)


Miss = Callable[[Materials, Value], Built]


@dataclass(frozen=True)
class NearMissPattern:
    """A pass's pattern and its near misses."""

    pass_name: str
    wants: Callable[[TensorType], bool]
    """Which values ``x`` the misses grow from."""
    exact: Miss
    """The pattern itself, which the pass takes (what the misses are measured against)."""
    misses: MappingProxyType[str, Miss]


def _type(v: Value) -> TensorType:
    assert isinstance(v.type, TensorType)
    return v.type


def _shape(v: Value) -> tuple[int, ...]:
    return _type(v).static_shape


def _float(rank: Callable[[int], bool]) -> Callable[[TensorType], bool]:
    return lambda t: t.is_static and isinstance(t.element, FloatType) and rank(t.rank) and 0 not in t.static_shape


# --- fuse-attention: softmax(x @ x^T * c) @ x, self-attention on x [..., S, D] ----------------------------
def _scores(m: Materials, x: Value) -> Value:
    return op("graph.mul", op("graph.matmul", x, x, transpose_b=True), m.scalar(float(_shape(x)[-1]) ** -0.5, x))


def _attend(probs: Value, x: Value) -> Value:
    return op("graph.matmul", probs, x)


def _attention(m: Materials, x: Value) -> Built:
    return _attend(op("graph.softmax", _scores(m, x), axis=-1), x), []


def _softmax_over_queries(m: Materials, x: Value) -> Built:
    return _attend(op("graph.softmax", _scores(m, x), axis=-2), x), []


def _scale_after_softmax(m: Materials, x: Value) -> Built:
    probs = op("graph.softmax", op("graph.matmul", x, x, transpose_b=True), axis=-1)
    return _attend(op("graph.mul", probs, m.scalar(0.5, x)), x), []


def _scale_by_a_vector(m: Materials, x: Value) -> Built:
    scores = op("graph.matmul", x, x, transpose_b=True)
    scale = m.constant(TensorType(_shape(scores)[-1:], _type(x).element))
    return _attend(op("graph.softmax", op("graph.mul", scores, scale), axis=-1), x), []


def _divided_by_the_scores(m: Materials, x: Value) -> Built:
    scores = op("graph.matmul", x, x, transpose_b=True)
    scaled = op("graph.div", m.scalar(2.0, x), op("graph.add", op("graph.abs", scores), m.scalar(1.0, x)))
    return _attend(op("graph.softmax", scaled, axis=-1), x), []


def _keep(m: Materials, scores: Value) -> Value:
    rows, cols = _shape(scores)[-2:]
    keep = m.rng.random((rows, cols)) < 0.6
    keep[:, 0] = True
    return op("graph.constant", value=DenseAttr(keep, TensorType((rows, cols), i1)))


def _mask_on_the_other_side(m: Materials, x: Value) -> Built:
    scores = _scores(m, x)
    masked = op("graph.where", _keep(m, scores), m.scalar(-np.inf, x), scores)
    return _attend(op("graph.softmax", masked, axis=-1), x), []


def _finite_mask_fill(m: Materials, x: Value) -> Built:
    scores = _scores(m, x)
    masked = op("graph.where", _keep(m, scores), scores, m.scalar(-3.0, x))
    return _attend(op("graph.softmax", masked, axis=-1), x), []


def _mask_after_softmax(m: Materials, x: Value) -> Built:
    probs = op("graph.softmax", _scores(m, x), axis=-1)
    mask = m.constant(TensorType(_shape(probs)[-1:], _type(x).element))
    return _attend(op("graph.add", probs, mask), x), []


def _log_softmax(m: Materials, x: Value) -> Built:
    return _attend(op("graph.log_softmax", _scores(m, x), axis=-1), x), []


def _scores_used_twice(m: Materials, x: Value) -> Built:
    scores = _scores(m, x)
    return _attend(op("graph.softmax", scores, axis=-1), x), [scores]


def _probabilities_used_twice(m: Materials, x: Value) -> Built:
    probs = op("graph.softmax", _scores(m, x), axis=-1)
    return _attend(probs, x), [probs]


# --- fuse-siblings: x @ W1 + x @ W2 with constant square weights -------------------------------------------
def _weight(m: Materials, x: Value, columns: int | None = None) -> Value:
    k = _shape(x)[-1]
    return m.constant(TensorType((k, k if columns is None else columns), _type(x).element))


def _siblings(m: Materials, x: Value) -> Built:
    return op("graph.add", op("graph.matmul", x, _weight(m, x)), op("graph.matmul", x, _weight(m, x))), []


def _siblings_of_other_inputs(m: Materials, x: Value) -> Built:
    other = op("graph.neg", x)
    return op("graph.add", op("graph.matmul", x, _weight(m, x)), op("graph.matmul", other, _weight(m, x))), []


def _computed_weight(m: Materials, x: Value) -> Built:
    computed = op("graph.tanh", _weight(m, x))
    return op("graph.add", op("graph.matmul", x, _weight(m, x)), op("graph.matmul", x, computed)), []


def _other_width(m: Materials, x: Value) -> Built:
    k = _shape(x)[-1]
    wide = op("graph.matmul", x, _weight(m, x, k + 1))
    return op("graph.matmul", x, _weight(m, x)), [wide]


def _transpose_a_on_one(m: Materials, x: Value) -> Built:
    if _shape(x)[-1] != _shape(x)[-2]:
        return None, []
    flipped = op("graph.matmul", x, _weight(m, x), transpose_a=True)
    return op("graph.add", op("graph.matmul", x, _weight(m, x)), flipped), []


# --- fold-batch-norm: batch_norm(conv2d(x, W)) along the channels of an NCHW x ----------------------------
def _conv(m: Materials, x: Value, out: int | None = None) -> Value:
    c = _shape(x)[1]
    w = m.constant(TensorType((c if out is None else out, c, 3, 3), _type(x).element))
    return op("graph.conv2d", x, w, padding=[1, 1, 1, 1])


def _norm(m: Materials, y: Value, axis: int = 1, var: Value | None = None) -> Value:
    t = TensorType((_shape(y)[axis],), _type(y).element)
    variance = var if var is not None else m.constant(t, low=0.1)
    return op("graph.batch_norm", y, m.constant(t), m.constant(t), m.constant(t), variance, axis=axis)


def _same_type(y: Value, x: Value) -> Value | None:
    """``y`` when it may stand in for ``x``."""
    return y if _type(y) == _type(x) else None


def _conv_batch_norm(m: Materials, x: Value) -> Built:
    return _same_type(_norm(m, _conv(m, x)), x), []


def _norm_along_height(m: Materials, x: Value) -> Built:
    y = _conv(m, x, out=_shape(x)[2])
    return None, [_norm(m, y, axis=2)]


def _conv_used_twice(m: Materials, x: Value) -> Built:
    y = _conv(m, x)
    return _same_type(_norm(m, y), x), [y]


def _variance_of_the_input(m: Materials, x: Value) -> Built:
    var = op("graph.add", op("graph.abs", op("graph.reduce_mean", x, axes=[0, 2, 3])), m.scalar(0.5, x))
    return _same_type(_norm(m, _conv(m, x), var=var), x), []


def _activation_between(m: Materials, x: Value) -> Built:
    return _same_type(_norm(m, op("graph.relu", _conv(m, x))), x), []


def _transposed_convolution(m: Materials, x: Value) -> Built:
    c = _shape(x)[1]
    w = m.constant(TensorType((c, c, 3, 3), _type(x).element))
    return _same_type(_norm(m, op("graph.conv_transpose2d", x, w, padding=[1, 1, 1, 1])), x), []


# --- canonicalize: chains of shape ops that look as if they cancel, and do not -----------------------------
def _transposes_inverse(m: Materials, x: Value) -> Built:
    p = [int(i) for i in np.roll(np.arange(_type(x).rank), 1)]
    return op("graph.transpose", op("graph.transpose", x, perm=p), perm=[int(i) for i in np.argsort(p)]), []


def _transposes_not_inverse(m: Materials, x: Value) -> Built:
    rank = _type(x).rank
    p = [int(i) for i in np.roll(np.arange(rank), 1)]  # a cycle: its own inverse only for rank 2
    once = op("graph.transpose", x, perm=p)
    twice = op("graph.transpose", once, perm=p if rank > 2 else [0, 1])
    return _same_type(twice, x), [twice]


def _reshape_not_back(m: Materials, x: Value) -> Built:
    shape = list(_shape(x))
    flat = op("graph.reshape", x, shape=[-1])
    other = shape[::-1] if shape[::-1] != shape else [int(np.prod(shape))]
    return None, [op("graph.reshape", flat, shape=other)]


def _reverse_two_axes(m: Materials, x: Value) -> Built:
    shape = _shape(x)
    first, second = 0, len(shape) - 1

    def reverse(v: Value, axis: int) -> Value:
        return op("graph.slice", v, starts=[-1], ends=[-INT64_MAX], axes=[axis], steps=[-1])

    return reverse(reverse(x, first), second), []


def _reverse_all_but_one(m: Materials, x: Value) -> Built:
    size = _shape(x)[-1]
    if size < 2:
        return None, []
    once = op("graph.slice", x, starts=[-2], ends=[-size - 1], axes=[-1], steps=[-1])
    return None, [op("graph.slice", once, starts=[-1], ends=[-size - 1], axes=[-1], steps=[-1])]


def _squeeze_another_axis(m: Materials, x: Value) -> Built:
    rank = _type(x).rank
    wide = op("graph.unsqueeze", x, axes=[0, rank + 1])
    return None, [op("graph.squeeze", wide, axes=[rank + 1])]


# --- canonicalize: identities of the reals that IEEE floats break (NaN, inf, -0.0) ------------------------------
def _times_one(m: Materials, x: Value) -> Built:
    return op("graph.mul", x, m.scalar(1.0, x)), []


def _times_zero(m: Materials, x: Value) -> Built:
    return op("graph.mul", x, m.scalar(0.0, x)), []


def _minus_itself(m: Materials, x: Value) -> Built:
    return op("graph.sub", x, x), []


def _divided_by_itself(m: Materials, x: Value) -> Built:
    return op("graph.div", x, x), []


def _equal_to_itself(m: Materials, x: Value) -> Built:
    return None, [op("graph.eq", x, x)]


# --- canonicalize: the identities x + 0, x - 0, x * 1, x / 1 with another splat, or on the other side --------------
def _arithmetic(t: TensorType) -> bool:
    """Static, non-empty tensors of floats or of integers that are not bool (the identities' operands)."""
    element = t.element
    number = isinstance(element, FloatType) or (isinstance(element, IntegerType) and not element.is_bool)
    return t.is_static and number and 0 not in t.static_shape


def _splat(m: Materials, value: int, x: Value) -> Value:
    """A splat of ``value`` of x's element type, rank 0 or x's shape: integers wrap to their width, so -1 of an
    unsigned type is its maximum and 2 of ``i2`` is -2."""
    t = _type(x)
    element = t.element
    if isinstance(element, IntegerType):
        value %= 1 << element.width
        if element.signed and value > element.max_value:
            value -= 1 << element.width
    shape = TensorType((), element) if m.rng.random() < 0.5 else t
    return m.constant(shape, value)


INTEGER_DETOURS = (
    IntegerType(8),
    IntegerType(32),
    IntegerType(64),
    IntegerType(8, False),
    IntegerType(5),
    IntegerType(3, False),
)
"""The integer types a float ``x`` is cast to, half the time, before an identity's miss (and cast back after):
the integer identities (``x * 0`` folds to zeros only for integers) need integer values, which generated
programs, mostly of floats, rarely have."""
DETOUR_PROBABILITY = 0.5
"""How often a float ``x`` takes the integer detour."""


def _binary(name: str, lhs: int | None, rhs: int | None) -> Miss:
    """``x op c`` (``rhs``) or ``c op x`` (``lhs``) with a splat c; for a float ``x``, half the time on ``x``
    cast to an integer type (:data:`INTEGER_DETOURS`) and the result cast back."""

    def build(m: Materials, x: Value) -> Built:
        element = _type(x).element
        detour = isinstance(element, FloatType) and m.rng.random() < DETOUR_PROBABILITY
        if detour:
            x = op("graph.cast", x, dtype=INTEGER_DETOURS[int(m.rng.integers(len(INTEGER_DETOURS)))])
        a = x if lhs is None else _splat(m, lhs, x)
        b = x if rhs is None else _splat(m, rhs, x)
        result = op(f"graph.{name}", a, b)
        return (op("graph.cast", result, dtype=element) if detour else result), []

    return build


NEAR_MISSES: MappingProxyType[str, NearMissPattern] = MappingProxyType(
    {
        "attention": NearMissPattern(
            "fuse-attention",
            _float(lambda r: 2 <= r <= 4),
            _attention,
            MappingProxyType(
                {
                    "softmax-over-queries": _softmax_over_queries,
                    "scale-after-softmax": _scale_after_softmax,
                    "scale-by-a-vector": _scale_by_a_vector,
                    "divided-by-the-scores": _divided_by_the_scores,
                    "mask-on-the-other-side": _mask_on_the_other_side,
                    "finite-mask-fill": _finite_mask_fill,
                    "mask-after-softmax": _mask_after_softmax,
                    "log-softmax": _log_softmax,
                    "scores-used-twice": _scores_used_twice,
                    "probabilities-used-twice": _probabilities_used_twice,
                }
            ),
        ),
        "siblings": NearMissPattern(
            "fuse-siblings",
            _float(lambda r: r >= 2),
            _siblings,
            MappingProxyType(
                {
                    "other-inputs": _siblings_of_other_inputs,
                    "computed-weight": _computed_weight,
                    "other-width": _other_width,
                    "transpose-a-on-one": _transpose_a_on_one,
                }
            ),
        ),
        "batch-norm": NearMissPattern(
            "fold-batch-norm",
            _float(lambda r: r == 4),
            _conv_batch_norm,
            MappingProxyType(
                {
                    "norm-along-height": _norm_along_height,
                    "conv-used-twice": _conv_used_twice,
                    "variance-of-the-input": _variance_of_the_input,
                    "activation-between": _activation_between,
                    "transposed-convolution": _transposed_convolution,
                }
            ),
        ),
        "transpose": NearMissPattern(
            "canonicalize",
            lambda t: t.is_static and t.rank >= 2 and 0 not in t.static_shape,
            _transposes_inverse,
            MappingProxyType(
                {
                    "transposes-not-inverse": _transposes_not_inverse,
                    "reshape-not-back": _reshape_not_back,
                    "reverse-two-axes": _reverse_two_axes,
                    "reverse-all-but-one": _reverse_all_but_one,
                    "squeeze-another-axis": _squeeze_another_axis,
                }
            ),
        ),
        "float-identity": NearMissPattern(
            "canonicalize",
            _float(lambda r: True),
            _times_one,
            MappingProxyType(
                {
                    "times-zero": _times_zero,
                    "minus-itself": _minus_itself,
                    "divided-by-itself": _divided_by_itself,
                    "equal-to-itself": _equal_to_itself,
                }
            ),
        ),
        "splat-identity": NearMissPattern(
            "canonicalize",
            _arithmetic,
            _binary("add", None, 0),
            MappingProxyType(
                {
                    "one-plus-x": _binary("add", 1, None),
                    "x-plus-one": _binary("add", None, 1),
                    "x-minus-one": _binary("sub", None, 1),
                    "zero-minus-x": _binary("sub", 0, None),
                    "x-times-minus-one": _binary("mul", None, -1),
                    "minus-one-times-x": _binary("mul", -1, None),
                    "x-times-two": _binary("mul", None, 2),
                    "x-divided-by-minus-one": _binary("div", None, -1),
                    "one-divided-by-x": _binary("div", 1, None),
                }
            ),
        ),
    }
)
"""Every near-miss pattern by name."""
