"""The loop-IR interpreter: runs kernels (functions over buffers) on numpy arrays, for testing lowerings.

Buffer arguments are numpy arrays that the kernel reads and writes in place; scalar arguments are
numbers. Ops run through their declared ``reference`` semantics. Loops run their iterations in order
whatever their kind, except that the iterations of a ``gpu_thread`` loop run as threads in lockstep
between barriers: each thread runs until its next ``loop.barrier``, and the next stretch starts
only when every thread of the loop has arrived, so shared-memory kernels compute what a GPU computes.
A ``loop.shuffle`` is such a meeting point too: when every thread of the loop has reached it, each gets
the value of its source lane (see :mod:`tensorium.ir.dialects.loop.warp`) and runs on.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InterpreterError
from ..ir.core import Block, Operation, Value
from ..ir.dialects.builtin import func_body, func_name, pick_function
from ..ir.dialects.loop.warp import MMA_SHAPE, WARP, accumulator_position, source_lane
from ..ir.evaluate import op_location
from ..ir.storage import check_array, coerce
from ..ir.types import BufferType, ScalarType, i64

__all__ = ["i64_held_in_i32", "run", "run_kernel"]

Env = dict[int, Any]
Steps = Generator[Any, Any, None]
"""A running block: it yields None at each barrier it reaches (a ``_Shuffle`` at each shuffle, and is sent its
result) and returns when done."""


_HELD_IN_I32: ContextVar[bool] = ContextVar("i64_held_in_i32", default=False)


@contextmanager
def i64_held_in_i32() -> Iterator[None]:
    """Within it, kernels run as on WebGPU, which holds i64 in i32 (:mod:`tensorium.lowering.webgpu_int64`):
    every i64 value an op makes keeps only its low 32 bits, sign-extended. Where the range proof is right,
    results are unchanged; the fuzzer runs WebGPU's loop IR so, to check the proof."""
    token = _HELD_IN_I32.set(True)
    try:
        yield
    finally:
        _HELD_IN_I32.reset(token)


def run_kernel(func: Operation, args: Sequence[Any]) -> list[np.ndarray]:
    """Run the function ``func`` on ``args`` (one per argument); buffers are updated in place.

    Returns the values of its ``func.return`` (kernels usually return nothing).
    """
    block = func_body(func)
    name = func_name(func)
    if len(args) != len(block.args):
        raise InterpreterError(f"@{name} takes {len(block.args)} arguments, got {len(args)}")
    env: Env = {}
    bindings: dict[str, int] = {}
    for i, (arg, value) in enumerate(zip(block.args, args)):
        label = f"@{name} argument #{i}" + (f" '{arg.name_hint}'" if arg.name_hint else "")
        env[id(arg)] = _bind(arg, value, label, bindings)
    for _ in _run_block(block, env):
        pass
    term = block.terminator
    if term is None or term.name != "func.return":
        raise InterpreterError(f"@{name} has no func.return")
    return [np.asarray(env[id(v)]) for v in term.operands]


def run(module: Operation, args: Sequence[Any], func: str | None = None) -> list[np.ndarray]:
    """Run the function ``func`` of ``module`` (``@main`` or the only one when not named) on ``args``."""
    target = pick_function(module, func)
    return run_kernel(target, args)


def _bind(arg: Value, value: Any, what: str, bindings: dict[str, int]) -> Any:
    t = arg.type
    if isinstance(t, BufferType):
        check_array(value, t, what, bindings)
        return value
    if not isinstance(t, ScalarType):
        raise InterpreterError(f"{what}: the loop interpreter takes buffers and scalars, not {t}")
    scalar = np.asarray(value)
    if scalar.ndim != 0:
        raise InterpreterError(f"{what}: expected a scalar {t}, got an array of shape {list(scalar.shape)}")
    return coerce(scalar, t)


def _run_block(block: Block, env: Env) -> Steps:
    for op in block.ops:
        handler = _CONTROL.get(op.name)
        if handler is not None:
            yield from handler(op, env)
        elif op.name not in ("loop.yield", "func.return"):
            _evaluate(op, env)


def _evaluate(op: Operation, env: Env) -> None:
    opdef = op.opdef
    if opdef is None or opdef.reference is None:
        raise InterpreterError(f"{op_location(op)}'{op.name}' has no reference semantics")
    args = opdef.group_operands([env[id(v)] for v in op.operands])
    try:
        with np.errstate(all="ignore"):
            out = opdef.reference(*args, **opdef.attr_kwargs(op))
    except (ValueError, IndexError, TypeError, ArithmeticError) as e:
        raise InterpreterError(f"{op_location(op)}'{op.name}' failed: {e}") from e
    if op.results:
        t = op.results[0].type
        value = coerce(out, t) if isinstance(t, ScalarType) else out
        if _HELD_IN_I32.get() and t == i64:
            value = np.int64(np.int64(value).astype(np.int32))
        env[id(op.results[0])] = value


def _for(op: Operation, env: Env) -> Steps:
    lower, upper, step = (int(env[id(v)]) for v in op.operands)
    if step <= 0:
        raise InterpreterError(f"{op_location(op)}'loop.for' step must be positive, got {step}")
    body = op.regions[0].block
    iv = id(body.args[0])
    if op.attributes.get("kind") == "gpu_thread":
        yield from _threads(op, body, iv, env, range(lower, upper, step))
        return
    for i in range(lower, upper, step):
        env[iv] = np.int64(i)
        yield from _run_block(body, env)


def _threads(op: Operation, body: Block, iv: int, env: Env, ids: range) -> Steps:
    """Run one thread per iteration, each with its own values, in lockstep between barriers; a stop at a
    ``loop.shuffle`` is answered here, each thread getting the value of its source lane."""
    threads = []
    for i in ids:
        own = dict(env)
        own[iv] = np.int64(i)
        threads.append(_run_block(body, own))
    replies: list[Any] = [None] * len(threads)
    while threads:
        stops = [_step(t, r) for t, r in zip(threads, replies)]
        waiting = [t for t, stop in zip(threads, stops) if stop is not _DONE]
        if not waiting:
            return
        if len(waiting) != len(threads):
            what = next((f"a {s.op.name}" for s in stops if isinstance(s, (_Shuffle, _Mma))), "a loop.barrier")
            raise InterpreterError(
                f"{op_location(op)}only {len(waiting)} of {len(threads)} threads of this gpu_thread loop "
                f"reached {what}; the others finished"
            )
        shuffles = [s for s in stops if isinstance(s, _Shuffle)]
        if shuffles:
            replies = _exchange(op, shuffles, len(stops))
            continue
        products = [s for s in stops if isinstance(s, _Mma)]
        if products:
            replies = _multiply(op, products, len(stops))
            continue
        replies = [None] * len(threads)
        yield


def _warp_op(stops: list[_Shuffle] | list[_Mma], count: int) -> Operation:
    """The warp-level op all ``count`` threads stopped at, checked: every thread at the same op, whole warps."""
    first = stops[0].op
    name = f"{op_location(first)}'{first.name}'"
    if len(stops) != count or any(s.op is not first for s in stops):
        raise InterpreterError(f"{name} needs every thread of its gpu_thread loop at it")
    if count % WARP:
        raise InterpreterError(f"{name} needs whole warps of {WARP}, not {count} threads")
    return first


def _exchange(op: Operation, stops: list[_Shuffle], count: int) -> list[Any]:
    """Each thread's result of the ``loop.shuffle`` all ``count`` threads of ``op`` stopped at."""
    first = _warp_op(stops, count)
    mode, width = str(first.attr("mode")), int(first.attr("width"))
    results = []
    for lane, stop in enumerate(stops):
        if not 0 <= stop.offset < width:
            raise InterpreterError(f"{op_location(first)}'loop.shuffle' offset {stop.offset} is outside [0, {width})")
        results.append(stops[source_lane(mode, lane % WARP, stop.offset, width) + lane - lane % WARP].value)
    return results


def _multiply(op: Operation, stops: list[_Mma], count: int) -> list[Any]:
    """Each warp's ``loop.mma``, run when all ``count`` threads of ``op`` stopped at it (True for each)."""
    first = _warp_op(stops, count)
    rows, cols, depth = MMA_SHAPE
    for start in range(0, count, WARP):
        warp = stops[start : start + WARP]
        ar, ac, br, bc = warp[0].at
        if any(s.at != warp[0].at for s in warp):
            raise InterpreterError(f"{op_location(first)}'loop.mma' tile positions differ between the lanes of a warp")
        a, b = warp[0].a[ar : ar + rows, ac : ac + depth], warp[0].b[br : br + depth, bc : bc + cols]
        if a.shape != (rows, depth) or b.shape != (depth, cols):
            raise InterpreterError(f"{op_location(first)}'loop.mma' tiles reach past their buffers")
        product = a.astype(np.float32) @ b.astype(np.float32)
        for lane, stop in enumerate(warp):
            for i in range(4):
                stop.acc[i] += product[accumulator_position(lane, i)]
    return [True] * count


def _step(thread: Steps, reply: Any) -> Any:
    """Run ``thread`` to its next stop, sending it ``reply`` (a shuffle's result): what it stopped at (None at a
    barrier, a :class:`_Shuffle`), or ``_DONE`` when it finished."""
    try:
        return thread.send(reply)
    except StopIteration:
        return _DONE


def _if(op: Operation, env: Env) -> Steps:
    if bool(env[id(op.operands[0])]):
        yield from _run_block(op.regions[0].block, env)


def _barrier(op: Operation, env: Env) -> Steps:
    yield


def _check(op: Operation, env: Env) -> Steps:
    if not bool(env[id(op.operands[0])]):
        raise InterpreterError(f"{op_location(op)}{op.attr('message')}")
    yield from ()


@dataclass(frozen=True)
class _Shuffle:
    """A thread stopped at a ``loop.shuffle`` with its value and offset."""

    op: Operation
    value: Any
    offset: int


_DONE = object()
"""What :func:`_step` returns for a thread that finished."""


@dataclass(frozen=True)
class _Mma:
    """A thread stopped at a ``loop.mma`` with its accumulator, tiles and tile positions."""

    op: Operation
    acc: np.ndarray
    a: np.ndarray
    b: np.ndarray
    at: tuple[int, int, int, int]


def _mma(op: Operation, env: Env) -> Steps:
    acc, a, ar, ac, b, br, bc = (env[id(v)] for v in op.operands)
    done = yield _Mma(op, acc, a, b, (int(ar), int(ac), int(br), int(bc)))  # type: ignore[misc]
    if done is not True:
        raise InterpreterError(f"{op_location(op)}'loop.mma' ran outside a gpu_thread loop")


def _shuffle(op: Operation, env: Env) -> Steps:
    value, offset = (env[id(v)] for v in op.operands)
    result = yield _Shuffle(op, value, int(offset))  # type: ignore[misc]
    if result is None:
        raise InterpreterError(f"{op_location(op)}'loop.shuffle' ran outside a gpu_thread loop")
    env[id(op.results[0])] = result


_CONTROL: dict[str, Callable[[Operation, Env], Steps]] = {
    "loop.for": _for,
    "loop.if": _if,
    "loop.barrier": _barrier,
    "loop.check": _check,
    "loop.shuffle": _shuffle,
    "loop.mma": _mma,
}
