"""Pattern cases: the exact pattern of a pattern-matching pass, alone in a program, which the pass must take.

The differential oracles see a pass that over-matches (it rewrites a near miss into something that computes
other values), but not one that under-matches: a pass that stops taking its pattern leaves a program that
still computes the right thing, only slower. A *pattern case* is a small program ``@main(x)`` holding one
exact pattern (:data:`EXACT_FORMS`: the exact pattern of every near-miss family of :mod:`.near_miss`, and
the other sides of canonicalize's identities, ``0 + x``, ``1 * x``, integer ``x * 0``, ...) with
``FuzzCase.expect`` naming the pass that must rewrite it (a ``// expect: PASS`` line in case files). After
the pipeline, :func:`missed_rewrite` says what is left of the pattern when the pass did not take it, and the
oracle fails the case (``missed-rewrite``). The case also runs through every other oracle, so a pass that
takes the pattern wrongly fails it as a mismatch.

The input ``x`` gets a random shape and element type that the pattern accepts (floats of every width for
the float patterns; integers of odd and even widths, signed and unsigned, for the splat identities), and the
fuzzer makes a pattern case in ``FuzzConfig.pattern_fraction`` of its freshly generated cases
(:func:`pattern_case`). Its pipeline is the pass alone, or the pass after one that leaves the pattern in place
(:data:`HARMLESS_BEFORE`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ir import InsertionPoint, func_body, make_func, make_module
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_return, lookup_func, set_results
from ..ir.types import FloatType, IntegerType, ScalarType, TensorType, bf16, f16, f32, f64
from ..passes.pipeline import parse_pipeline
from .builder import build_op
from .near_miss import NEAR_MISSES, Built, Materials, _splat


@dataclass(frozen=True)
class ExactForm:
    """An exact pattern: the pass that must take it, the inputs it grows from, and its builder."""

    pass_name: str
    wants: Callable[[TensorType], bool]
    build: Callable[[Materials, Value], Built]
    integers: bool = False
    """Whether it is built on integer inputs (else on floats)."""


def _identity(name: str, lhs: int | None, rhs: int | None) -> Callable[[Materials, Value], Built]:
    """``x op c`` (``rhs``) or ``c op x`` (``lhs``) with a splat ``c`` (rank 0 or x's shape), on ``x`` itself."""

    def build(m: Materials, x: Value) -> Built:
        a = x if lhs is None else _splat(m, lhs, x)
        b = x if rhs is None else _splat(m, rhs, x)
        return build_op(f"graph.{name}", a, b), []

    return build


def _static(t: TensorType) -> bool:
    return t.is_static and 0 not in t.static_shape


def _floats(t: TensorType) -> bool:
    return _static(t) and isinstance(t.element, FloatType)


def _integers(t: TensorType) -> bool:
    return _static(t) and isinstance(t.element, IntegerType) and not t.element.is_bool


EXACT_FORMS: dict[str, ExactForm] = {
    **{
        f"{name}": ExactForm(p.pass_name, p.wants, p.exact)
        for name, p in NEAR_MISSES.items()
        if name != "splat-identity"
    },
    "x-plus-zero": ExactForm("canonicalize", _static, _identity("add", None, 0)),
    "zero-plus-x": ExactForm("canonicalize", _static, _identity("add", 0, None)),
    "x-minus-zero": ExactForm("canonicalize", _static, _identity("sub", None, 0)),
    "one-times-x": ExactForm("canonicalize", _static, _identity("mul", 1, None)),
    "x-divided-by-one": ExactForm("canonicalize", _floats, _identity("div", None, 1)),
    "int-x-plus-zero": ExactForm("canonicalize", _integers, _identity("add", None, 0), integers=True),
    "int-zero-plus-x": ExactForm("canonicalize", _integers, _identity("add", 0, None), integers=True),
    "int-x-times-one": ExactForm("canonicalize", _integers, _identity("mul", None, 1), integers=True),
    "int-x-times-zero": ExactForm("canonicalize", _integers, _identity("mul", None, 0), integers=True),
    "int-zero-times-x": ExactForm("canonicalize", _integers, _identity("mul", 0, None), integers=True),
}
"""Every exact pattern by name."""

HARMLESS_BEFORE = ("dce", "cse")
"""Passes that may run before the pattern's pass without taking the pattern apart."""

FLOATS: tuple[ScalarType, ...] = (f32, f32, f64, f16, bf16)
INTEGERS: tuple[ScalarType, ...] = (
    IntegerType(32),
    IntegerType(64),
    IntegerType(8),
    IntegerType(8, False),
    IntegerType(16, False),
    IntegerType(5),
    IntegerType(3, False),
    IntegerType(13),
)


def _input_type(form: ExactForm, rng: np.random.Generator) -> TensorType | None:
    """A random static type ``form`` grows from (None when 20 draws found none)."""
    elements = INTEGERS if form.integers else FLOATS
    for _ in range(20):
        rank = int(rng.integers(0 if form.pass_name == "canonicalize" else 2, 5))
        shape = tuple(int(rng.integers(1, 6)) for _ in range(rank))
        t = TensorType(shape, elements[int(rng.integers(len(elements)))])
        if form.wants(t):
            return t
    return None


def pattern_program(name: str, rng: np.random.Generator, more: int = 0) -> Operation | None:
    """``@main(x)`` returning the exact pattern ``name`` built around a random ``x``, and for canonicalize up to
    ``more`` other exact forms of it on the same ``x`` (None when the forms built nothing for the type drawn)."""
    form = EXACT_FORMS[name]
    t = _input_type(form, rng)
    if t is None:
        return None
    names = [name]
    if form.pass_name == "canonicalize" and more:
        others = [n for n, f in sorted(EXACT_FORMS.items()) if n != name and f.pass_name == form.pass_name]
        others = [n for n in others if EXACT_FORMS[n].integers == form.integers and EXACT_FORMS[n].wants(t)]
        names += [others[int(i)] for i in rng.permutation(len(others))[:more]]
    func = make_func("main", [t], arg_names=["x"])
    (x,) = func_body(func).args
    outputs: list[Value] = []
    with InsertionPoint(func_body(func)):
        for each in names:
            stand_in, extras = EXACT_FORMS[each].build(Materials(rng), x)
            outputs += ([stand_in] if stand_in is not None else []) + extras
    if not outputs:
        return None
    set_results(func, outputs)
    return make_module([func])


def pattern_case(rng: np.random.Generator) -> tuple[Operation, str, str] | None:
    """A random pattern case: its program (canonicalize's with one to three of its exact forms), its pipeline
    and the pass that must rewrite it (``expect``)."""
    names = sorted(EXACT_FORMS)
    name = names[int(rng.integers(len(names)))]
    module = pattern_program(name, rng, more=int(rng.integers(0, 3)))
    if module is None:
        return None
    pass_name = EXACT_FORMS[name].pass_name
    before = [HARMLESS_BEFORE[int(rng.integers(len(HARMLESS_BEFORE)))]] if rng.random() < 0.3 else []
    return module, ",".join([*before, pass_name]), pass_name


def _returned(module: Operation) -> list[Value]:
    func = lookup_func(module, "main")
    assert func is not None
    return list(func_return(func).operands)


def _canonical(module: Operation) -> str | None:
    """canonicalize's pattern is gone when @main returns its argument, a constant, or a cast of either."""
    for v in _returned(module):
        producer = v.defining_op()
        if producer is not None and producer.name not in ("graph.constant", "graph.splat"):
            return f"@main still returns the result of {producer.name}"
    return None


def _absent(name: str) -> Callable[[Operation], str | None]:
    def check(module: Operation) -> str | None:
        left = sum(1 for o in module.walk() if o.name == name)
        return f"{left} {name} left" if left else None

    return check


def _present(name: str, what: str) -> Callable[[Operation], str | None]:
    def check(module: Operation) -> str | None:
        return None if any(o.name == name for o in module.walk()) else f"no {name}: {what} not fused"

    return check


def _one_matmul(module: Operation) -> str | None:
    left = sum(1 for o in module.walk() if o.name == "graph.matmul")
    return f"{left} graph.matmul left: the siblings were not fused into one" if left > 1 else None


REWRITTEN: dict[str, Callable[[Operation], str | None]] = {
    "fuse-attention": _present("graph.attention", "the attention"),
    "fuse-siblings": _one_matmul,
    "fold-batch-norm": _absent("graph.batch_norm"),
    "canonicalize": _canonical,
}
"""Per pass: what is left of its pattern after it ran (None when the pass took it)."""


def missed_rewrite(pass_name: str, pipeline: str, optimized: Operation) -> str | None:
    """What is left of the pattern ``pass_name`` must rewrite, in ``optimized`` (the program after ``pipeline``),
    or None: when it took the pattern, when the pipeline does not run it (a reduced case may have dropped it),
    or when the program is lowered to loops."""
    if pass_name not in REWRITTEN or pass_name not in [p.name for p in parse_pipeline(pipeline)]:
        return None
    if "plan_steps" in optimized.attributes:
        return None
    problem = REWRITTEN[pass_name](optimized)
    return f"{pass_name} did not rewrite its pattern: {problem}" if problem is not None else None


__all__ = [
    "EXACT_FORMS",
    "REWRITTEN",
    "ExactForm",
    "missed_rewrite",
    "pattern_case",
    "pattern_program",
]
