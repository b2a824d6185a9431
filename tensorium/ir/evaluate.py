"""Evaluating one op on numpy arrays through its declared reference semantics.

The interpreter runs whole functions with this; constant folding evaluates single ops with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InterpreterError
from .core import Block, Operation
from .storage import coerce
from .types import TensorType

COMPUTES_REGION = "computes_region"
"""Trait of ops whose results are their single-block region run on their operands (the block's terminator
gives them), such as ``graph.fused``."""


def evaluate_op(op: Operation, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run one op on arrays; returns its results, each coerced to its IR type."""
    opdef = op.opdef
    if opdef is not None and opdef.has_trait(COMPUTES_REGION):
        return run_block(op.regions[0].block, args)
    if opdef is None or opdef.reference is None:
        raise InterpreterError(f"{op_location(op)}'{op.name}' has no reference semantics")
    grouped = opdef.group_operands(list(args))
    try:
        out = opdef.reference(*grouped, **opdef.attr_kwargs(op))
    except InterpreterError:
        raise
    except (ValueError, IndexError, TypeError, ArithmeticError, MemoryError) as e:
        raise InterpreterError(f"{op_location(op)}'{op.name}' failed: {e}") from e
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(op.results):
        raise InterpreterError(f"{op_location(op)}'{op.name}' produced {len(outs)} results, expected {len(op.results)}")
    results = []
    for r, value in zip(op.results, outs):
        t = r.type
        arr = coerce(value, t.element) if isinstance(t, TensorType) else np.asarray(value)
        results.append(arr)
    return results


def run_block(block: Block, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run the ops of ``block`` on ``args`` (one per block argument); gives its terminator's operands."""
    env = {id(a): v for a, v in zip(block.args, args)}
    for op in block.ops:
        if op.has_trait("terminator"):
            return [env[id(v)] for v in op.operands]
        env.update((id(r), value) for r, value in zip(op.results, evaluate_op(op, [env[id(v)] for v in op.operands])))
    raise InterpreterError("a block run for its values has no terminator")


def op_location(op: Operation) -> str:
    """``file:line:col: `` of ``op``, or nothing when it has no location."""
    return f"{op.loc}: " if op.loc is not None else ""
