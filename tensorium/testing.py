"""Helpers for testing ops and passes: one-op modules that must verify and round-trip through text,
and the expected-failures files of the conformance suites.

Used by Tensorium's own tests and meant for anyone who declares an op or writes a pass.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .backends.interp import run
from .errors import VerifyError
from .ir.builder import InsertionPoint
from .ir.core import Operation
from .ir.dialects.builtin import func_body, func_type, functions, make_func, make_module, set_results
from .ir.opdef import OpDef
from .ir.parser import parse_module
from .ir.printer import print_module
from .ir.types import ScalarType, TensorType, Type, scalar_type_of
from .ir.verifier import verify


def build_module(inputs: Sequence[Type], body: Callable[..., Any], check_text: bool = True) -> Operation:
    """A verified module whose @main(x0, x1, ...) returns ``body(*args)`` (a value or a sequence).

    With ``check_text`` the module must print, parse and print back to the same text.
    """
    func = make_func("main", inputs, arg_names=[f"x{i}" for i in range(len(inputs))])
    block = func_body(func)
    with InsertionPoint(block):
        out = body(*block.args)
    set_results(func, list(out) if isinstance(out, (tuple, list)) else [out])
    module = make_module([func])
    verify(module)
    if check_text:
        text = print_module(module)
        assert print_module(parse_module(text)) == text, text
    return module


def run_op(op: OpDef, *arrays: np.ndarray, elements: Sequence[ScalarType] = (), **attrs: Any) -> Any:
    """``op`` applied to ``arrays`` in the interpreter; element types follow the dtypes unless given.

    Returns the single result, or a list when the op has several.
    """
    kinds = list(elements) or [scalar_type_of(a.dtype) for a in arrays]
    types = [TensorType(tuple(a.shape), e) for a, e in zip(arrays, kinds)]
    outs = run(build_module(types, lambda *xs: op(*xs, **attrs)), list(arrays))
    return outs[0] if len(outs) == 1 else outs


def result_type(op: OpDef, *types: Type, **attrs: Any) -> Type:
    """The result type ``op`` infers for operands of ``types`` (first result when several)."""
    module = build_module(types, lambda *xs: op(*xs, **attrs))
    return func_type(functions(module)[0]).results[0]


def op_error(op: OpDef, *types: Type, **attrs: Any) -> str:
    """The VerifyError message building ``op`` on operands of ``types`` gives (fails if none)."""
    args = func_body(make_func("f", types)).args
    try:
        op(*args, **attrs)
    except VerifyError as e:
        assert e.op_name == op.name
        return e.message
    raise AssertionError(f"building {op.name} on {[str(t) for t in types]} did not fail")


def expected_failures(path: str | os.PathLike[str]) -> dict[str, str]:
    """A conformance suite's expected failures: case name -> the reason comment of its group.

    The file lists one case name per line, grouped under ``# reason`` comment lines.
    """
    out: dict[str, str] = {}
    reason = ""
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith("#"):
            reason = line.lstrip("# ")
        elif line:
            out[line] = reason
    return out
