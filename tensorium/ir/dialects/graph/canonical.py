"""Canonicalization patterns of the graph dialect: algebraic identities and shape-op chains.

Every pattern keeps the program's value exactly, with two documented choices: ``x + 0.0`` becomes
``x`` although ``-0.0 + 0.0`` is ``+0.0`` (the sign of a zero is the only difference), and
``x * 0`` and ``x - x`` fold to zeros for integers only, since for floats NaN and inf give NaN.
A splat constant stands for its value only where broadcasting keeps the other operand's type:
``x + zeros`` of a larger shape is a broadcast, not a no-op, and stays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....errors import VerifyError
from ...attributes import DenseAttr
from ...core import BlockArgument, Operation, Value
from ...opdef import lookup
from ...rewrite import PatternRewriter, pattern
from ...types import (
    FloatType,
    IndexType,
    IntegerType,
    QuantizedType,
    ScalarType,
    Sym,
    TensorType,
    Type,
    storage_dtype,
)
from .shape import INT64_MAX


# helpers ------------------------------------------------------------------------------------
def producer(value: Value, name: str) -> Operation | None:
    """The op defining ``value`` when it is named ``name``, else None."""
    op = value.defining_op()
    return op if op is not None and op.name == name else None


def constant_array(value: Value | None) -> np.ndarray | None:
    """The array of the ``graph.constant`` defining ``value``, else None."""
    op = producer(value, "graph.constant") if value is not None else None
    if op is None:
        return None
    attr = op.attributes["value"]
    assert isinstance(attr, DenseAttr)
    return attr.array


def splat_value(value: Value) -> Any:
    """The one element of a splat ``graph.constant`` defining ``value`` (a Python scalar), or None.

    Quantized constants give None: their stored integers are not the values they stand for.
    """
    op = producer(value, "graph.constant")
    if op is None:
        return None
    attr = op.attributes.get("value")
    if not isinstance(attr, DenseAttr) or not attr.is_splat or isinstance(attr.type.element, QuantizedType):
        return None
    return attr.array.reshape(-1)[0].item()


def _ints(op: Operation, key: str) -> tuple[int, ...]:
    """The integer-list attribute ``key`` of ``op`` (empty when absent)."""
    value = op.attributes.get(key, ())
    assert isinstance(value, tuple)
    return value


def _is_splat_of(value: Value, number: int) -> bool:
    found = splat_value(value)
    return found is not None and not isinstance(found, bool) and found == number


def _is_integer(t: Type) -> bool:
    return isinstance(t, TensorType) and (
        isinstance(t.element, IndexType) or (isinstance(t.element, IntegerType) and not t.element.is_bool)
    )


def _zeros(rewriter: PatternRewriter, anchor: Operation, t: Type) -> Value | None:
    """A new zero constant of static type ``t`` before ``anchor``, or None when ``t`` is not static."""
    if not isinstance(t, TensorType) or not t.is_static:
        return None
    array = np.zeros(t.static_shape, dtype=storage_dtype(t.element))
    return rewriter.create_before(anchor, "graph.constant", [], {"value": DenseAttr(array, t)}).result


def _replace_if_same_type(rewriter: PatternRewriter, op: Operation, value: Value) -> bool:
    """Replace ``op``'s one result by ``value`` when the types are equal; True when done."""
    if value.type != op.result.type:
        return False
    rewriter.replace_op(op, [value])
    return True


def _rebuild(rewriter: PatternRewriter, op: Operation, name: str, operand: Value, attrs: dict[str, Any]) -> bool:
    """Replace ``op`` by a new op ``name`` of ``operand`` when that gives exactly ``op``'s result type."""
    opdef = lookup(name)
    assert opdef is not None
    try:
        new = opdef.build([operand], attrs, loc=op.loc)
    except VerifyError:
        return False
    if new.result.type != op.result.type:
        new.drop_operands()
        return False
    rewriter.insert_before(op, new)
    rewriter.replace_op(op, new.results)
    return True


def _same_size_shapes(t: Type) -> bool:
    """True when two values of type ``t`` provably have the same shape (at most one anonymous dim)."""
    return isinstance(t, TensorType) and sum(1 for d in t.shape if isinstance(d, Sym) and d.name is None) <= 1


# algebraic identities -----------------------------------------------------------------------
@pattern("graph.add", "graph.sub", canonical=True)
def add_zero(op: Operation, rewriter: PatternRewriter) -> bool:
    """x + 0 -> x, 0 + x -> x, x - 0 -> x (when the result type is x's type)."""
    lhs, rhs = op.operands
    if _is_splat_of(rhs, 0) and _replace_if_same_type(rewriter, op, lhs):
        return True
    return op.name == "graph.add" and _is_splat_of(lhs, 0) and _replace_if_same_type(rewriter, op, rhs)


@pattern("graph.mul", "graph.div", canonical=True)
def mul_one(op: Operation, rewriter: PatternRewriter) -> bool:
    """x * 1 -> x, 1 * x -> x, x / 1 -> x (when the result type is x's type)."""
    lhs, rhs = op.operands
    if _is_splat_of(rhs, 1) and _replace_if_same_type(rewriter, op, lhs):
        return True
    return op.name == "graph.mul" and _is_splat_of(lhs, 1) and _replace_if_same_type(rewriter, op, rhs)


@pattern("graph.mul", canonical=True)
def mul_zero(op: Operation, rewriter: PatternRewriter) -> bool:
    """Integer x * 0 -> zeros of the result type (not for floats: NaN * 0 and inf * 0 are NaN)."""
    if not _is_integer(op.result.type):
        return False
    for value in op.operands:
        if _is_splat_of(value, 0):
            if _replace_if_same_type(rewriter, op, value):
                return True
            zeros = _zeros(rewriter, op, op.result.type)
            if zeros is not None:
                rewriter.replace_op(op, [zeros])
                return True
    return False


@pattern("graph.sub", canonical=True)
def sub_self(op: Operation, rewriter: PatternRewriter) -> bool:
    """Integer x - x -> zeros (not for floats: inf - inf is NaN)."""
    lhs, rhs = op.operands
    if lhs is not rhs or not _is_integer(op.result.type):
        return False
    zeros = _zeros(rewriter, op, op.result.type)
    if zeros is None:
        return False
    rewriter.replace_op(op, [zeros])
    return True


@pattern("graph.pow", canonical=True)
def pow_small_integer(op: Operation, rewriter: PatternRewriter) -> bool:
    """x ** 2 -> x * x and x ** 3 -> x * x * x for a splat exponent (when the result type is x's type).

    As PyTorch computes them (ATen's scalar-exponent fast path), and a multiply where the backends would
    otherwise call ``powf`` per element (the tanh GELU of GPT-2 cubes every activation). Exact for x ** 2 and
    integers; for floats x ** 3 is rounded twice, as PyTorch's is."""
    x, exponent = op.operands
    power = splat_value(exponent)
    if isinstance(power, bool) or power not in (2, 3) or x.type != op.result.type:
        return False
    square = rewriter.create_before(op, "graph.mul", [x, x]).result
    result = square if power == 2 else rewriter.create_before(op, "graph.mul", [square, x]).result
    return _replace_if_same_type(rewriter, op, result)


@pattern("graph.neg", canonical=True)
def neg_neg(op: Operation, rewriter: PatternRewriter) -> bool:
    """neg(neg(x)) -> x (exact for floats, and for integers modulo their width)."""
    inner = producer(op.operands[0], "graph.neg")
    return inner is not None and _replace_if_same_type(rewriter, op, inner.operands[0])


# shape ops ----------------------------------------------------------------------------------
@pattern("graph.transpose", canonical=True)
def transpose_chain(op: Operation, rewriter: PatternRewriter) -> bool:
    """transpose(x, identity) -> x; a transpose that keeps the order of the dims larger than 1 -> a reshape
    (the same elements in the same order, static shapes); transpose(transpose(x, p), q) -> transpose(x, p[q])
    or x."""
    perm = _ints(op, "perm")
    if perm == tuple(range(len(perm))):
        return _replace_if_same_type(rewriter, op, op.operands[0])
    in_type, out_type = op.operands[0].type, op.result.type
    if isinstance(in_type, TensorType) and isinstance(out_type, TensorType) and in_type.is_static:
        moved = [a for a in perm if in_type.shape[a] != 1]
        if moved == sorted(moved):
            return _rebuild(rewriter, op, "graph.reshape", op.operands[0], {"shape": out_type.static_shape})
    inner = producer(op.operands[0], "graph.transpose")
    if inner is None:
        return False
    inner_perm = _ints(inner, "perm")
    composed = tuple(inner_perm[p] for p in perm)
    source = inner.operands[0]
    if composed == tuple(range(len(composed))):
        return _replace_if_same_type(rewriter, op, source)
    return _rebuild(rewriter, op, "graph.transpose", source, {"perm": composed})


def _swaps_last_two(op: Operation) -> bool:
    """True for a transpose that swaps the last two axes and keeps the others in place."""
    perm = _ints(op, "perm")
    n = len(perm)
    return n >= 2 and perm == (*range(n - 2), n - 1, n - 2)


@pattern("graph.matmul", canonical=True)
def matmul_transposed_operand(op: Operation, rewriter: PatternRewriter) -> bool:
    """matmul(transpose(x) swapping the last two axes, ...) -> matmul(x, ...) with that side's flag flipped,
    so a weight stored as [out, in] (torch Linear) is read in place rather than transposed at run time."""
    operands = list(op.operands)
    attrs = dict(op.attributes)
    changed = False
    for side, flag in enumerate(("transpose_a", "transpose_b")):
        inner = producer(operands[side], "graph.transpose")
        if inner is not None and _swaps_last_two(inner):
            operands[side] = inner.operands[0]
            attrs[flag] = not bool(op.attr(flag, False))
            changed = True
    if not changed:
        return False
    new = Operation(op.name, operands, op.result_types, attrs, loc=op.loc)
    rewriter.insert_before(op, new)
    rewriter.replace_op(op, new.results)
    return True


@pattern("graph.reshape", canonical=True)
def reshape_chain(op: Operation, rewriter: PatternRewriter) -> bool:
    """reshape to x's own type -> x; reshape(reshape(x)) -> one reshape of x."""
    x = op.operands[0]
    if x.type == op.result.type and _same_size_shapes(x.type):
        rewriter.replace_op(op, [x])
        return True
    inner = producer(x, "graph.reshape")
    if inner is None:
        return False
    shape = list(_ints(op, "shape"))
    allowzero = op.attributes.get("allowzero", False)
    if not allowzero:
        inner_type = inner.result.type
        assert isinstance(inner_type, TensorType)
        for i, s in enumerate(shape):
            if s == 0:
                dim = inner_type.shape[i]
                if not isinstance(dim, int) or dim == 0:
                    return False
                shape[i] = dim
    return _rebuild(rewriter, op, "graph.reshape", inner.operands[0], {"shape": tuple(shape), "allowzero": allowzero})


@pattern("graph.squeeze", canonical=True)
def squeeze_unsqueeze(op: Operation, rewriter: PatternRewriter) -> bool:
    """squeeze(unsqueeze(x, axes), axes) -> x."""
    inner = producer(op.operands[0], "graph.unsqueeze")
    if inner is None:
        return False
    middle = inner.result.type
    assert isinstance(middle, TensorType)
    same_axes = {a % middle.rank for a in _ints(op, "axes")} == {a % middle.rank for a in _ints(inner, "axes")}
    return same_axes and _replace_if_same_type(rewriter, op, inner.operands[0])


@pattern("graph.broadcast_to", canonical=True)
def broadcast_to_same(op: Operation, rewriter: PatternRewriter) -> bool:
    """broadcast_to(x) of x's own type -> x (a broadcast that keeps the type changes nothing)."""
    return _replace_if_same_type(rewriter, op, op.operands[0])


@pattern("graph.slice", canonical=True)
def slice_full(op: Operation, rewriter: PatternRewriter) -> bool:
    """A slice with step 1 that keeps every element of each sliced axis -> x."""
    x = op.operands[0]
    t = x.type
    if not isinstance(t, TensorType) or t != op.result.type:
        return False
    starts, ends = _ints(op, "starts"), _ints(op, "ends")
    axes = _ints(op, "axes") or tuple(range(len(starts)))
    steps = _ints(op, "steps") or (1,) * len(starts)
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if step != 1:
            return False
        full = (start == 0 or start <= -INT64_MAX) and end >= INT64_MAX
        if not full and not isinstance(t.shape[axis], int):
            return False
    rewriter.replace_op(op, [x])
    return True


# casts --------------------------------------------------------------------------------------
_MANTISSA_BITS = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
_FLOAT_WIDENING = {("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"), ("f32", "f64")}


def is_lossless_cast(source: ScalarType, target: ScalarType) -> bool:
    """True when every value of ``source`` is exactly a value of ``target``."""
    if isinstance(source, IndexType):
        source = IntegerType(64)
    if isinstance(target, IndexType):
        target = IntegerType(64)
    if source == target:
        return True
    if isinstance(source, FloatType):
        return isinstance(target, FloatType) and (source.name, target.name) in _FLOAT_WIDENING
    if not isinstance(source, IntegerType) or type(target) not in (IntegerType, FloatType):
        return False
    if source.is_bool:
        return True
    magnitude_bits = source.width - 1 if source.signed else source.width
    if isinstance(target, FloatType):
        return magnitude_bits <= _MANTISSA_BITS[target.name]
    assert isinstance(target, IntegerType)
    if target.is_bool:
        return False
    if target.signed:
        return magnitude_bits <= target.width - 1
    return not source.signed and source.width <= target.width


@pattern("graph.cast", canonical=True)
def cast_chain(op: Operation, rewriter: PatternRewriter) -> bool:
    """cast(x) to x's own element type -> x; cast(cast(x)) -> cast(x) when the inner cast is lossless."""
    x = op.operands[0]
    if _replace_if_same_type(rewriter, op, x):
        return True
    inner = producer(x, "graph.cast")
    if inner is None:
        return False
    source = inner.operands[0]
    middle = inner.result.type
    assert isinstance(source.type, TensorType) and isinstance(middle, TensorType)
    if not is_lossless_cast(source.type.element, middle.element):
        return False
    if _replace_if_same_type(rewriter, op, source):
        return True
    return _rebuild(rewriter, op, "graph.cast", source, {"dtype": op.attributes["dtype"]})


# fused groups -------------------------------------------------------------------------------
@pattern("graph.fused", canonical=True)
def forwarding_group(op: Operation, rewriter: PatternRewriter) -> bool:
    """A fused group whose body gives its own arguments (the rest of it folded away: ``cast(cast(x: i1 -> i32)
    -> i1)`` is x) is those operands; no kernel is left to compute nothing."""
    block = op.regions[0].block
    term = block.terminator
    if term is None or not all(isinstance(v, BlockArgument) and v.block is block for v in term.operands):
        return False
    rewriter.replace_op(op, [op.operands[v.index] for v in term.operands])  # type: ignore[attr-defined]
    return True
