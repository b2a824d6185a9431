"""What IEEE 754 leaves open in a program's results: the sign of some zeros.

The differential oracle holds backends and passes to the reference's signed zeros, except where the
standard lets two correct implementations differ: a zero that is a sum of zeros (``-0 + +0``, and every
zero a reduction or contraction makes, whose order of summation is the backend's choice), the minimum or
maximum of two zeros (``max(-0, +0)``, ``relu(-0)``), and whatever inherits such a zero's sign (``-x``,
``x * c``, ``1 / x``: a zero, or an infinity made from one). :func:`sign_free` finds those elements by
running the reference op by op beside a mask per value.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def sign_free(module: Operation, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per output of ``@main`` on ``inputs``, the elements whose sign IEEE 754 leaves open (see the module
    docstring); all False for non-float outputs."""
    func = lookup_func(module, "main")
    assert func is not None
    body = func_body(func)
    env: dict[int, np.ndarray] = {id(a): np.asarray(x) for a, x in zip(body.args, inputs)}
    free: dict[int, np.ndarray] = {id(a): np.zeros(np.shape(x), bool) for a, x in zip(body.args, inputs)}
    for op in body.ops:
        if op.name == "func.return":
            return [free[id(v)] for v in op.operands]
        args = [env[id(v)] for v in op.operands]
        results = evaluate_op(op, args)
        masks = _result_masks(op, args, [free[id(v)] for v in op.operands], results)
        for r, array, mask in zip(op.results, results, masks):
            env[id(r)] = np.asarray(array)
            free[id(r)] = mask
    raise AssertionError("@main has no func.return")


def _result_masks(
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
