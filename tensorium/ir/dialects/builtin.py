"""Modules, functions and returns: the containers every program lives in.

``builtin.module`` holds ``func.func`` ops; a function's single block takes the function's
arguments and ends with ``func.return``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import Location, SymbolError
from ..attributes import StrAttr, TypeAttr
from ..core import Block, Operation, Region, Value
from ..opdef import define
from ..types import FunctionType, Type


def _verify_module(op: Operation) -> str | None:
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return "expects one region with one block"
    for inner in op.regions[0].block.ops:
        if inner.name != "func.func":
            return f"may only contain functions, found '{inner.name}'"
    names = [f.attributes["sym_name"] for f in op.regions[0].block.ops]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        return f"defines function @{sorted(dup)[0]} twice"  # type: ignore[type-var]
    return None


def _verify_func(op: Operation) -> str | None:
    ftype = op.attributes.get("function_type")
    if not isinstance(ftype, FunctionType):
        return "needs a function_type"
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return "expects one region with one block"
    block = op.regions[0].block
    if [a.type for a in block.args] != list(ftype.inputs):
        return "entry block arguments do not match the function signature"
    term = block.terminator
    if term is None or term.name != "func.return":
        return "body must end with 'func.return'"
    got = [v.type for v in term.operands]
    if got != list(ftype.results):
        shown = ", ".join(map(str, got))
        return f"returns ({shown}) but the signature says {ftype}"
    return None


def _verify_return(op: Operation) -> str | None:
    if op.parent is None or op.parent.ops[-1] is not op:
        return "must be the last op of its block"
    return None


module_def = define(
    "builtin.module",
    num_results=0,
    traits=("open_attributes", "isolated_from_above"),
    verify=_verify_module,
    doc="A list of functions; takes any extra attributes.",
)
func_def = define(
    "func.func",
    attrs={"sym_name": StrAttr(), "function_type": TypeAttr()},
    num_results=0,
    traits=("open_attributes", "isolated_from_above"),
    verify=_verify_func,
    doc="A function: a name, a signature and a body block; takes any extra attributes.",
)
return_def = define(
    "func.return",
    operands=("*values",),
    num_results=0,
    traits=("terminator",),
    verify=_verify_return,
    infer=lambda values: [],
    doc="Returns values from a function.",
)


def make_module(funcs: Sequence[Operation] = (), loc: Location | None = None) -> Operation:
    """A new module holding ``funcs``."""
    block = Block()
    for f in funcs:
        block.append(f)
    return Operation("builtin.module", regions=[Region([block])], loc=loc)


def make_func(
    name: str,
    inputs: Sequence[Type],
    results: Sequence[Type] = (),
    arg_names: Sequence[str | None] | None = None,
    loc: Location | None = None,
) -> Operation:
    """A new function with an empty body block whose arguments have types ``inputs``."""
    ftype = FunctionType(tuple(inputs), tuple(results))
    block = Block(inputs, arg_names)
    return Operation(
        "func.func",
        attributes={"sym_name": name, "function_type": ftype},
        regions=[Region([block])],
        loc=loc,
    )


def make_return(values: Sequence[Value], loc: Location | None = None) -> Operation:
    """A ``func.return`` of ``values``."""
    return Operation("func.return", list(values), loc=loc)


def set_results(func: Operation, values: Sequence[Value]) -> Operation:
    """End ``func`` with a return of ``values`` and update its signature to match."""
    block = func_body(func)
    if block.terminator is not None and block.terminator.name == "func.return":
        block.terminator.erase()
    ret = make_return(values)
    block.append(ret)
    ftype = func_type(func)
    func.attributes["function_type"] = FunctionType(ftype.inputs, tuple(v.type for v in values))
    return ret


def functions(module: Operation) -> list[Operation]:
    """The functions of ``module``, in order."""
    return [op for op in module.regions[0].block.ops if op.name == "func.func"]


def lookup_func(module: Operation, name: str) -> Operation | None:
    """The function named ``name`` in ``module``, or None."""
    for f in functions(module):
        if f.attributes["sym_name"] == name:
            return f
    return None


def func_name(func: Operation) -> str:
    return str(func.attributes["sym_name"])


def func_type(func: Operation) -> FunctionType:
    ftype = func.attributes["function_type"]
    assert isinstance(ftype, FunctionType)
    return ftype


def func_body(func: Operation) -> Block:
    """The body block of ``func``."""
    return func.regions[0].block


def func_return(func: Operation) -> Operation:
    """The ``func.return`` that ends ``func``."""
    term = func_body(func).terminator
    assert term is not None and term.name == "func.return"
    return term


def pick_function(module: Operation, name: str | None = None, how_to_name: str = "name one") -> Operation:
    """The function ``name``; without a name ``@main``, else the only function.

    Raises SymbolError listing the functions when ``name`` is missing or the choice is ambiguous;
    ``how_to_name`` tells the user how to name one (a CLI says ``pick one with --func``).
    """
    funcs = functions(module)
    names = ", ".join("@" + func_name(f) for f in funcs) or "none"
    if name is not None:
        found = lookup_func(module, name)
        if found is None:
            raise SymbolError(f"no function @{name}; the module has {names}")
        return found
    found = lookup_func(module, "main")
    if found is not None:
        return found
    if len(funcs) == 1:
        return funcs[0]
    if not funcs:
        raise SymbolError("the module has no functions")
    raise SymbolError(f"the module has no @main and several functions ({names}): {how_to_name}")
