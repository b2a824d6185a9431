"""What IEEE 754 leaves open in a program's results: the sign of some zeros, and sums that overflow.

The differential oracle holds backends and passes to the reference's signed zeros, except where the
standard lets two correct implementations differ: a zero that is a sum of zeros (``-0 + +0``, and every
zero a reduction or contraction makes, whose order of summation is the backend's choice), the minimum or
maximum of two zeros (``max(-0, +0)``, ``relu(-0)``), and whatever inherits such a zero's sign (``-x``,
``x * c``, ``1 / x``: a zero, or an infinity made from one). It also lets go of what is computed from a
sum whose terms and result are special-sized or not finite, since where it overflows depends on the order
of summation. :func:`freedoms` finds both kinds of elements by running the reference op by op beside two
masks per value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, lookup_func
from ..ir.evaluate import evaluate_op
from ..ir.types import FloatType, TensorType

ZERO_SUMS = frozenset({"graph.add", "graph.sub", "graph.max", "graph.min"})
"""Elementwise ops whose result is a zero of either sign when both operands are zeros."""
ZERO_CLAMPS = frozenset({"graph.relu", "graph.clamp"})
"""Elementwise ops that take the maximum (or minimum) of their operand and a zero bound."""
DATA_MOVEMENT: dict[str, tuple[int, ...] | None] = {
    "graph.transpose": (0,),
    "graph.reshape": (0,),
    "graph.squeeze": (0,),
    "graph.unsqueeze": (0,),
    "graph.broadcast_to": (0,),
    "graph.tile": (0,),
    "graph.slice": (0,),
    "graph.pad": (0,),
    "graph.concat": None,
    "graph.split": (0,),
    "graph.gather": (0,),
    "graph.gather_elements": (0,),
    "graph.gather_nd": (0,),
    "graph.embedding": (0,),
    "graph.tril": (0,),
    "graph.triu": (0,),
}
"""Ops that only move elements (operand positions of the data; None: all): a mask moves with them."""
MARKER = 3.0


def _is_float(v: Value) -> bool:
    return isinstance(v.type, TensorType) and isinstance(v.type.element, FloatType)


HUGE = {"f16": 3e4}
"""Magnitudes from which a float is special-sized (1e30 for types not listed): only special values and what
overflows from them get there."""
ORDER_FREE = frozenset(
    f"graph.{n}" for n in ("reduce_max", "reduce_min", "argmax", "argmin", "max_pool2d", "global_max_pool2d")
)
"""Ops that are not elementwise but whose result does not depend on an order of evaluation."""


@dataclass(frozen=True)
class Freedoms:
    """Per output of a program, the elements where two correct implementations may differ."""

    sign_free: list[np.ndarray]
    """Elements whose sign IEEE 754 leaves open (see the module docstring)."""
    order_dependent: list[np.ndarray]
    """Elements that depend on a sum (a reduction, contraction or normalization) whose terms include finite
    special-sized values and whose result is special-sized or not finite: where such a sum overflows, and
    whether +inf meets -inf (NaN), depends on the order and the precision of its summation, and so does
    everything computed from it."""


def special_sized(array: np.ndarray, huge: float) -> np.ndarray:
    """Where ``array`` is NaN, infinite or at least ``huge`` in magnitude."""
    a = np.asarray(array)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(a) | (np.abs(a) >= huge)


def huge_of(t: object) -> float:
    """The :data:`HUGE` magnitude of a tensor type's element (1e30 for non-floats)."""
    element = t.element if isinstance(t, TensorType) else None
    return HUGE.get(element.name, 1e30) if isinstance(element, FloatType) else 1e30


def freedoms(module: Operation, inputs: Sequence[np.ndarray]) -> Freedoms:
    """Run ``@main`` on ``inputs`` op by op beside two masks per value (:class:`Freedoms`)."""
    func = lookup_func(module, "main")
    assert func is not None
    body = func_body(func)
    env: dict[int, np.ndarray] = {id(a): np.asarray(x) for a, x in zip(body.args, inputs)}
    free: dict[int, np.ndarray] = {id(a): np.zeros(np.shape(x), bool) for a, x in zip(body.args, inputs)}
    order: dict[int, np.ndarray] = dict(free)
    for op in body.ops:
        if op.name == "func.return":
            return Freedoms([free[id(v)] for v in op.operands], [order[id(v)] for v in op.operands])
        args = [env[id(v)] for v in op.operands]
        with np.errstate(all="ignore"):  # NaN and overflow are what is being traced
            results = evaluate_op(op, args)
        masks = _sign_masks(op, args, [free[id(v)] for v in op.operands], results)
        orders = _order_masks(op, args, [order[id(v)] for v in op.operands], results)
        for r, array, mask, dependent in zip(op.results, results, masks, orders):
            env[id(r)] = np.asarray(array)
            free[id(r)] = mask
            order[id(r)] = dependent
    raise AssertionError("@main has no func.return")


def sign_free(module: Operation, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per output of ``@main`` on ``inputs``, the elements whose sign IEEE 754 leaves open (see the module
    docstring); all False for non-float outputs."""
    return freedoms(module, inputs).sign_free


def _order_masks(
    op: Operation, args: list[np.ndarray], masks: list[np.ndarray], results: Sequence[np.ndarray]
) -> list[np.ndarray]:
    outs = [np.asarray(r) for r in results]
    inherited = any(m.any() for m in masks)
    if op.has_trait("elementwise"):
        out = np.zeros(outs[0].shape, bool)
        for m in masks:
            if m.any():
                out |= np.broadcast_to(m, out.shape)
        return [out]
    if inherited or op.name in DATA_MOVEMENT or op.name in ORDER_FREE:
        # moved elements keep their masks only approximately: everything a dependent element reaches
        return [np.full(o.shape, inherited) for o in outs]
    # Only finite terms can overflow one way in one order and another way in another: infinities and NaN
    # alone give the same result in every order (+inf and -inf meet as NaN whenever both are there), but
    # in a factored einsum.
    operands_huge = any(_risky(op, a, v).any() for a, v in zip(args, op.operands))
    if not operands_huge:
        return [np.zeros(o.shape, bool) for o in outs]
    special = [special_sized(o, huge_of(r.type)) for o, r in zip(outs, op.results)]
    if op.name in SUMS_OF_PRODUCTS:
        special[0] &= _reaches_huge_terms(op, args)
    return special


FACTORED = frozenset({"graph.einsum"})
"""Ops an implementation may factor (sum an axis of one operand before multiplying), so that an infinite
factor meets a zero in one form (NaN) and not in the other (inf): infinities count as risky factors."""


def _risky(op: Operation, array: np.ndarray, value: Value) -> np.ndarray:
    """The factors of ``op`` whose sums depend on an order: finite special-sized ones (and infinite ones for
    :data:`FACTORED` ops); all False for non-floats."""
    a = np.asarray(array)
    if a.dtype.kind != "f":
        return np.zeros(a.shape, bool)
    special = special_sized(a, huge_of(value.type))
    return special & ~np.isnan(a) if op.name in FACTORED else special & np.isfinite(a)


SUMS_OF_PRODUCTS: dict[str, int] = {
    **{f"graph.{n}": 1 for n in ("reduce_sum", "reduce_mean", "cumsum", "avg_pool2d", "global_avg_pool2d")},
    **{f"graph.{n}": 2 for n in ("matmul", "einsum", "conv2d", "conv_transpose2d")},
}
"""Ops whose result elements are sums of products of this many operands (a bias after them added once): for
these, only the elements whose terms have a finite special-sized factor depend on an order."""


def _reaches_huge_terms(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    """Per result element of a :data:`SUMS_OF_PRODUCTS` op, whether one of its terms has a finite special-sized
    factor and no zero one: the op evaluated on indicators (the huge factor's, the others' nonzero ones; an
    added bias is its own term)."""
    factors = SUMS_OF_PRODUCTS[op.name]
    huge = [_risky(op, a, v).astype(a.dtype) for a, v in zip(args, op.operands)]
    nonzero = [(a != 0).astype(a.dtype) if np.asarray(a).dtype.kind == "f" else a for a in args]
    reached = None
    for k in range(len(args)):
        if k >= factors and not huge[k].any():
            continue
        if k >= factors:  # the bias: alone
            operands = [np.zeros_like(a) for a in args[:factors]] + [
                huge[k] if j == k else np.zeros_like(args[j]) for j in range(factors, len(args))
            ]
        else:
            operands = [
                huge[j] if j == k else nonzero[j] if j < factors else np.zeros_like(args[j]) for j in range(len(args))
            ]
        with np.errstate(all="ignore"):
            (value,) = evaluate_op(op, operands)
        found = np.asarray(value) != 0
        reached = found if reached is None else reached | found
    assert reached is not None
    return reached


def _sign_masks(
    op: Operation, args: list[np.ndarray], masks: list[np.ndarray], results: Sequence[np.ndarray]
) -> list[np.ndarray]:
    outs = [np.asarray(r) for r in results]
    floats = [_is_float(r) for r in op.results]
    none = [np.zeros(o.shape, bool) for o in outs]
    if not any(floats):
        return none
    if op.has_trait("elementwise"):
        out = outs[0]
        shape = out.shape
        inherited = np.zeros(shape, bool)
        if op.name == "graph.where":
            inherited = np.where(args[0], masks[1], masks[2])
        else:
            for v, m in zip(op.operands, masks):
                if _is_float(v) and m.any():
                    inherited |= np.broadcast_to(m, shape)
        zero = out == 0
        source = np.zeros(shape, bool)
        if op.name in ZERO_SUMS:
            source = np.broadcast_to(args[0] == 0, shape) & np.broadcast_to(args[1] == 0, shape)
        elif op.name in ZERO_CLAMPS:
            source = np.broadcast_to(args[0] == 0, shape)
        return [(inherited & (zero | np.isinf(out))) | (source & zero) if floats[0] else none[0]]
    if op.name in DATA_MOVEMENT:
        if not any(m.any() for m in masks):
            return none
        data = DATA_MOVEMENT[op.name]
        positions = range(len(args)) if data is None else data
        # the free elements as a marker value no pad or fill value of the generator takes
        moved = [np.where(masks[i], MARKER, 0.0).astype(a.dtype) if i in positions else a for i, a in enumerate(args)]
        return [np.asarray(m) == MARKER for m in evaluate_op(op, moved)]
    # reductions, contractions, normalizations, pools: the order of their sums is the backend's
    return [(o == 0) if f else n for o, f, n in zip(outs, floats, none)]
