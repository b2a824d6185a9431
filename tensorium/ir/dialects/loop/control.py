"""Structured control flow of the loop dialect: ``loop.for``, ``loop.if`` and their ``loop.yield``.

A ``loop.for`` runs its body for ``i = lower, lower + step, ...`` while ``i < upper`` (step > 0).
Its ``kind`` says how a backend may run the iterations; the meaning of the program never depends
on it when the loop is correct for its kind:

- ``serial``: in order. ``unroll``: in order, unrolled ``factor`` times (fully when absent).
- ``parallel``: the iterations are independent and may run at the same time, in any order.
- ``vectorize``: independent iterations run ``factor`` at a time in SIMD lanes (backend's width when
  absent).
- ``gpu_block`` / ``gpu_thread``: each iteration is one workgroup / one thread along grid or block
  ``axis`` 0, 1 or 2 (x, y, z). Threads of one block may share ``shared`` buffers and meet at
  ``loop.barrier``. Targets without GPUs run them as parallel loops.

Loops carry no values: accumulators live in ``local`` buffers, which backends keep in registers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ....errors import Location
from ...attributes import OptionalIntAttr, StrAttr
from ...builder import InsertionPoint, current_insertion_point
from ...core import Block, BlockArgument, Operation, Region, Value
from ...opdef import InferError, define
from ...types import Type, i1, index
from .common import enclosing_loops, expect_index
from .scalar import const

KINDS = ("serial", "parallel", "vectorize", "unroll", "gpu_block", "gpu_thread")
GPU_KINDS = ("gpu_block", "gpu_thread")


def _for_infer(lower: Type, upper: Type, step: Type, *, kind: str, factor: int | None, axis: int | None) -> list[Type]:
    expect_index(lower, "lower bound")
    expect_index(upper, "upper bound")
    expect_index(step, "step")
    if factor is not None:
        if kind not in ("unroll", "vectorize"):
            raise InferError(f'factor applies only to unroll and vectorize loops, not "{kind}"')
        if factor < 1:
            raise InferError(f"factor must be at least 1, got {factor}")
    if kind in GPU_KINDS:
        if axis is None:
            raise InferError(f"a {kind} loop needs an axis (0, 1 or 2)")
        if axis not in (0, 1, 2):
            raise InferError(f"axis must be 0, 1 or 2, got {axis}")
    elif axis is not None:
        raise InferError(f'axis applies only to gpu_block and gpu_thread loops, not "{kind}"')
    return []


def _body_problem(op: Operation, arg_types: list[Type]) -> str | None:
    """What is wrong with the single-block body of ``op`` (block arguments, terminator), or None."""
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return "expects one region with one block"
    block = op.regions[0].block
    got = [a.type for a in block.args]
    if got != arg_types:
        want = "one index argument (the induction variable)" if arg_types else "no arguments"
        return f"body block must take {want}, got ({', '.join(map(str, got))})"
    term = block.terminator
    if term is None or term.name != "loop.yield":
        return "body must end with 'loop.yield'"
    return None


def _verify_for(op: Operation) -> str | None:
    problem = _body_problem(op, [index])
    if problem:
        return problem
    kind = op.attributes.get("kind", "serial")
    if kind not in GPU_KINDS:
        return None
    for outer in enclosing_loops(op):
        outer_kind = outer.attributes.get("kind", "serial")
        if kind == "gpu_block" and outer_kind == "gpu_thread":
            return "a gpu_block loop may not be nested in a gpu_thread loop"
        if outer_kind == kind and outer.attributes.get("axis") == op.attributes.get("axis"):
            return f"{kind} axis {op.attributes.get('axis')} is already bound by an enclosing loop"
    return None


for_def = define(
    "loop.for",
    operands=("lower", "upper", "step"),
    attrs={"kind": StrAttr("serial", choices=KINDS), "factor": OptionalIntAttr(), "axis": OptionalIntAttr()},
    infer=_for_infer,
    verify=_verify_for,
    num_results=0,
    doc="Run the body (one block whose index argument is the induction variable) for lower <= i < upper by "
    "step; `kind` (with `factor` for unroll/vectorize, `axis` for gpu loops) says how iterations may run.",
)


def _if_infer(cond: Type) -> list[Type]:
    if cond != i1:
        raise InferError(f"condition must be i1, got {cond}")
    return []


if_def = define(
    "loop.if",
    operands=("cond",),
    infer=_if_infer,
    verify=lambda op: _body_problem(op, []),
    num_results=0,
    doc="Run the body (one block without arguments) when the i1 condition is true.",
)


def _check_reference(cond: object, *, message: str) -> tuple[()]:
    if not bool(cond):
        raise ValueError(message)
    return ()


check_def = define(
    "loop.check",
    operands=("cond",),
    attrs={"message": StrAttr()},
    infer=lambda cond, *, message: _if_infer(cond),
    reference=_check_reference,
    num_results=0,
    doc="Fail the kernel with `message` when the i1 condition is false (a data-dependent index out of range, "
    "say): the interpreters raise, the CPU backend returns the check's status, CUDA traps, WebGPU stores the "
    "check's number in a status buffer that its runtimes read after the run (left out of a kernel without a "
    "storage binding to spare).",
)


def _verify_yield(op: Operation) -> str | None:
    parent = op.parent_op
    if parent is None or parent.name not in ("loop.for", "loop.if"):
        return "must end the body of a loop.for or loop.if"
    return None


yield_def = define(
    "loop.yield",
    infer=lambda: [],
    traits=("terminator",),
    verify=_verify_yield,
    num_results=0,
    doc="Ends the body of a loop.for or loop.if.",
)


def _with_body(op: Operation, args: list[Type], names: list[str | None]) -> Block:
    block = Block(args, names)
    block.append(yield_def.build([], loc=op.loc))
    op.add_region(Region([block]))
    return block


def as_index(value: Value | int, loc: Location | None = None) -> Value:
    """``value``, or an index ``loop.const`` of it built at the current insertion point."""
    if isinstance(value, Value):
        return value
    return const(value=int(value), dtype=index, loc=loc)  # type: ignore[no-any-return]


def build_for(
    lower: Value,
    upper: Value,
    step: Value,
    *,
    kind: str = "serial",
    factor: int | None = None,
    axis: int | None = None,
    name: str | None = None,
    loc: Location | None = None,
) -> Operation:
    """A detached ``loop.for`` whose body holds only its ``loop.yield``; ``name`` hints the induction variable."""
    op = for_def.build([lower, upper, step], {"kind": kind, "factor": factor, "axis": axis}, loc=loc)
    _with_body(op, [index], [name])
    return op


@contextmanager
def for_(
    lower: Value | int,
    upper: Value | int,
    step: Value | int = 1,
    *,
    kind: str = "serial",
    factor: int | None = None,
    axis: int | None = None,
    name: str | None = None,
    loc: Location | None = None,
) -> Iterator[BlockArgument]:
    """Build a ``loop.for`` at the current insertion point and build into its body; yields the induction variable.

    ``with for_(0, n, kind="parallel", name="i") as i: ...``; int bounds become index constants.
    """
    bounds = [as_index(v, loc) for v in (lower, upper, step)]
    op = build_for(*bounds, kind=kind, factor=factor, axis=axis, name=name, loc=loc)
    _insert(op)
    block = op.regions[0].block
    with InsertionPoint(block, before=block.terminator):
        yield block.args[0]


@contextmanager
def if_(cond: Value, *, loc: Location | None = None) -> Iterator[Operation]:
    """Build a ``loop.if`` at the current insertion point and build into its body; yields the op."""
    op = if_def.build([cond], loc=loc)
    block = _with_body(op, [], [])
    _insert(op)
    with InsertionPoint(block, before=block.terminator):
        yield op


def _insert(op: Operation) -> None:
    ip = current_insertion_point()
    if ip is not None:
        ip.insert(op)
