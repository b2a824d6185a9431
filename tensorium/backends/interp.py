"""The reference interpreter: runs graph-level modules on numpy arrays.

Each op's meaning is its declaration's ``reference`` function; the interpreter only moves arrays
between values and brings each result to its IR type (numpy dtype, integer width, bf16 rounding).
It is the oracle every other backend and every pass is tested against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InterpreterError
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, func_name, pick_function
from ..ir.evaluate import COMPUTES_REGION, evaluate_op, op_location
from ..ir.storage import check_array, coerce, round_to_bf16, wrap_integers
from ..ir.types import TensorType, Type

__all__ = ["check_value", "coerce", "evaluate_op", "round_to_bf16", "run", "run_function", "wrap_integers"]


def check_value(array: np.ndarray, t: Type, what: str, bindings: dict[str, int]) -> None:
    """Raise InterpreterError unless ``array`` fits tensor type ``t`` (binding named dims)."""
    if isinstance(t, TensorType):
        check_array(array, t, what, bindings, dtype=False)


def run_function(func: Operation, args: Sequence[Any]) -> list[np.ndarray]:
    """Run ``func`` on ``args`` (positional, one per function argument)."""
    block = func_body(func)
    name = func_name(func)
    if len(args) != len(block.args):
        raise InterpreterError(f"@{name} takes {len(block.args)} inputs, got {len(args)}")
    env: dict[int, np.ndarray] = {}
    bindings: dict[str, int] = {}
    for i, (arg, value) in enumerate(zip(block.args, args)):
        label = f"@{name} input #{i}" + (f" '{arg.name_hint}'" if arg.name_hint else "")
        env[id(arg)] = _bind_input(arg, value, label, bindings)
    for op in block.ops:
        if op.name == "func.return":
            outs = [env[id(v)] for v in op.operands]
            return [a if a.flags.writeable else a.copy() for a in outs]
        if op.regions and not op.has_trait(COMPUTES_REGION):
            raise InterpreterError(
                f"{op_location(op)}'{op.name}' has regions; the interpreter runs graph-level ops only"
            )
        results = evaluate_op(op, [env[id(v)] for v in op.operands])
        for r, arr in zip(op.results, results):
            check_value(arr, r.type, f"{op_location(op)}result #{r.index} of '{op.name}'", bindings)
            env[id(r)] = arr
    raise InterpreterError(f"@{name} has no func.return")


def _bind_input(arg: Value, value: Any, what: str, bindings: dict[str, int]) -> np.ndarray:
    arr = np.asarray(value)
    if isinstance(arg.type, TensorType):
        check_array(arr, arg.type, what, bindings)
    return arr


def run(
    module: Operation,
    inputs: Sequence[Any] | Mapping[str, Any] = (),
    func: str | None = None,
) -> list[np.ndarray]:
    """Run a function of ``module`` (``main``, or the only one) on numpy inputs.

    ``inputs`` is a sequence in argument order or a mapping from argument names to arrays.
    """
    target = pick_function(module, func)
    block = func_body(target)
    if isinstance(inputs, Mapping):
        names = [a.name_hint or f"arg{i}" for i, a in enumerate(block.args)]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise InterpreterError(f"@{func_name(target)} has no input named {unknown[0]!r}; inputs are {names}")
        missing = [n for n in names if n not in inputs]
        if missing:
            raise InterpreterError(f"@{func_name(target)}: missing input {missing[0]!r}")
        args = [inputs[n] for n in names]
    else:
        args = list(inputs)
    return run_function(target, args)
