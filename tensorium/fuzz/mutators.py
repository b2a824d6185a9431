"""Mutators: small random changes to a valid program or pass pipeline that keep it valid.

IR mutators work on a clone of a module's ``@main``; each returns False when it found nothing to change
(or when the change would break a rule), and :func:`mutate_module` verifies what comes out, so every
mutant the fuzzer runs is a valid program. There are two families:

- general ones, which know nothing of the passes: insert an op (any generator recipe, at any point),
  delete an op (its uses rewired to another value of its type or a new constant), replace an op by one of
  the same signature, duplicate an op, rewire an operand, change an attribute, change the shape of an
  input, change the float precision of the whole program;
- compiler-specific ones, which build the shapes that passes look for: transpose chains and reshape
  pairs that cancel, slices that reverse an axis once or twice, identities (``x + 0``, ``x * 1``, ``--x``,
  ``-(0 - x)``, a cast round trip), integer cast chains through other widths and signedness, constant
  subexpressions and whole recipes run on constants (work for fold), constants with tiny, huge, zero or
  equal values, commuted twins (``b - a`` beside ``a - b``: CSE candidates that must not merge), a split
  whose first part is dead, matmul epilogues (bias, activation), sibling matmuls on one input, attention
  written out (matmul, scale or division, mask, softmax, matmul), a convolution followed by a batch norm.

Pipeline mutators choose, insert, delete, swap, repeat and reconfigure passes. ``lower-to-loops``
only ever ends a pipeline (nothing runs on loop-level IR after it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..errors import TensoriumError
from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Value
from ..ir.dialects.builtin import func_body, func_return, lookup_func, set_results
from ..ir.dialects.graph.shape import INT64_MAX
from ..ir.opdef import InferError, lookup
from ..ir.types import FloatType, FunctionType, IntegerType, Sym, TensorType, f32, i1, storage_dtype
from ..ir.verifier import verify
from ..passes.base import Pass, get_pass, option_types, pass_names
from ..passes.pipeline import Pipeline
from .builder import build_op as _build
from .generator import GenConfig, apply_random_recipe, random_array
from .near_miss import NEAR_MISSES, Materials

Rng = np.random.Generator
T = TypeVar("T")
IrMutator = Callable[["_Site"], bool]

# Ops whose operands may be exchanged with any other value of the same type without leaving the safe
# numeric range, grouped by signature: a member may replace another of its group.
SWAP_GROUPS: tuple[frozenset[str], ...] = (
    frozenset(
        f"graph.{n}"
        for n in ("neg", "abs", "tanh", "sigmoid", "sin", "cos", "relu", "gelu", "silu", "erf", "floor", "ceil", "atan")
    ),
    frozenset(f"graph.{n}" for n in ("add", "sub", "mul", "max", "min")),
    frozenset(f"graph.{n}" for n in ("lt", "le", "gt", "ge", "eq", "ne")),
    frozenset(f"graph.{n}" for n in ("and", "or", "xor")),
    frozenset(f"graph.{n}" for n in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")),
    frozenset(f"graph.{n}" for n in ("softmax", "log_softmax")),
)
# Operands that must stay in a domain (positive, in [-1, 1], nonzero, in-range indices): never rewired.
GUARDED_OPERANDS: dict[str, tuple[int, ...]] = {
    "graph.log": (0,),
    "graph.sqrt": (0,),
    "graph.rsqrt": (0,),
    "graph.reciprocal": (0,),
    "graph.asin": (0,),
    "graph.acos": (0,),
    "graph.exp": (0,),
    "graph.div": (1,),
    "graph.mod": (1,),
    "graph.pow": (0, 1),
    "graph.gather": (1,),
    "graph.gather_elements": (1,),
    "graph.gather_nd": (1,),
    "graph.embedding": (1,),
    "graph.scatter_elements": (1,),
    "graph.scatter_nd": (1,),
}
PRECISIONS = (FloatType("f64"), FloatType("f16"), FloatType("bf16"))


class _Site:
    """The function being mutated, the random source, and helpers to find and make values."""

    def __init__(self, module: Operation, rng: Rng, config: GenConfig):
        func = lookup_func(module, "main")
        if func is None:
            raise ValueError("the module has no @main")
        self.func = func
        self.body: Block = func_body(func)
        self.rng = rng
        self.config = config

    def ops(self, pred: Callable[[Operation], bool] = lambda op: True) -> list[Operation]:
        """The ops of the body (the return excluded) for which ``pred`` holds."""
        return [op for op in self.body.ops if op.name != "func.return" and pred(op)]

    def choice(self, items: Sequence[T]) -> T:
        return items[int(self.rng.integers(len(items)))]

    def visible_before(self, anchor: Operation) -> list[Value]:
        """The values an op inserted before ``anchor`` may use: arguments and earlier results."""
        values: list[Value] = list(self.body.args)
        for op in self.body.ops:
            if op is anchor:
                break
            values.extend(op.results)
        return values

    def constant(self, t: TensorType, splat: float | None = None) -> Value:
        """A new constant of type ``t`` (random data in the generator's ranges, or a splat)."""
        if splat is not None:
            array = np.full(t.static_shape, splat, dtype=storage_dtype(t.element))
        else:
            array = random_array(t, self.rng)
        return _build("graph.constant", value=DenseAttr(array, t))

    def redirect_some_uses(self, old: Value, new: Value, keep: Operation | None = None) -> bool:
        """Make a random non-empty subset of ``old``'s uses after ``new``'s definition use ``new``."""
        new_op = new.defining_op()
        after = self.body.index_of(new_op) if new_op is not None else -1
        uses = [
            u
            for u in old.uses
            if u.owner is not keep and u.owner.parent is self.body and self.body.index_of(u.owner) > after
        ]
        if not uses:
            return False
        take = [u for u in uses if self.rng.random() < 0.7] or [uses[0]]
        for u in take:
            u.owner.set_operand(u.index, new)
        return True

    def retype(self) -> bool:
        """Infer every result type again from the operands (after an input or a constant changed type)."""
        for op in self.ops():
            if op.name == "graph.constant":
                continue
            opdef = op.opdef
            if opdef is None or op.regions:
                return False
            try:
                types = opdef.infer_types([v.type for v in op.operands], op.attributes)
            except (InferError, TensoriumError, ValueError, TypeError, IndexError):
                return False
            for result, t in zip(op.results, types):
                result.type = t
        set_results(self.func, list(func_return(self.func).operands))
        return True


def _float_tensor(v: Value, min_rank: int = 0) -> bool:
    t = v.type
    return isinstance(t, TensorType) and isinstance(t.element, FloatType) and t.is_static and t.rank >= min_rank


def _pick_value(site: _Site, pred: Callable[[Value], bool]) -> tuple[Value, Operation] | None:
    """A value satisfying ``pred`` that some later op uses, with the first such user."""
    found = []
    for op in site.ops():
        for v in op.operands:
            if pred(v):
                found.append((v, op))
    if not found:
        return None
    return site.choice(found)


def _pick_float_tensor(
    site: _Site, min_rank: int, wanted: Callable[[TensorType], bool] = lambda t: True
) -> tuple[Value, TensorType, Operation] | None:
    """A static float tensor of rank >= ``min_rank`` whose type is ``wanted``, that some later op uses: the
    value, its type and the first such user."""
    picked = _pick_value(site, lambda v: _float_tensor(v, min_rank) and wanted(v.type))  # type: ignore[arg-type]
    if picked is None:
        return None
    value, user = picked
    assert isinstance(value.type, TensorType)
    return value, value.type, user


# --- general mutators ---------------------------------------------------------------------------
def insert_op(site: _Site) -> bool:
    """Run a random generator recipe before a random op; its last value replaces some uses of a match."""
    anchor: Operation = site.choice(site.body.ops)
    values = site.visible_before(anchor)
    with InsertionPoint(site.body, anchor):
        made = apply_random_recipe(site.rng, values, site.config)
    if not made:
        return False
    last = made[-1]
    matching = [v for v in values if v.type == last.type and v.uses]
    if matching and site.rng.random() < 0.8:
        site.redirect_some_uses(site.choice(matching), last)
    else:
        outputs = list(func_return(site.func).operands)
        set_results(site.func, [*outputs, last])
    return True


def delete_op(site: _Site) -> bool:
    """Erase an op; each use of its results takes an earlier value of the same type or a new constant."""
    candidates = site.ops(lambda op: all(isinstance(r.type, TensorType) and r.type.is_static for r in op.results))
    if not candidates:
        return False
    op: Operation = site.choice(candidates)
    earlier = site.visible_before(op)
    for result in op.results:
        same = [v for v in earlier if v.type == result.type]
        if same and site.rng.random() < 0.7:
            replacement: Value = site.choice(same)
        else:
            with InsertionPoint(site.body, op):
                replacement = site.constant(result.type)  # type: ignore[arg-type]
        result.replace_all_uses_with(replacement)
    op.erase()
    return True


def replace_op(site: _Site) -> bool:
    """Replace an op by another of its signature group (``add`` by ``mul``, ``tanh`` by ``relu``, ...)."""
    groups = {name: group for group in SWAP_GROUPS for name in group}
    candidates = site.ops(lambda op: op.name in groups)
    if not candidates:
        return False
    op: Operation = site.choice(candidates)
    others = sorted(groups[op.name] - {op.name})
    name: str = site.choice(others)
    opdef = lookup(name)
    assert opdef is not None
    try:
        new = opdef.build(list(op.operands), {k: v for k, v in op.attributes.items() if k in opdef.attrs})
    except TensoriumError:
        return False
    if [r.type for r in new.results] != [r.type for r in op.results]:
        new.drop_operands()
        return False
    site.body.insert_before(op, new)
    for old, result in zip(op.results, new.results):
        old.replace_all_uses_with(result)
    op.erase()
    return True


def duplicate_op(site: _Site) -> bool:
    """Clone a pure op right after itself; some of its uses move to the clone (a CSE candidate)."""
    candidates = site.ops(lambda op: op.has_trait("pure") and any(r.uses for r in op.results))
    if not candidates:
        return False
    op: Operation = site.choice(candidates)
    clone = op.clone()
    site.body.insert_after(op, clone)
    moved = False
    for old, new in zip(op.results, clone.results):
        moved |= site.redirect_some_uses(old, new, keep=clone)
    return moved


def rewire_operand(site: _Site) -> bool:
    """Make an op use another earlier value of the same type for one of its operands."""
    choices = []
    for op in site.ops():
        guarded = GUARDED_OPERANDS.get(op.name, ())
        for i, v in enumerate(op.operands):
            if i not in guarded and op.name != "func.return":
                choices.append((op, i, v))
    site.rng.shuffle(choices)  # type: ignore[arg-type]
    for op, i, v in choices[:8]:
        same = [w for w in site.visible_before(op) if w.type == v.type and w is not v]
        if same:
            op.set_operand(i, site.choice(same))
            return True
    return False


def _mutate_attribute_value(site: _Site, value: Any, choices: tuple[str, ...] | None) -> Any:
    rng = site.rng
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return int(value + site.choice([-2, -1, 1, 2])) if rng.random() < 0.7 else int(rng.integers(-3, 6))
    if isinstance(value, float):
        return float(site.choice([0.0, 0.5, 1.0, 2.0, -1.0, value * 0.5, value * 2.0]))
    if isinstance(value, str) and choices:
        return site.choice(list(choices))
    if isinstance(value, tuple) and value and all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        items = list(value)
        kind = int(rng.integers(3))
        if kind == 0:
            i = int(rng.integers(len(items)))
            items[i] += int(site.choice([-1, 1]))  # type: ignore[call-overload]
        elif kind == 1:
            rng.shuffle(items)
        else:
            items.pop(int(rng.integers(len(items))))
        return tuple(items)
    return value


def change_attribute(site: _Site) -> bool:
    """Change one attribute of one op (flip a flag, move an axis, permute a list, pick another mode)."""
    candidates = site.ops(lambda op: op.name != "graph.constant" and op.opdef is not None and bool(op.opdef.attrs))
    if not candidates:
        return False
    op: Operation = site.choice(candidates)
    key: str = site.choice(sorted(op.opdef.attrs))
    spec = op.opdef.attrs[key]
    old = op.attributes.get(key, spec.default)
    if old is None:
        return False
    new = _mutate_attribute_value(site, old, spec.choices)
    if new == old or spec.validate(new) is not None:
        return False
    op.attributes[key] = new
    return site.retype()


def _asymmetric(site: _Site, op: Operation, key: str, old: Any) -> dict[str, Any] | None:
    """Per-dimension values (strides, dilations, kernel, padding sides) with one entry unlike the others."""
    if not isinstance(old, tuple) or not old:
        return None
    values = list(old)
    i = int(site.rng.integers(len(values)))
    low = 0 if len(values) == 4 else 1
    values[i] = site.choice([v for v in range(low, low + 3) if v != values[i]])
    return {key: tuple(values)}


def _both_transposed(site: _Site, op: Operation, key: str, old: Any) -> dict[str, Any] | None:
    return {"transpose_a": True, "transpose_b": True}


def _extreme_axis(site: _Site, op: Operation, key: str, old: Any) -> dict[str, Any] | None:
    rank = op.operands[0].type.rank if op.operands and isinstance(op.operands[0].type, TensorType) else 0
    if not isinstance(old, int) or rank == 0:
        return None
    return {"axis": site.choice([-rank, -1, 0, rank - 1])}


def _every_axis(site: _Site, op: Operation, key: str, old: Any) -> dict[str, Any] | None:
    rank = op.operands[0].type.rank if op.operands and isinstance(op.operands[0].type, TensorType) else 0
    if not isinstance(old, tuple) or rank == 0:
        return None
    return {"axes": tuple(range(-rank, 0)) if site.rng.random() < 0.5 else tuple(range(rank))}


def _flipped(site: _Site, op: Operation, key: str, old: Any) -> dict[str, Any] | None:
    return {key: not old} if isinstance(old, bool) else None


def _out_of_range_bound(site: _Site, op: Operation, key: str, old: Any) -> dict[str, Any] | None:
    """One slice bound far outside its dimension (either side), or counted from the end."""
    if not isinstance(old, tuple) or not old:
        return None
    values = list(old)
    i = int(site.rng.integers(len(values)))
    values[i] = int(site.choice([INT64_MAX, -INT64_MAX, 1000, -1000, -1]))
    return {key: tuple(values)}


CORNERS: dict[str, Callable[[_Site, Operation, str, Any], dict[str, Any] | None]] = {
    "strides": _asymmetric,
    "dilations": _asymmetric,
    "kernel": _asymmetric,
    "padding": _asymmetric,
    "transpose_a": _both_transposed,
    "transpose_b": _both_transposed,
    "axis": _extreme_axis,
    "axes": _every_axis,
    "keepdims": _flipped,
    "ceil_mode": _flipped,
    "count_include_pad": _flipped,
    "starts": _out_of_range_bound,
    "ends": _out_of_range_bound,
}
"""Attribute corners by attribute name: what :func:`attribute_corners` sets."""


def attribute_corners(site: _Site) -> bool:
    """Set one attribute to a corner (:data:`CORNERS`): per-dimension values made asymmetric, both transpose
    flags at once, the first or last axis (negative or not), every axis, a flag flipped, a slice bound out of
    range; types are inferred again."""
    candidates = site.ops(lambda op: op.opdef is not None and any(k in CORNERS for k in op.opdef.attrs))
    if not candidates:
        return False
    op: Operation = site.choice(candidates)
    key: str = site.choice(sorted(k for k in op.opdef.attrs if k in CORNERS))
    old = op.attributes.get(key, op.opdef.attrs[key].default)
    changes = CORNERS[key](site, op, key, old)
    if not changes or all(op.attributes.get(k, op.opdef.attrs[k].default) == v for k, v in changes.items()):
        return False
    if any(op.opdef.attrs[k].validate(v) is not None for k, v in changes.items()):
        return False
    op.attributes.update(changes)
    return site.retype()


def change_shape(site: _Site) -> bool:
    """Change one dimension of one input (to 1, to another of its dims, or by one or two) and infer every
    type again."""
    args = [a for a in site.body.args if isinstance(a.type, TensorType) and a.type.is_static and a.type.rank]
    if not args:
        return False
    arg: Value = site.choice(args)
    t = arg.type
    assert isinstance(t, TensorType)
    shape = list(t.static_shape)
    axis = int(site.rng.integers(len(shape)))
    draw = site.rng.random()
    if draw < 0.3 and len(shape) > 1:
        size = shape[site.choice([a for a in range(len(shape)) if a != axis])]  # equal dims: square cases
    elif draw < 0.5:
        size = 1
    else:
        size = max(1, shape[axis] + int(site.choice([-2, -1, 1, 2])))
    if size == shape[axis]:
        return False
    shape[axis] = size
    arg.type = TensorType(tuple(shape), t.element)
    _update_inputs(site)
    return site.retype()


def dynamic_dims(site: _Site) -> bool:
    """Make one size of the inputs a dim known only at run time: every dim of that size in one input, or in every
    input, becomes ``[s<size>]`` (:data:`~.builder.FUZZ_DIM`: the case's inputs keep the size), and every type is
    inferred again. The backends then compile the program for any size (run-time dims read from the arguments,
    grids and scratch sized at run time, views of dynamic tensors) and run it at that one."""
    args = [a for a in site.body.args if isinstance(a.type, TensorType) and a.type.is_static and a.type.rank]
    if not args:
        return False
    picked: Value = site.choice(args)
    size = int(site.choice(picked.type.static_shape))  # type: ignore[attr-defined]
    dim = Sym(f"s{size}")
    changed = False
    for arg in args if site.rng.random() < 0.5 else [picked]:
        t = arg.type
        assert isinstance(t, TensorType)
        shape = tuple(dim if d == size else d for d in t.static_shape)
        changed |= shape != t.shape
        arg.type = TensorType(shape, t.element)
    _update_inputs(site)
    return changed and site.retype()


def change_precision(site: _Site) -> bool:
    """Run the whole program at another float precision: f32 inputs and constants become f64, f16 or bf16."""
    target: FloatType = site.choice(PRECISIONS)
    changed = False
    for arg in site.body.args:
        if isinstance(arg.type, TensorType) and arg.type.element == f32:
            arg.type = TensorType(arg.type.shape, target)
            changed = True
    for op in site.ops(lambda op: op.name == "graph.constant"):
        value = op.attributes["value"]
        assert isinstance(value, DenseAttr)
        if value.type.element == f32:
            t = TensorType(value.type.shape, target)
            op.attributes["value"] = DenseAttr(value.array.astype(storage_dtype(target)), t)
            op.results[0].type = t
            changed = True
    for op in site.ops(lambda op: op.name == "graph.cast" and op.attributes.get("dtype") == f32):
        op.attributes["dtype"] = target
    _update_inputs(site)
    return changed and site.retype()


def _update_inputs(site: _Site) -> None:
    """Make the function's signature list its arguments' current types."""
    old = site.func.attributes["function_type"]
    assert isinstance(old, FunctionType)
    site.func.attributes["function_type"] = FunctionType(tuple(a.type for a in site.body.args), old.results)


# --- compiler-specific mutators: the shapes passes look for ------------------------------------------
def _wrap(site: _Site, pred: Callable[[Value], bool], build: Callable[[Value], Value | None]) -> bool:
    """Insert ``build(v)`` right before a user of a value ``v`` and let some uses of ``v`` take the result."""
    picked = _pick_value(site, pred)
    if picked is None:
        return False
    value, user = picked
    with InsertionPoint(site.body, user):
        try:
            made = build(value)
        except (TensoriumError, InferError):
            return False
    if made is None or made.type != value.type:
        return False
    return site.redirect_some_uses(value, made)


def transpose_chain(site: _Site) -> bool:
    """``x -> transpose(p) -> transpose(q) -> transpose((p q)^-1)``: a chain canonicalize must compose right.

    Half the time ``x`` is a cube (``c + sum(v)`` for a constant ``c`` of 2..4 cubed elements), so every
    wrong permutation keeps the type and no check catches it, and the chain is a new output; else ``x`` is
    a value of rank >= 2 and the chain replaces some of its uses."""

    def chain(x: Value) -> Value:
        rank = x.type.rank  # type: ignore[attr-defined]
        first = [int(p) for p in site.rng.permutation(rank)]
        second = [int(p) for p in site.rng.permutation(rank)]
        composite = [first[i] for i in second]  # transpose(transpose(x, p), q) == transpose(x, p[q])
        once = _build("graph.transpose", x, perm=first)
        twice = _build("graph.transpose", once, perm=second)
        return _build("graph.transpose", twice, perm=[int(i) for i in np.argsort(composite)])

    if site.rng.random() < 0.5:
        values = [v for v in site.visible_before(func_return(site.func)) if _float_tensor(v) and v.uses]
        if not values:
            return False
        v = site.choice(values)
        side = int(site.rng.integers(2, 5))
        anchor = func_return(site.func)
        with InsertionPoint(site.body, anchor):
            total = _build("graph.reduce_sum", v, axes=list(range(v.type.rank)))  # type: ignore[attr-defined]
            cube = _build("graph.add", site.constant(TensorType((side, side, side), v.type.element)), total)  # type: ignore[attr-defined]
            out = chain(cube)
        set_results(site.func, [*anchor.operands, out])
        return True
    return _wrap(site, lambda v: isinstance(v.type, TensorType) and v.type.is_static and v.type.rank >= 2, chain)


def reverse_axis(site: _Site) -> bool:
    """``v`` reversed along one axis by a slice with step -1, once or twice: slices with negative steps."""

    def build(v: Value) -> Value:
        t = v.type
        assert isinstance(t, TensorType)
        axis = int(site.rng.integers(t.rank))
        size = t.static_shape[axis]
        reverse = {"starts": [-1], "ends": [-size - 1], "axes": [axis], "steps": [-1]}
        once = _build("graph.slice", v, **reverse)
        return _build("graph.slice", once, **reverse) if site.rng.random() < 0.5 else once

    return _wrap(site, lambda v: isinstance(v.type, TensorType) and v.type.is_static and v.type.rank >= 1, build)


def reshape_pair(site: _Site) -> bool:
    """``v -> reshape(flat) -> reshape(shape of v)``: views the CPU plan must keep right."""

    def build(v: Value) -> Value:
        t = v.type
        assert isinstance(t, TensorType)
        flat = _build("graph.reshape", v, shape=[-1])
        return _build("graph.reshape", flat, shape=list(t.static_shape))

    return _wrap(site, lambda v: isinstance(v.type, TensorType) and v.type.is_static and v.type.rank >= 1, build)


def identity(site: _Site) -> bool:
    """``x + 0``, ``0 + x``, ``x * 1``, ``x - 0``, ``-(-x)``, ``-(0 - x)``, ``0 - (-x)`` or a cast round trip."""

    def build(v: Value) -> Value | None:
        t = v.type
        assert isinstance(t, TensorType)
        kind = int(site.rng.integers(8))
        scalar = TensorType((), t.element) if site.rng.random() < 0.5 else t
        if kind == 0:
            return _build("graph.add", v, site.constant(scalar, 0.0))
        if kind == 1:
            return _build("graph.add", site.constant(scalar, 0.0), v)
        if kind == 2:
            return _build("graph.mul", v, site.constant(scalar, 1.0))
        if kind == 3:
            return _build("graph.sub", v, site.constant(scalar, 0.0))
        if kind == 4:
            return _build("graph.neg", _build("graph.neg", v))
        if kind == 5:
            return _build("graph.neg", _build("graph.sub", site.constant(scalar, 0.0), v))
        if kind == 6:
            return _build("graph.sub", site.constant(scalar, 0.0), _build("graph.neg", v))
        wide = _build("graph.cast", v, dtype=FloatType("f64"))
        return _build("graph.cast", wide, dtype=t.element)

    return _wrap(site, lambda v: _float_tensor(v), build)


def constant_subexpression(site: _Site) -> bool:
    """``x + (c1 * c0)`` with constants only on the right: work for fold, then canonicalize."""

    def build(v: Value) -> Value:
        t = v.type
        assert isinstance(t, TensorType)
        a = site.constant(t)
        zero = site.constant(TensorType((), t.element), 0.0)
        folded = _build("graph.mul", a, zero)
        return _build(f"graph.{site.choice(['add', 'sub'])}", v, folded)

    return _wrap(site, lambda v: _float_tensor(v), build)


def matmul_epilogue(site: _Site) -> bool:
    """``matmul(x, W) + b`` then an activation, from a rank >= 2 value: what fuse puts in one kernel. Half
    the time the layer is wider (65..96 columns: more than one of pack-weights' 64-column panels, mostly
    with a tail that is not a multiple of the 16 lanes) and a second matmul projects it back, an MLP."""
    picked = _pick_float_tensor(site, 2)
    if picked is None:
        return False
    x, t, user = picked
    k = t.static_shape[-1]
    n = int(site.rng.integers(65, 97)) if site.rng.random() < 0.5 else k
    transpose_b = bool(site.rng.random() < 0.5)

    def weight(rows: int, columns: int) -> Value:
        shape = (columns, rows) if transpose_b else (rows, columns)
        return site.constant(TensorType(shape, t.element))

    with InsertionPoint(site.body, user):
        y = _build("graph.matmul", x, weight(k, n), transpose_b=transpose_b)
        y = _build("graph.add", y, site.constant(TensorType((n,), t.element)))
        y = _build(f"graph.{site.choice(['relu', 'gelu', 'tanh', 'sigmoid', 'silu'])}", y)
        if n != k:
            y = _build("graph.matmul", y, weight(n, k), transpose_b=transpose_b)
    return site.redirect_some_uses(x, y)


def sibling_matmuls(site: _Site) -> bool:
    """Two or three matmuls of one input by constant weights, at least one transposed and one not, summed:
    fuse-siblings stacks them."""
    # a contraction of length 1 would make W and W^T the same matrix
    picked = _pick_float_tensor(site, 2, lambda t: t.static_shape[-1] >= 2) or _pick_float_tensor(site, 2)
    if picked is None:
        return False
    x, t, user = picked
    k = t.static_shape[-1]
    with InsertionPoint(site.body, user):
        total = None
        # siblings that differ in transpose_b: what a sibling pass's grouping key has to tell apart
        flags = [False, True, bool(site.rng.random() < 0.5)][: int(site.rng.integers(2, 4))]
        for i in site.rng.permutation(len(flags)):
            transpose_b = flags[int(i)]
            y = _build("graph.matmul", x, site.constant(TensorType((k, k), t.element)), transpose_b=transpose_b)
            total = y if total is None else _build("graph.add", total, y)
    assert total is not None
    return site.redirect_some_uses(x, total)


def attention_pattern(site: _Site) -> bool:
    """``softmax(x @ x^T * scale (or / c) [+ mask]) @ x`` written out op by op: what fuse-attention finds."""
    picked = _pick_float_tensor(site, 2)
    if picked is None:
        return False
    x, t, user = picked
    seq, dim = t.static_shape[-2], t.static_shape[-1]
    with InsertionPoint(site.body, user):
        scores = _build("graph.matmul", x, x, transpose_b=True)
        if site.rng.random() < 0.5:
            scores = _build("graph.mul", scores, site.constant(TensorType((), t.element), float(1.0 / np.sqrt(dim))))
        else:
            scores = _build("graph.div", scores, site.constant(TensorType((), t.element), float(np.sqrt(dim))))
        if site.rng.random() < 0.5:
            mask = np.triu(np.full((seq, seq), -1e4, dtype=storage_dtype(t.element)), 1)
            scores = _build(
                "graph.add",
                scores,
                _build("graph.constant", value=DenseAttr(mask, TensorType((seq, seq), t.element))),
            )
        probs = _build("graph.softmax", scores, axis=-1)
        out = _build("graph.matmul", probs, x)
    return site.redirect_some_uses(x, out)


def conv_batch_norm(site: _Site) -> bool:
    """A rank-4 value through a 3x3 convolution (constant weights) and an inference batch norm."""
    picked = _pick_float_tensor(site, 4, lambda t: t.rank == 4)
    if picked is None:
        return False
    x, t, user = picked
    c = t.static_shape[1]
    e = t.element
    with InsertionPoint(site.body, user):
        w = site.constant(TensorType((c, c, 3, 3), e))
        y = _build("graph.conv2d", x, w, padding=[1, 1, 1, 1])
        scale = site.constant(TensorType((c,), e))
        bias = site.constant(TensorType((c,), e))
        mean = site.constant(TensorType((c,), e))
        # variances near the norm's epsilon (1e-5) now and then: where folding it matters
        variance = site.rng.uniform(0.5, 1.5, size=(c,)) * site.choice([1.0, 1e-5])
        var = _build(
            "graph.constant",
            value=DenseAttr(variance.astype(storage_dtype(e)), TensorType((c,), e)),
        )
        # an epsilon other than the default now and then: the fold must use the norm's own
        y = _build("graph.batch_norm", y, scale, bias, mean, var, eps=float(site.choice([1e-5, 1e-5, 1e-3, 0.1])))
        if site.rng.random() < 0.5:
            y = _build("graph.relu", y)
    return site.redirect_some_uses(x, y)


ORDERED_BINARIES = tuple(f"graph.{n}" for n in ("sub", "lt", "le", "gt", "ge", "max", "min"))


def commuted_twin(site: _Site) -> bool:
    """``op(a, b)`` and ``op(b, a)`` both returned (``sub``, comparisons, ...): CSE candidates that only a
    commutative op may merge. ``a`` is a value of the program, ``b`` another of its type or a constant."""
    values = [v for v in site.visible_before(func_return(site.func)) if _float_tensor(v) and v.uses]
    if not values:
        return False
    a = site.choice(values)
    others = [v for v in values if v.type == a.type and v is not a]
    anchor = func_return(site.func)
    with InsertionPoint(site.body, anchor):
        b = site.choice(others) if others and site.rng.random() < 0.7 else site.constant(a.type)  # type: ignore[arg-type]
        name = site.choice(ORDERED_BINARIES)
        first, second = _build(name, a, b), _build(name, b, a)
    set_results(site.func, [*anchor.operands, first, second])
    return True


def constant_values(site: _Site) -> bool:
    """New values for a float constant, same sign: tiny, huge, partly zero or all equal (what folds and
    epsilons meet at their edges)."""
    candidates = site.ops(lambda op: op.name == "graph.constant" and _float_tensor(op.results[0]))
    if not candidates:
        return False
    op = site.choice(candidates)
    value = op.attributes["value"]
    assert isinstance(value, DenseAttr)
    array = value.array.astype(np.float64)
    kind = int(site.rng.integers(4))
    if kind == 0:
        array = array * site.choice([1e-6, 1e-3])
    elif kind == 1:
        array = array * site.choice([1e2, 1e3])
    elif kind == 2:
        array = np.where(site.rng.random(array.shape) < 0.5, 0.0, array)
    else:
        array = np.full(array.shape, array.reshape(-1)[0] if array.size else 0.0)
    t = value.type
    op.attributes["value"] = DenseAttr(array.astype(storage_dtype(t.element)), t)
    return True


def constant_program(site: _Site) -> bool:
    """A generator recipe run on new constants only: everything it makes is work for fold."""
    anchor = site.choice(site.body.ops)
    rank = int(site.rng.integers(1, site.config.max_rank + 1))
    shape = tuple(int(d) for d in site.rng.integers(1, site.config.max_dim + 1, size=rank))
    with InsertionPoint(site.body, anchor):
        constants = [site.constant(TensorType(shape, f32)) for _ in range(int(site.rng.integers(1, 3)))]
        made = apply_random_recipe(site.rng, constants, site.config)
    if not made:
        return False
    last = made[-1]
    matching = [v for v in site.visible_before(anchor) if v.type == last.type and v.uses]
    if matching and site.rng.random() < 0.5:
        return site.redirect_some_uses(site.choice(matching), last)
    set_results(site.func, [*func_return(site.func).operands, last])
    return True


INTEGER_CASTS = tuple(IntegerType(w, signed) for w in (8, 16, 32, 64) for signed in (True, False))


def integer_casts(site: _Site) -> bool:
    """An integer value (or a float one scaled and cast to i32) through casts to two other integer types,
    mostly of opposite signedness, and back: the wraps and extensions cast canonicalization must keep."""

    def build(v: Value) -> Value:
        t = v.type
        assert isinstance(t, TensorType)
        if isinstance(t.element, FloatType):
            scaled = _build("graph.mul", v, site.constant(TensorType((), t.element), 8.0))
            v = _build("graph.cast", scaled, dtype=IntegerType(32))
        first = site.choice(INTEGER_CASTS)
        flipped = [c for c in INTEGER_CASTS if c.signed != first.signed]
        second = site.choice(flipped if site.rng.random() < 0.7 else INTEGER_CASTS)
        once = _build("graph.cast", v, dtype=first)
        return _build("graph.cast", _build("graph.cast", once, dtype=second), dtype=t.element)

    def wanted(v: Value) -> bool:
        t = v.type
        return isinstance(t, TensorType) and isinstance(t.element, (IntegerType, FloatType)) and t.element != i1

    return _wrap(site, wanted, build)


def split_tail(site: _Site) -> bool:
    """Split a value in two along an axis, often into equal parts, and return only the second part (the first
    result is dead). Half the time the value is a new constant of its type, so fold folds the split."""
    values: list[Value] = [
        v
        for op in site.ops()
        for v in op.results
        if isinstance(v.type, TensorType) and v.type.is_static and any(d >= 2 for d in v.type.static_shape)
    ]
    if not values:
        return False
    v = site.choice(values)
    t = v.type
    assert isinstance(t, TensorType)
    axis = site.choice([a for a, d in enumerate(t.static_shape) if d >= 2])
    size = t.static_shape[axis]
    cut = size // 2 if size % 2 == 0 and site.rng.random() < 0.5 else int(site.rng.integers(1, size))
    split = lookup("graph.split")
    assert split is not None
    anchor = func_return(site.func)
    with InsertionPoint(site.body, anchor):
        if site.rng.random() < 0.5:
            v = site.constant(t)
        _, tail = split(v, axis=axis, sizes=[cut, size - cut])
    set_results(site.func, [*anchor.operands, tail])
    return True


def near_miss(pattern: str) -> IrMutator:
    """The mutator that writes out one of ``pattern``'s near misses (:data:`.near_miss.NEAR_MISSES`) around a
    value it grows from: the stand-in takes some of the value's uses, the extra values become outputs."""
    chosen = NEAR_MISSES[pattern]

    def mutate(site: _Site) -> bool:
        picked = _pick_value(
            site,
            lambda v: (
                isinstance(v.type, TensorType)
                and chosen.wants(v.type)
                and int(np.prod(v.type.static_shape)) <= site.config.max_elements
            ),
        )
        if picked is None:
            return False
        x, user = picked
        miss = chosen.misses[site.choice(sorted(chosen.misses))]
        with InsertionPoint(site.body, user):
            stand_in, extras = miss(Materials(site.rng), x)
        if extras:
            set_results(site.func, [*func_return(site.func).operands, *extras])
        if stand_in is not None:
            site.redirect_some_uses(x, stand_in)
        return stand_in is not None or bool(extras)

    mutate.__name__ = f"near_miss_{pattern.replace('-', '_')}"
    return mutate


IR_MUTATORS: dict[str, tuple[IrMutator, float]] = {
    "insert": (insert_op, 4.0),
    "delete": (delete_op, 1.5),
    "replace": (replace_op, 1.5),
    "duplicate": (duplicate_op, 1.0),
    "rewire": (rewire_operand, 1.5),
    "attribute": (change_attribute, 2.0),
    "attribute-corners": (attribute_corners, 1.2),
    "shape": (change_shape, 1.0),
    "precision": (change_precision, 0.3),
    "dynamic-dims": (dynamic_dims, 0.8),
    # compiler-specific: together about 55% of the draws, the share that makes joint IR and pipeline
    # mutation pay off (each also brings the pass its pattern is for, PATTERN_PASSES)
    "transpose-chain": (transpose_chain, 1.4),
    "reverse-axis": (reverse_axis, 0.8),
    "reshape-pair": (reshape_pair, 1.0),
    "commuted-twin": (commuted_twin, 1.2),
    "constant-values": (constant_values, 1.2),
    "constant-program": (constant_program, 1.6),
    "integer-casts": (integer_casts, 1.0),
    "split-tail": (split_tail, 0.8),
    "identity": (identity, 1.4),
    "constant-subexpression": (constant_subexpression, 1.0),
    "matmul-epilogue": (matmul_epilogue, 1.4),
    "sibling-matmuls": (sibling_matmuls, 1.0),
    "attention": (attention_pattern, 0.8),
    "conv-batch-norm": (conv_batch_norm, 0.8),
    # near misses of the same patterns, which their passes must refuse
    **{f"near-miss-{name}": (near_miss(name), 0.8) for name in NEAR_MISSES},
}
"""Every IR mutator by name, with its weight in the random choice."""

PATTERN_PASSES: dict[str, tuple[str, ...]] = {
    "transpose-chain": ("canonicalize", "layout"),
    "reverse-axis": ("canonicalize",),
    "reshape-pair": ("canonicalize", "fuse"),
    "commuted-twin": ("cse",),
    "duplicate": ("cse",),
    "constant-values": ("fold", "fold-batch-norm", "canonicalize"),
    "constant-program": ("fold",),
    "constant-subexpression": ("fold", "canonicalize"),
    "integer-casts": ("canonicalize",),
    "split-tail": ("dce", "fold", "canonicalize"),
    "identity": ("canonicalize",),
    "matmul-epilogue": ("fuse", "pack-weights"),
    "sibling-matmuls": ("fuse-siblings",),
    "attention": ("fuse-attention",),
    "conv-batch-norm": ("fold-batch-norm",),
    "attribute-corners": ("layout", "canonicalize", "fold"),
    **{f"near-miss-{name}": (pattern.pass_name,) for name, pattern in NEAR_MISSES.items()},
}
"""The passes that look for what a compiler-specific mutator builds: after the mutator runs, the fuzzer
puts one of them into the case's pipeline when none is there (the IR and the pipeline mutated together)."""


def mutate_module(
    module: Operation, rng: Rng, config: GenConfig | None = None, attempts: int = 10, only: Sequence[str] = ()
) -> tuple[Operation, str] | None:
    """A verified mutant of ``module`` (a new module; the given one is untouched) and the mutator's name.

    Mutators are drawn by weight (from ``only`` when given) until one changes the program into a valid one;
    None after ``attempts`` failures.
    """
    cfg = config if config is not None else GenConfig()
    names = list(only) if only else list(IR_MUTATORS)
    weights = np.array([IR_MUTATORS[n][1] for n in names])
    for _ in range(attempts):
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        mutant = module.clone()
        try:
            changed = IR_MUTATORS[name][0](_Site(mutant, rng, cfg))
            if changed:
                verify(mutant)
                return mutant, name
        except (TensoriumError, InferError):
            continue
    return None


# --- pipeline mutators --------------------------------------------------------------------------
TERMINAL_PASSES = frozenset({"lower-to-loops"})
"""Passes after which no other pass may run (the IR is no longer at the graph level)."""

_INT_CHOICES = (0, 1, 2, 3, 4, 8, 16, 32, 64)


def _graph_passes() -> list[str]:
    """The passes random pipelines draw from: graph-level ones that keep a program's results (not quantize)."""
    return [n for n in pass_names() if n not in TERMINAL_PASSES and get_pass(n).exact]


def random_pipeline(rng: Rng, max_length: int = 6) -> Pipeline:
    """A random pipeline of 1..``max_length`` graph passes with default options."""
    names = _graph_passes()
    count = int(rng.integers(1, max_length + 1))
    return Pipeline(tuple(get_pass(names[int(rng.integers(len(names)))])() for _ in range(count)))


def _random_options(rng: Rng, p: Pass) -> Pass:
    """``p`` with one option changed (ints from a small set, bools flipped; strings keep their value)."""
    types = option_types(type(p))
    fields = [f for f in dataclasses.fields(p) if types[f.name] in (int, bool)]
    if not fields:
        return p
    field = fields[int(rng.integers(len(fields)))]
    current = getattr(p, field.name)
    if types[field.name] is bool:
        value: object = not current
    else:
        value = int(_INT_CHOICES[int(rng.integers(len(_INT_CHOICES)))])
    try:
        return dataclasses.replace(p, **{field.name: value})
    except TensoriumError:
        return p  # a value the pass refuses (pack-weights{width=0}): keep the pass as it was


def with_pass_for(pipeline: Pipeline, mutator: str, rng: Rng) -> Pipeline:
    """``pipeline`` with one of the passes ``mutator``'s pattern is for (:data:`PATTERN_PASSES`, half the time
    with one option changed) inserted at a random place before any terminal pass, unless one is there."""
    return _with_one_of(pipeline, PATTERN_PASSES.get(mutator, ()), rng)


OP_PASSES: dict[str, tuple[str, ...]] = {
    "graph.conv2d": ("layout", "fold-batch-norm", "fuse"),
    "graph.batch_norm": ("fold-batch-norm",),
    "graph.matmul": ("pack-weights", "fuse-siblings", "fuse", "fuse-attention"),
    "graph.softmax": ("fuse-attention", "fuse"),
    "graph.transpose": ("layout", "canonicalize"),
    "graph.reshape": ("canonicalize", "fuse"),
}
"""The passes that rewrite a graph op (by name): a freshly generated program holding one gets one of them
in its random pipeline now and then (:func:`with_pass_for_ops`), so that a pass meets the ops it rewrites
more often than a uniform draw from a dozen passes gives (a convolution and ``layout``, whose NHWC form
the CPU backend lowers with kernels of its own; a matmul by a constant and ``pack-weights``)."""


def with_pass_for_ops(pipeline: Pipeline, module: Operation, rng: Rng) -> Pipeline:
    """``pipeline`` with one of the passes (:data:`OP_PASSES`) for the ops of ``module`` inserted as
    :func:`with_pass_for` inserts one, unless one of them is there or ``module`` holds none of those ops."""
    present = {op.name for op in module.walk()}
    targets = tuple(dict.fromkeys(p for name in sorted(present & OP_PASSES.keys()) for p in OP_PASSES[name]))
    return _with_one_of(pipeline, targets, rng)


def _with_one_of(pipeline: Pipeline, targets: Sequence[str], rng: Rng) -> Pipeline:
    """``pipeline`` with one of the passes named ``targets`` (half the time with one option changed) inserted
    at a random place before any terminal pass, unless one of them is there already."""
    passes = list(pipeline)
    if not targets or any(p.name in targets for p in passes):
        return pipeline
    end = next((i for i, p in enumerate(passes) if p.name in TERMINAL_PASSES), len(passes))
    chosen = get_pass(targets[int(rng.integers(len(targets)))])()
    if rng.random() < 0.5:
        chosen = _random_options(rng, chosen)
    passes.insert(int(rng.integers(end + 1)), chosen)
    return Pipeline(tuple(passes))


def mutate_pipeline(pipeline: Pipeline, rng: Rng, max_length: int = 8) -> tuple[Pipeline, str]:
    """A changed pipeline and the name of the change: insert, delete, swap, repeat, options or fresh."""
    passes = [p for p in pipeline if p.name not in TERMINAL_PASSES]
    terminal = [p for p in pipeline if p.name in TERMINAL_PASSES][:1]
    kinds = ["insert", "delete", "swap", "repeat", "options", "fresh", "terminal"]
    # Adding or removing lower-to-loops is rare: the CPU backend lowers every case anyway.
    weights = np.array([3, 2, 2, 1, 2, 1, 0.5])
    kind = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
    names = _graph_passes()
    if (kind == "insert" and len(passes) < max_length) or not passes:
        kind = "insert"
        passes.insert(int(rng.integers(len(passes) + 1)), get_pass(names[int(rng.integers(len(names)))])())
    elif kind == "delete" and len(passes) > 1:
        passes.pop(int(rng.integers(len(passes))))
    elif kind == "swap" and len(passes) > 1:
        i, j = (int(x) for x in rng.choice(len(passes), size=2, replace=False))
        passes[i], passes[j] = passes[j], passes[i]
    elif kind == "repeat" and len(passes) < max_length:
        i = int(rng.integers(len(passes)))
        passes.insert(i + 1, passes[i])
    elif kind == "options":
        i = int(rng.integers(len(passes)))
        passes[i] = _random_options(rng, passes[i])
    elif kind == "terminal":
        lower: Any = get_pass("lower-to-loops")
        terminal = [] if terminal else [lower(schedule=bool(rng.random() < 0.5))]
    else:
        kind = "fresh"
        passes = list(random_pipeline(rng))
    return Pipeline(tuple(passes + terminal)), kind
