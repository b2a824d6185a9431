"""The ATen converter table of the PyTorch frontend: one small function per ATen op.

Each converter receives a :class:`Context` (the FX node being converted, its torch metadata and
helpers for constants and casts) and the node's arguments with FX nodes replaced by graph values;
it builds graph ops at the current insertion point and returns the node's value (a tuple for ops
with several results). Converters are keyed by overload name (``aten.add.Tensor``) or packet name
(``aten.add``); the overload wins. Type promotion follows torch: the frontend reads the result
dtype from the node's metadata and inserts ``graph.cast`` where operand types differ.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects import graph
from ..ir.dialects.builtin import func_body, func_type
from ..ir.shapes import dim_product
from ..ir.types import (
    DYN,
    Dim,
    FloatType,
    FunctionType,
    ScalarType,
    Sym,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
    storage_dtype,
    u8,
)
from .symbolic_dims import arange_symbolic, broadcast_symbolic, slice_to_symbol

Converter = Callable[..., Any]
CONVERTERS: dict[str, Converter] = {}
"""Converters by ATen overload or packet name."""

IGNORED = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_scalar.default",
        "aten._assert_async.msg",
        "aten.sym_constrain_range_for_size.default",
        "aten.sym_constrain_range.default",
    }
)
"""Ops with no effect on values (runtime assertions); they convert to nothing."""

EFFECT_CHECKS = frozenset({"aten._linalg_check_errors.default"})
"""Ops torch.export runs with effect tokens (``with_effects``) that only check for errors: dropped."""


class _EffectToken:
    """The value of torch.export's effect token (a TOKEN input, threaded through ``with_effects``)."""


EFFECT_TOKEN = _EffectToken()

INT64_MAX = 2**63 - 1
GENERATOR_KEY = "rng_key"
"""The name of @main's generator key argument in a model with random ops (see :meth:`Context.generator_key`)."""

_TORCH_TO_IR: dict[torch.dtype, ScalarType] = {
    torch.float32: f32,
    torch.float16: f16,
    torch.bfloat16: bf16,
    torch.float64: f64,
    torch.int64: i64,
    torch.int32: i32,
    torch.int16: i16,
    torch.int8: i8,
    torch.uint8: u8,
    torch.bool: i1,
}
_IR_TO_TORCH = {v: k for k, v in _TORCH_TO_IR.items()}


class ConversionError(Exception):
    """A supported op was called in a way the frontend cannot translate; the message says why."""


def ir_element(dtype: torch.dtype) -> ScalarType:
    """The IR element type of a torch dtype; ConversionError for dtypes Tensorium lacks."""
    if dtype not in _TORCH_TO_IR:
        why = " (complex numbers are not supported)" if dtype.is_complex else ""
        raise ConversionError(f"dtype {dtype} has no Tensorium element type{why}")
    return _TORCH_TO_IR[dtype]


def torch_dtype(element: ScalarType) -> torch.dtype:
    """The torch dtype of an IR element type."""
    return _IR_TO_TORCH[element]


def converts(*names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of each ATen op in ``names``."""

    def register(fn: Converter) -> Converter:
        for name in names:
            CONVERTERS[name] = fn
        return fn

    return register


def lookup_converter(target: Any) -> Converter | None:
    """The converter of an FX call target (an ATen overload or a Python operator), or None."""
    load_all_converters()
    name = target_name(target)
    if name in CONVERTERS:
        return CONVERTERS[name]
    packet = name.rsplit(".", 1)[0] if name.startswith("aten.") and name.count(".") == 2 else None
    return CONVERTERS.get(packet) if packet else None


def load_all_converters() -> dict[str, Converter]:
    """:data:`CONVERTERS` with the converters of the modules that extend it (pytorch_math_ops,
    pytorch_shape_ops, pytorch_pool_ops, pytorch_random_ops, pytorch_dynamic_ops, pytorch_index_ops,
    pytorch_special_ops, pytorch_histogram_ops, pytorch_polynomial_ops), imported on first use since they
    import this module."""
    from . import (  # noqa: F401
        pytorch_dynamic_ops,
        pytorch_histogram_ops,
        pytorch_index_ops,
        pytorch_math_ops,
        pytorch_polynomial_ops,
        pytorch_pool_ops,
        pytorch_random_ops,
        pytorch_shape_ops,
        pytorch_special_ops,
    )

    return CONVERTERS


def target_name(target: Any) -> str:
    """A stable name for an FX call target: ``aten.add.Tensor`` or ``operator.getitem``."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    return f"{module.lstrip('_')}.{name}" if module else name


class Context:
    """What a converter sees: the current FX node and helpers to read its metadata and make values.

    ``sym_names`` maps torch's shape symbols (``s0``) to the names the user gave them.
    """

    def __init__(self, sym_names: dict[str, str] | None = None, main: Operation | None = None):
        self.sym_names = dict(sym_names or {})
        self.node: torch.fx.Node | None = None
        self.random_ops = 0
        self.main = main
        """The @main being built (random ops add the generator key argument to it)."""
        self.generator: Value | None = None
        """@main's generator key argument, once a random op asked for it."""
        self.dim_sources: dict[str, tuple[Value, int]] = {}
        """Named symbolic dim -> a (value, axis) that has it (the graph's inputs), for broadcasts to it."""

    def next_seed(self) -> int:
        """The seed of the next ``graph.random`` op: 0, 1, 2, ... in graph order, so each random op of a
        model draws its own numbers and a model imported again draws the same ones."""
        self.random_ops += 1
        return self.random_ops - 1

    def generator_key(self) -> Value:
        """The run-time key of every ``graph.random`` op (tensor<2xi64>: a seed and a call counter): the
        last argument of @main, :data:`GENERATOR_KEY`, added on first use. The importer lists it as a bound
        parameter the runtime advances after each call (:func:`bind_generator`), so calls draw fresh numbers."""
        if self.generator is None:
            if self.main is None:
                raise ConversionError("random ops need the @main being built (Context(main=...))")
            block = func_body(self.main)
            taken = {a.name_hint for a in block.args}
            name = GENERATOR_KEY
            while name in taken:
                name = f"_{name}"
            self.generator = block.add_arg(TensorType((2,), i64), name)
            ftype = func_type(self.main)
            self.main.attributes["function_type"] = FunctionType((*ftype.inputs, self.generator.type), ftype.results)
        return self.generator

    # metadata ----------------------------------------------------------------------------------
    def meta(self, index: int | None = None) -> Any:
        """The current node's example value (a FakeTensor, or a tuple of them)."""
        assert self.node is not None
        val: Any = self.node.meta.get("val")
        if val is None:
            val = self.node.meta.get("example_value")
        return val if index is None else val[index]

    def out_element(self, index: int | None = None) -> ScalarType:
        """The IR element type of the current node's (``index``-th) result."""
        return ir_element(self.meta(index).dtype)

    def out_dims(self, index: int | None = None) -> tuple[Dim, ...]:
        """The dims of the current node's (``index``-th) result, symbolic ones as Sym."""
        return tuple(self.dim(s) for s in self.meta(index).shape)

    def dim(self, size: Any) -> Dim:
        """An int for a static size, a named Sym for a plain shape symbol or a product of them and an integer
        (``8*s0*s1``, what flattening gives), else an anonymous one."""
        if isinstance(size, int):
            return size
        expr = size.node.expr
        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            name = str(expr)
            return Sym(self.sym_names.get(name, name))
        if expr.is_Mul:
            coefficient, names = 1, []
            for factor in expr.as_ordered_factors():
                base, power = factor.as_base_exp()
                if factor.is_Integer and int(factor) > 0:
                    coefficient *= int(factor)
                elif base.is_Symbol and power.is_Integer and int(power) > 0:
                    names += [self.sym_names.get(str(base), str(base))] * int(power)
                else:
                    return DYN
            return Sym.product(coefficient, names)
        return DYN

    # values ------------------------------------------------------------------------------------
    def const(self, value: Any, element: ScalarType) -> Value:
        """A ``graph.constant`` holding ``value`` (an array or a Python scalar) as ``element``."""
        array = np.asarray(value, dtype=storage_dtype(element))
        return graph.constant(value=DenseAttr.of(array, element))

    def tensor(self, x: Any, element: ScalarType) -> Value:
        """``x`` as a tensor of ``element``: a value is cast when needed, a Python scalar becomes a 0-d constant."""
        if isinstance(x, Value):
            return cast(x, element)
        if isinstance(x, (bool, int, float)):
            return self.const(x, element)
        raise ConversionError(f"cannot use {type(x).__name__} {x!r} as a tensor operand")

    def promote(self, a: Any, b: Any) -> ScalarType:
        """The element type torch's type promotion gives for ``a`` and ``b`` (values or Python scalars)."""
        first = _probe(a)
        if not isinstance(first, torch.Tensor):
            first = torch.tensor(first)
        return ir_element(torch.result_type(first, _probe(b)))


def _probe(x: Any) -> Any:
    """A stand-in for ``x`` that torch.result_type ranks like ``x`` (a 0-d tensor ranks below a 1-d one)."""
    if isinstance(x, Value):
        t = ttype(x)
        return torch.empty((1,) * min(t.rank, 1), dtype=torch_dtype(t.element))
    if isinstance(x, (bool, int, float)):
        return x
    raise ConversionError(f"cannot use {type(x).__name__} {x!r} as a tensor operand")


def ttype(v: Value) -> TensorType:
    """The tensor type of ``v``."""
    t = v.type
    assert isinstance(t, TensorType)
    return t


def cast(v: Value, element: ScalarType) -> Value:
    """``v`` converted to ``element`` (itself when it already is)."""
    return v if ttype(v).element == element else graph.cast(v, dtype=element)


def static_dim(t: TensorType, axis: int, what: str) -> int:
    """The static size of ``axis`` of ``t``; ConversionError when it is symbolic."""
    d = t.shape[axis]
    if not isinstance(d, int):
        raise ConversionError(f"{what} needs a static size for axis {axis} of {t}")
    return d


def reshape_to(x: Value, target: Sequence[Dim], sources: Mapping[str, tuple[Value, int]] | None = None) -> Value:
    """``x`` reshaped to ``target``: symbolic dims copy the same input dim or become the single -1; where more
    than one is left, named dims of ``sources`` (:attr:`Context.dim_sources`) give their sizes
    (``graph.reshape_dims``: ``[batch*seq]x8`` to ``[batch]x[seq]x8``)."""
    t = ttype(x)
    if tuple(t.shape) == tuple(target):
        return x
    allowzero = 0 in target
    spec: list[int] = []
    for i, d in enumerate(target):
        if isinstance(d, int):
            spec.append(d)
        elif not allowzero and i < t.rank and d.name is not None and t.shape[i] == d:
            spec.append(0)
        else:
            spec.append(-1)
    if spec.count(-1) <= 1:
        return graph.reshape(x, shape=spec, allowzero=allowzero)
    sources = sources or {}
    # each free dim comes from an input that has its name; a copied dim (0) from x itself, since 0 is a size here
    taken: dict[int, tuple[Value, int]] = {}
    for i, (s, d) in enumerate(zip(spec, target)):
        if s == 0:
            taken[i] = (x, i)
        elif s == -1 and isinstance(d, Sym) and d.name is not None and d.name in sources:
            taken[i] = sources[d.name]
    if spec.count(-1) - sum(1 for i in taken if spec[i] == -1) > 1:
        shown = "x".join(map(str, target))
        raise ConversionError(f"cannot express a reshape of {t} to {shown}: its dims are not named by an input")
    return graph.reshape_dims(
        x,
        *[v for v, _ in taken.values()],
        shape=[-1 if i in taken else s for i, s in enumerate(spec)],
        positions=list(taken),
        axes=[a for _, a in taken.values()],
    )


def broadcast_to(x: Value, target: Sequence[Dim], sources: Mapping[str, tuple[Value, int]] | None = None) -> Value:
    """``x`` broadcast to ``target``; a symbolic target dim must be the input's own dim there, or a named dim of
    ``sources`` (:attr:`Context.dim_sources`) that grows from size 1."""
    t = ttype(x)
    if tuple(t.shape) == tuple(target):
        return x
    offset = len(target) - t.rank
    spec: list[int] = []
    for i, d in enumerate(target):
        own = t.shape[i - offset] if i >= offset else None
        if isinstance(d, int):
            spec.append(d)
        elif own is not None and own == d:
            spec.append(-1)
        else:
            grown = broadcast_symbolic(x, target, sources or {})
            if grown is None:
                raise ConversionError(f"cannot broadcast {t} to a symbolic shape {'x'.join(map(str, target))}")
            return grown
    return graph.broadcast_to(x, shape=spec)


def _axes(dims: Any, rank: int) -> list[int]:
    """ATen ``dim`` arguments (None, an int or a list; empty or None means all) as a list of axes."""
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        return [dims]
    return list(dims)


# elementwise ---------------------------------------------------------------------------------
def _binary(op: Any, compare: bool = False) -> Converter:
    def convert(cx: Context, a: Any, b: Any, *, alpha: Any = 1) -> Value:
        element = cx.promote(a, b) if compare else cx.out_element()
        if alpha != 1:
            b = _times(cx, b, alpha)
        # torch's bool arithmetic: + is or, * is and
        chosen = _BOOL_ARITHMETIC.get(op, op) if element == i1 else op
        return chosen(cx.tensor(a, element), cx.tensor(b, element))

    return convert


_BOOL_ARITHMETIC = {graph.add: graph.or_, graph.mul: graph.and_}


for _names, _op, _compare in (
    (("aten.add.Tensor", "aten.add.Scalar"), graph.add, False),
    (("aten.sub.Tensor", "aten.sub.Scalar"), graph.sub, False),
    (("aten.mul.Tensor", "aten.mul.Scalar"), graph.mul, False),
    (("aten.div.Tensor", "aten.div.Scalar"), graph.div, False),
    (("aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar", "aten.pow.Scalar"), graph.pow, False),
    (("aten.maximum.default",), graph.max, False),
    (("aten.minimum.default",), graph.min, False),
    (("aten.remainder.Tensor", "aten.remainder.Scalar"), graph.mod, False),
    (("aten.eq.Tensor", "aten.eq.Scalar"), graph.eq, True),
    (("aten.ne.Tensor", "aten.ne.Scalar"), graph.ne, True),
    (("aten.lt.Tensor", "aten.lt.Scalar"), graph.lt, True),
    (("aten.le.Tensor", "aten.le.Scalar"), graph.le, True),
    (("aten.gt.Tensor", "aten.gt.Scalar"), graph.gt, True),
    (("aten.ge.Tensor", "aten.ge.Scalar"), graph.ge, True),
    (("aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar", "aten.__and__.Tensor"), graph.and_, False),
    (("aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar", "aten.__or__.Tensor"), graph.or_, False),
    (("aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar", "aten.__xor__.Tensor"), graph.xor, False),
):
    converts(*_names)(_binary(_op, _compare))


@converts("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(cx: Context, a: Any, b: Any, alpha: Any = 1) -> Value:
    return _binary(graph.sub)(cx, b, a, alpha=1) if alpha == 1 else _binary(graph.sub)(cx, b, _times(cx, a, alpha))


def _times(cx: Context, a: Any, factor: Any) -> Any:
    if not isinstance(a, Value):
        return a * factor
    return graph.mul(a, cx.const(factor, ttype(a).element))


@converts("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(cx: Context, a: Any, b: Any, *, rounding_mode: str | None = None) -> Value:
    element = cx.out_element()
    lhs, rhs = cx.tensor(a, element), cx.tensor(b, element)
    if rounding_mode == "floor" and not isinstance(element, FloatType):
        # (a - a mod b) is a multiple of b, so the truncating division is exact.
        return graph.div(graph.sub(lhs, graph.mod(lhs, rhs)), rhs)
    q = graph.div(lhs, rhs)
    if rounding_mode is None or not isinstance(element, FloatType):
        return q
    return graph.floor(q) if rounding_mode == "floor" else _trunc(q)


@converts("aten.floor_divide.default", "aten.floor_divide.Scalar")
def _floor_divide(cx: Context, a: Any, b: Any) -> Value:
    return _div_mode(cx, a, b, rounding_mode="floor")


def _trunc(x: Value) -> Value:
    zero = graph.constant(value=DenseAttr.of(np.zeros((), storage_dtype(ttype(x).element)), ttype(x).element))
    return graph.where(graph.lt(x, zero), graph.ceil(x), graph.floor(x))


@converts("aten.trunc.default")
def _trunc_op(cx: Context, x: Value) -> Value:
    return _trunc(x)


def _logical(op: Any) -> Converter:
    def convert(cx: Context, a: Any, b: Any) -> Value:
        return op(cx.tensor(a, i1), cx.tensor(b, i1))

    return convert


converts("aten.logical_and.default")(_logical(graph.and_))
converts("aten.logical_or.default")(_logical(graph.or_))
converts("aten.logical_xor.default")(_logical(graph.xor))


@converts("aten.logical_not.default")
def _logical_not(cx: Context, x: Value) -> Value:
    return graph.not_(cast(x, i1))


@converts("aten.bitwise_not.default")
def _bitwise_not(cx: Context, x: Value) -> Value:
    return graph.not_(x)


def _unary(op: Any) -> Converter:
    def convert(cx: Context, x: Value) -> Value:
        return op(cx.tensor(x, cx.out_element()))

    return convert


for _name, _op in (
    ("neg", graph.neg),
    ("abs", graph.abs),
    ("exp", graph.exp),
    ("log", graph.log),
    ("sqrt", graph.sqrt),
    ("rsqrt", graph.rsqrt),
    ("sin", graph.sin),
    ("cos", graph.cos),
    ("asin", graph.asin),
    ("acos", graph.acos),
    ("atan", graph.atan),
    ("tanh", graph.tanh),
    ("sigmoid", graph.sigmoid),
    ("erf", graph.erf),
    ("floor", graph.floor),
    ("ceil", graph.ceil),
    ("round", graph.round),
    ("sign", graph.sign),
    ("reciprocal", graph.reciprocal),
    ("relu", graph.relu),
    ("silu", graph.silu),
):
    converts(f"aten.{_name}.default")(_unary(_op))


@converts("aten.gelu.default")
def _gelu(cx: Context, x: Value, *, approximate: str = "none") -> Value:
    return graph.gelu(x, approximate=approximate)


@converts("aten.log1p.default")
def _log1p(cx: Context, x: Value) -> Value:
    element = cx.out_element()
    return graph.log(graph.add(cx.tensor(x, element), cx.const(1, element)))


@converts("aten.expm1.default")
def _expm1(cx: Context, x: Value) -> Value:
    element = cx.out_element()
    return graph.sub(graph.exp(cx.tensor(x, element)), cx.const(1, element))


@converts("aten.log2.default")
def _log2(cx: Context, x: Value) -> Value:
    element = cx.out_element()
    return graph.mul(graph.log(cx.tensor(x, element)), cx.const(1 / math.log(2), element))


@converts("aten.isnan.default")
def _isnan(cx: Context, x: Value) -> Value:
    return graph.ne(x, x)


@converts("aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default", "aten.hardtanh.default")
def _clamp(cx: Context, x: Value, min: Any = None, max: Any = None) -> Value:
    assert cx.node is not None
    if str(cx.node.target) == "aten.clamp_max.default":
        min, max = None, min
    element = cx.out_element()
    return graph.clamp(cx.tensor(x, element), min=min, max=max)


@converts("aten.clamp.Tensor")
def _clamp_tensor(cx: Context, x: Value, min: Any = None, max: Any = None) -> Value:
    element = cx.out_element()
    y = cx.tensor(x, element)
    if min is not None:
        y = graph.max(y, cx.tensor(min, element))
    if max is not None:
        y = graph.min(y, cx.tensor(max, element))
    return y


@converts("aten.relu6.default")
def _relu6(cx: Context, x: Value) -> Value:
    return graph.clamp(x, min=0.0, max=6.0)


@converts("aten.hardsigmoid.default")
def _hardsigmoid(cx: Context, x: Value) -> Value:
    element = ttype(x).element
    return graph.div(graph.clamp(graph.add(x, cx.const(3, element)), min=0.0, max=6.0), cx.const(6, element))


@converts("aten.hardswish.default")
def _hardswish(cx: Context, x: Value) -> Value:
    return graph.mul(x, _hardsigmoid(cx, x))


@converts("aten.leaky_relu.default")
def _leaky_relu(cx: Context, x: Value, negative_slope: float = 0.01) -> Value:
    element = ttype(x).element
    return graph.where(graph.gt(x, cx.const(0, element)), x, graph.mul(x, cx.const(negative_slope, element)))


@converts("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(cx: Context, cond: Value, a: Any, b: Any) -> Value:
    element = cx.out_element()
    return graph.where(cast(cond, i1), cx.tensor(a, element), cx.tensor(b, element))


@converts("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(cx: Context, x: Value, mask: Value, value: Any) -> Value:
    element = ttype(x).element
    return graph.where(cast(mask, i1), cx.tensor(value, element), x)


# casts and no-ops --------------------------------------------------------------------------------
@converts(
    "aten.clone.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.detach_.default",
    "aten.lift_fresh_copy.default",
    "aten.contiguous.default",
    "aten.dropout.default",
    "aten.feature_dropout.default",
    "aten._to_copy.default",
    "aten.to.dtype",
    "aten.to.dtype_layout",
    "aten.to.device",
    "aten.type_as.default",
    "aten._to_dim_order_copy.default",
)
def _identity_or_cast(cx: Context, x: Value, *args: Any, **kwargs: Any) -> Value:
    assert cx.node is not None
    if "dropout" in str(cx.node.target) and (kwargs.get("train") or (len(args) > 1 and args[1])):
        raise ConversionError("dropout in training mode; call model.eval() first")
    return cast(x, cx.out_element())


@converts("aten.native_dropout.default")
def _native_dropout(cx: Context, x: Value, p: float, train: bool | None) -> tuple[Value, Value]:
    if train:
        raise ConversionError("dropout in training mode; call model.eval() first")
    return x, cx.tensor(True, i1)


@converts("aten.copy.default")
def _copy(cx: Context, dst: Value, src: Value, non_blocking: bool = False) -> Value:
    return broadcast_to(cast(src, ttype(dst).element), ttype(dst).shape)


# creation ------------------------------------------------------------------------------------
def _filled(cx: Context, value: Any, like: Value | None = None) -> Value:
    """A tensor of the current node's shape and dtype holding ``value`` everywhere."""
    element = cx.out_element()
    dims = cx.out_dims()
    if all(isinstance(d, int) for d in dims):
        return cx.const(np.full(dims, value, dtype=storage_dtype(element)), element)
    if like is None:
        return broadcast_to(cx.const(value, element), dims, cx.dim_sources)
    # A condition shaped like `like` broadcasts two 0-d constants to its shape.
    fill = cx.const(value, element)
    return graph.where(graph.eq(like, like), fill, fill)


@converts("aten.full.default")
def _full(cx: Context, size: Any, fill_value: Any, **kwargs: Any) -> Value:
    return _filled(cx, fill_value)


@converts("aten.zeros.default", "aten.empty.memory_format", "aten.new_zeros.default", "aten.new_empty.default")
def _zeros(cx: Context, *args: Any, **kwargs: Any) -> Value:
    return _filled(cx, 0)


@converts("aten.ones.default", "aten.new_ones.default")
def _ones(cx: Context, *args: Any, **kwargs: Any) -> Value:
    return _filled(cx, 1)


@converts("aten.new_full.default")
def _new_full(cx: Context, x: Value, size: Any, fill_value: Any, **kwargs: Any) -> Value:
    return _filled(cx, fill_value)


@converts("aten.full_like.default")
def _full_like(cx: Context, x: Value, fill_value: Any, **kwargs: Any) -> Value:
    return _filled(cx, fill_value, x)


@converts("aten.zeros_like.default", "aten.empty_like.default")
def _zeros_like(cx: Context, x: Value, **kwargs: Any) -> Value:
    return _filled(cx, 0, x)


@converts("aten.ones_like.default")
def _ones_like(cx: Context, x: Value, **kwargs: Any) -> Value:
    return _filled(cx, 1, x)


@converts("aten.fill.Scalar")
def _fill(cx: Context, x: Value, value: Any) -> Value:
    return _filled(cx, value, x)


@converts("aten._local_scalar_dense.default")
def _item(cx: Context, x: Value) -> Value:
    """``x.item()``: the one element as a 0-d tensor (a model output comes back as a Python number; a number
    used as a size or index is data-dependent and refused where it is used)."""
    t = ttype(x)
    if t.num_elements != 1:
        raise ConversionError(f"item() of a tensor of shape {list(t.shape)}: needs exactly one element")
    return graph.reshape(x, shape=[])


@converts("aten.scalar_tensor.default")
def _scalar_tensor(cx: Context, value: Any, **kwargs: Any) -> Value:
    return cx.const(value, cx.out_element())


@converts("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(cx: Context, *args: Any, **kwargs: Any) -> Value:
    numbers = [a for a in args if not isinstance(a, torch.dtype)]
    if not all(isinstance(a, (int, float)) for a in numbers):
        return _arange_to_symbol(cx, numbers)
    start, end, step = (
        (0, numbers[0], 1) if len(numbers) == 1 else (*numbers[:2], numbers[2] if len(numbers) > 2 else 1)
    )
    return graph.arange(start=float(start), limit=float(end), step=float(step), dtype=cx.out_element())


def _arange_to_symbol(cx: Context, numbers: list[Any]) -> Value:
    """arange whose end is symbolic: static start and step, a length that is a named dim of the inputs."""
    start, step = (0, 1) if len(numbers) == 1 else (numbers[0], numbers[2] if len(numbers) > 2 else 1)
    (length,) = cx.out_dims()
    if isinstance(start, (int, float)) and isinstance(step, (int, float)) and isinstance(length, Sym):
        made = arange_symbolic(float(start), float(step), length, cx.out_element(), cx.dim_sources)
        if made is not None:
            return made
    raise ConversionError("arange with a symbolic bound is supported only from a static start to a named input dim")


@converts("aten.triu.default")
def _triu(cx: Context, x: Value, diagonal: int = 0) -> Value:
    return graph.triu(x, k=diagonal)


@converts("aten.tril.default")
def _tril(cx: Context, x: Value, diagonal: int = 0) -> Value:
    return graph.tril(x, k=diagonal)


# shapes ----------------------------------------------------------------------------------------
@converts(
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.flatten.using_ints",
    "aten.view_copy.default",
    "aten.unflatten.int",
)
def _view(cx: Context, x: Value, *args: Any) -> Value:
    return reshape_to(x, cx.out_dims(), cx.dim_sources)


@converts("aten.permute.default", "aten.permute_copy.default")
def _permute(cx: Context, x: Value, dims: Sequence[int]) -> Value:
    rank = ttype(x).rank
    return graph.transpose(x, perm=[d % rank for d in dims]) if rank else x


@converts("aten.transpose.int")
def _transpose(cx: Context, x: Value, d0: int, d1: int) -> Value:
    rank = ttype(x).rank
    if rank < 2:
        return x
    perm = list(range(rank))
    perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
    return graph.transpose(x, perm=perm)


@converts("aten.t.default")
def _t(cx: Context, x: Value) -> Value:
    return _transpose(cx, x, 0, 1)


@converts("aten.expand.default", "aten.expand_copy.default")
def _expand(cx: Context, x: Value, size: Any, *, implicit: bool = False) -> Value:
    return broadcast_to(x, cx.out_dims(), cx.dim_sources)


@converts("aten.unsqueeze.default")
def _unsqueeze(cx: Context, x: Value, dim: int) -> Value:
    return graph.unsqueeze(x, axes=[dim])


@converts("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims")
def _squeeze(cx: Context, x: Value, dims: Any = None) -> Value:
    t = ttype(x)
    if isinstance(dims, (list, tuple)) and not dims:  # squeeze.dims with no dims squeezes nothing
        return x
    axes = [a % t.rank for a in _axes(dims, t.rank)] if t.rank else []
    # torch leaves dims that are not of size 1 in place.
    axes = [a for a in axes if t.shape[a] == 1]
    return graph.squeeze(x, axes=axes) if axes else x


@converts("aten.slice.Tensor", "aten.slice_copy.Tensor")
def _slice(cx: Context, x: Value, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Value:
    if not all(isinstance(v, int) or v is None for v in (start, end)):
        length = cx.out_dims()[dim]
        sliced = None
        if isinstance(start or 0, int) and isinstance(length, Sym):
            sliced = slice_to_symbol(x, dim % ttype(x).rank, start or 0, step, length, cx.dim_sources)
        if sliced is None:
            raise ConversionError("slice with symbolic bounds is not supported")
        return sliced
    start = 0 if start is None else start
    end = INT64_MAX if end is None or end >= INT64_MAX else end
    if start == 0 and end == INT64_MAX and step == 1:
        return x
    axis = dim % ttype(x).rank
    length = cx.out_dims()[dim]
    if not isinstance(ttype(x).shape[axis], int) and isinstance(length, int) and length > 0 and start >= 0 and step > 0:
        # A static part of a symbolic dim (``x[:, :1]`` of a run-time sequence): torch's value ranges say how
        # long it is. Loop kernels slice symbolic dims only whole; a gather picks those positions at any size.
        positions = cx.const(np.arange(start, start + step * length, step), i64)
        return graph.gather(x, positions, axis=axis)
    return graph.slice(x, starts=[start], ends=[end], axes=[dim], steps=[step])


@converts("aten.select.int", "aten.select_copy.int")
def _select(cx: Context, x: Value, dim: int, index: int) -> Value:
    if isinstance(ttype(x).shape[dim], Sym) and isinstance(index, int) and index >= 0:
        # loop kernels slice symbolic dims only whole; a gather picks one position of any size
        return graph.gather(x, cx.const(index, i64), axis=dim % ttype(x).rank)
    end = INT64_MAX if index == -1 else index + 1
    return graph.squeeze(graph.slice(x, starts=[index], ends=[end], axes=[dim]), axes=[dim])


@converts("aten.cat.default", "aten.concat.default")
def _cat(cx: Context, tensors: Sequence[Value], dim: int = 0) -> Value:
    element = cx.out_element()
    # Legacy torch skips 1-D empty tensors in cat whatever the other ranks.
    rank = max(ttype(t).rank for t in tensors)
    parts = [cast(t, element) for t in tensors if not (ttype(t).rank == 1 < rank and ttype(t).shape[0] == 0)]
    return graph.concat(*parts, axis=dim) if len(parts) > 1 else parts[0]


@converts("aten.stack.default")
def _stack(cx: Context, tensors: Sequence[Value], dim: int = 0) -> Value:
    element = cx.out_element()
    return graph.concat(*[graph.unsqueeze(cast(t, element), axes=[dim]) for t in tensors], axis=dim)


@converts("aten.split_with_sizes.default", "aten.split_with_sizes_copy.default")
def _split_with_sizes(cx: Context, x: Value, sizes: Sequence[int], dim: int = 0) -> tuple[Value, ...]:
    if len(sizes) == 1:
        return (x,)
    out = graph.split(x, axis=dim, sizes=list(sizes))
    return out if isinstance(out, tuple) else (out,)


@converts("aten.split.Tensor", "aten.split_copy.Tensor")
def _split(cx: Context, x: Value, split_size: int, dim: int = 0) -> tuple[Value, ...]:
    total = static_dim(ttype(x), dim % ttype(x).rank, "split")
    sizes = [min(split_size, total - s) for s in range(0, total, split_size)] or [0]
    return _split_with_sizes(cx, x, sizes, dim)


@converts("aten.chunk.default")
def _chunk(cx: Context, x: Value, chunks: int, dim: int = 0) -> tuple[Value, ...]:
    total = static_dim(ttype(x), dim % ttype(x).rank, "chunk")
    return _split(cx, x, max(-(-total // chunks), 1), dim)


@converts("aten.unbind.int", "aten.unbind_copy.int")
def _unbind(cx: Context, x: Value, dim: int = 0) -> tuple[Value, ...]:
    parts = _split(cx, x, 1, dim)
    return tuple(graph.squeeze(p, axes=[dim]) for p in parts)


@converts("aten.repeat.default")
def _repeat(cx: Context, x: Value, repeats: Sequence[Dim]) -> Value:
    """torch's repeat: a tile by the static counts; a run-time count (``alibi.repeat(batch, 1, 1)``) inserts an
    axis broadcast to that named dim and merges it into the repeated one (``[batch*heads]``: a dim expression)."""
    rank = ttype(x).rank
    if len(repeats) > rank:
        x = graph.unsqueeze(x, axes=list(range(len(repeats) - rank)))
    counts = [r if isinstance(r, int) else 1 for r in repeats]
    if all(isinstance(r, int) for r in repeats) or any(c != 1 for c in counts):
        x = graph.tile(x, repeats=counts)
    for axis, r in enumerate(repeats):
        if isinstance(r, int):
            continue
        if r.name is None or r.name not in cx.dim_sources:
            raise ConversionError(f"cannot repeat by {r}: only by a named dim of an input")
        shape = ttype(x).shape
        static, names, anonymous = dim_product([r, shape[axis]])
        merged = DYN if anonymous else Sym.product(static, names.elements())
        grown = broadcast_to(graph.unsqueeze(x, axes=[axis]), [*shape[:axis], r, *shape[axis:]], cx.dim_sources)
        x = reshape_to(grown, [*shape[:axis], merged, *shape[axis + 1 :]], cx.dim_sources)
    return x


@converts("aten.constant_pad_nd.default")
def _constant_pad(cx: Context, x: Value, pad: Sequence[int], value: float = 0.0) -> Value:
    rank = ttype(x).rank
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return graph.pad(x, pads=begins + ends, value=float(value))


# indexing ------------------------------------------------------------------------------------
@converts("aten.index.Tensor", "aten._unsafe_index.Tensor")
def _index(cx: Context, x: Value, indices: Sequence[Value | None]) -> Value:
    present = [i for i, idx in enumerate(indices) if idx is not None]
    for i in present:
        idx = indices[i]
        assert idx is not None
        if ttype(idx).element == i1:
            raise ConversionError("boolean mask indexing has a data-dependent shape")
    if len(present) == 1:
        idx = indices[present[0]]
        assert idx is not None
        return graph.gather(x, idx, axis=present[0])
    if present != list(range(present[0], present[0] + len(present))):
        raise ConversionError("advanced indexing with non-adjacent index tensors is not supported")
    return _index_adjacent(cx, x, [v for v in indices if v is not None], present[0])


def _index_adjacent(cx: Context, x: Value, idxs: list[Value], first: int) -> Value:
    """x[..., i0, i1, ...] with index tensors at adjacent axes from ``first``: one gather_nd."""
    from ..ir.shapes import broadcast_shapes

    t = ttype(x)
    k = len(idxs)
    shape = broadcast_shapes(*[ttype(i).shape for i in idxs])
    stacked = graph.concat(
        *[graph.unsqueeze(broadcast_to(cast(i, i64), shape, cx.dim_sources), axes=[-1]) for i in idxs],
        axis=len(shape),
    )
    moved = list(range(first, first + k)) + [a for a in range(t.rank) if not first <= a < first + k]
    data = graph.transpose(x, perm=moved) if moved != list(range(t.rank)) else x
    out = graph.gather_nd(data, stacked)
    nb = len(shape)
    if first == 0:
        return out
    perm = list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, ttype(out).rank))
    return graph.transpose(out, perm=perm)


@converts("aten.index_select.default")
def _index_select(cx: Context, x: Value, dim: int, index: Value) -> Value:
    if ttype(x).rank == 0:  # the only valid index of a 0-d tensor is 0
        return x
    return graph.gather(x, index, axis=dim)


@converts("aten.gather.default")
def _gather(cx: Context, x: Value, dim: int, index: Value, *, sparse_grad: bool = False) -> Value:
    return graph.gather_elements(x, index, axis=dim)


@converts("aten.embedding.default")
def _embedding(cx: Context, weight: Value, indices: Value, *args: Any) -> Value:
    return graph.embedding(weight, indices)


# reductions ----------------------------------------------------------------------------------
def _reduction(op: Any) -> Converter:
    def convert(cx: Context, x: Value, dims: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Value:
        element = cx.out_element()
        rank = ttype(x).rank
        if rank == 0:
            return cast(x, element)
        return op(cast(x, element), axes=_axes(dims, rank), keepdims=keepdim)

    return convert


converts("aten.sum.dim_IntList", "aten.sum.default")(_reduction(graph.reduce_sum))
converts("aten.mean.dim", "aten.mean.default")(_reduction(graph.reduce_mean))
converts("aten.amax.default")(_reduction(graph.reduce_max))
converts("aten.amin.default")(_reduction(graph.reduce_min))
converts("aten.prod.dim_int", "aten.prod.default")(_reduction(graph.reduce_prod))


@converts("aten.max.dim", "aten.min.dim")
def _max_dim(cx: Context, x: Value, dim: int, keepdim: bool = False) -> tuple[Value, Value]:
    assert cx.node is not None
    is_max = str(cx.node.target) == "aten.max.dim"
    values = (graph.reduce_max if is_max else graph.reduce_min)(x, axes=[dim], keepdims=keepdim)
    indices = (graph.argmax if is_max else graph.argmin)(x, axis=dim, keepdims=keepdim)
    return values, indices


@converts("aten.argmax.default", "aten.argmin.default")
def _argmax(cx: Context, x: Value, dim: int | None = None, keepdim: bool = False) -> Value:
    assert cx.node is not None
    op = graph.argmax if str(cx.node.target) == "aten.argmax.default" else graph.argmin
    if ttype(x).rank == 0:
        return cx.const(0, i64)
    if dim is None:
        return op(graph.reshape(x, shape=[-1]), axis=0)
    return op(x, axis=dim, keepdims=keepdim)


@converts("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.dims", "aten.all.default")
def _any_all(cx: Context, x: Value, dims: Any = None, keepdim: bool = False) -> Value:
    assert cx.node is not None
    rank = ttype(x).rank
    flags = cast(cast(x, i1), i8)
    if rank == 0:
        return cast(flags, i1)
    op = graph.reduce_max if str(cx.node.target).startswith("aten.any") else graph.reduce_min
    return cast(op(flags, axes=_axes(dims, rank), keepdims=keepdim), i1)


@converts("aten.var.correction", "aten.std.correction")
def _var(cx: Context, x: Value, dims: Any = None, *, correction: Any = None, keepdim: bool = False) -> Value:
    assert cx.node is not None
    t = ttype(x)
    axes = _axes(dims, t.rank)
    count = math.prod(static_dim(t, a % t.rank, "var") for a in axes)
    element = t.element
    centered = graph.sub(x, graph.reduce_mean(x, axes=axes, keepdims=True))
    total = graph.reduce_sum(graph.mul(centered, centered), axes=axes, keepdims=keepdim)
    ddof = 1 if correction is None else correction
    var = graph.div(total, cx.const(max(count - ddof, 0), element))
    return graph.sqrt(var) if str(cx.node.target).startswith("aten.std") else var


@converts("aten.cumsum.default")
def _cumsum(cx: Context, x: Value, dim: int, *, dtype: Any = None) -> Value:
    return graph.cumsum(cast(x, cx.out_element()), axis=dim)


# linear algebra ------------------------------------------------------------------------------
@converts("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(cx: Context, a: Value, b: Value) -> Value:
    if ttype(a).rank == 1 or ttype(b).rank == 1:
        raise ConversionError("matmul with a vector operand is not supported")
    return graph.matmul(a, b)


@converts("aten.mv.default")
def _mv(cx: Context, a: Value, x: Value) -> Value:
    """Matrix times vector as a matmul with a one-column right operand (kept whole: a mul + sum would
    materialize the elementwise products)."""
    column = graph.reshape(x, shape=[-1, 1])
    return graph.reshape(graph.matmul(a, column), shape=[-1])


@converts("aten.addmm.default", "aten.baddbmm.default")
def _addmm(cx: Context, bias: Value, a: Value, b: Value, *, beta: Any = 1, alpha: Any = 1) -> Value:
    element = cx.out_element()
    product = graph.matmul(a, b)
    if alpha != 1:
        product = graph.mul(product, cx.const(alpha, element))
    if beta == 0:
        return product
    if beta != 1:
        bias = graph.mul(bias, cx.const(beta, element))
    return graph.add(product, bias)


@converts("aten.linear.default")
def _linear(cx: Context, x: Value, weight: Value, bias: Value | None = None) -> Value:
    y = graph.matmul(x, weight, transpose_b=True)
    return graph.add(y, bias) if bias is not None else y


@converts("aten.einsum.default")
def _einsum(cx: Context, equation: str, tensors: Sequence[Value], path: Any = None) -> Value:
    return graph.einsum(*tensors, equation=equation.replace(" ", ""))


# neural network ------------------------------------------------------------------------------
@converts("aten.convolution.default", "aten.conv2d.default", "aten.conv1d.default")
def _convolution(
    cx: Context,
    x: Value,
    weight: Value,
    bias: Value | None,
    stride: Sequence[int] = (1, 1),
    padding: Any = (0, 0),
    dilation: Sequence[int] = (1, 1),
    transposed: Any = False,
    output_padding: Sequence[int] = (0, 0),
    groups: int = 1,
) -> Value:
    assert cx.node is not None
    if not isinstance(transposed, bool):  # conv1d/conv2d take groups in the 'transposed' slot
        transposed, groups = False, transposed
    if isinstance(padding, str):
        raise ConversionError(f"string padding '{padding}' is not supported")
    rank = ttype(x).rank
    if rank == 3:
        # A 1-D convolution is a 2-D one over a height of 1.
        y = _convolution(
            cx,
            graph.unsqueeze(x, axes=[2]),
            graph.unsqueeze(weight, axes=[2]),
            bias,
            [1, *stride],
            [0, *padding],
            [1, *dilation],
            transposed,
            [0, *output_padding],
            groups,
        )
        return graph.squeeze(y, axes=[2])
    if rank == 5:
        from .pytorch_pool_ops import conv3d_as_conv2d, conv_transpose3d_as_conv2d

        if transposed:
            return conv_transpose3d_as_conv2d(cx, x, weight, bias, stride, padding, dilation, output_padding, groups)
        return conv3d_as_conv2d(cx, x, weight, bias, stride, padding, dilation, groups)
    if rank != 4:
        raise ConversionError(f"rank-{rank} convolutions are not supported (1-D, 2-D and 3-D are, transposed too)")
    pads = [padding[0], padding[1], padding[0], padding[1]]
    if transposed:
        return graph.conv_transpose2d(
            x,
            weight,
            *([bias] if bias is not None else []),
            strides=list(stride),
            padding=pads,
            output_padding=list(output_padding),
            dilations=list(dilation),
            groups=groups,
        )
    return graph.conv2d(
        x,
        weight,
        *([bias] if bias is not None else []),
        strides=list(stride),
        padding=pads,
        dilations=list(dilation),
        groups=groups,
    )


@converts("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(
    cx: Context,
    x: Value,
    weight: Value | None,
    bias: Value | None,
    mean: Value,
    var: Value,
    momentum: float,
    eps: float,
) -> tuple[Value, Value, Value]:
    t = ttype(x)
    channels = static_dim(t, 1, "batch_norm")
    scale = weight if weight is not None else cx.const(np.ones(channels), t.element)
    shift = bias if bias is not None else cx.const(np.zeros(channels), t.element)
    empty = cx.const(np.zeros(0), t.element)  # no batch statistics are saved outside training
    return graph.batch_norm(x, scale, shift, mean, var, eps=eps, axis=1), empty, empty


@converts("aten.native_layer_norm.default")
def _layer_norm(
    cx: Context, x: Value, shape: Sequence[int], weight: Value | None, bias: Value | None, eps: float
) -> tuple[Value, None, None]:
    operands = [x, *([weight] if weight is not None else [])]
    if bias is not None:
        if weight is None:
            operands.append(cx.const(np.ones(tuple(shape)), ttype(x).element))
        operands.append(bias)
    return graph.layer_norm(*operands, axis=-len(shape), eps=eps), None, None


@converts("aten.layer_norm.default")
def _layer_norm_plain(
    cx: Context,
    x: Value,
    shape: Sequence[int],
    weight: Value | None = None,
    bias: Value | None = None,
    eps: float = 1e-5,
    *args: Any,
) -> Value:
    return _layer_norm(cx, x, shape, weight, bias, eps)[0]


@converts("aten.rms_norm.default")
def _rms_norm(
    cx: Context, x: Value, shape: Sequence[int], weight: Value | None = None, eps: float | None = None
) -> Value:
    if eps is None:
        eps = float(torch.finfo(torch_dtype(ttype(x).element)).eps)
    operands = [x, *([weight] if weight is not None else [])]
    return graph.rms_norm(*operands, axis=-len(shape), eps=eps)


@converts("aten._softmax.default", "aten.softmax.int")
def _softmax(cx: Context, x: Value, dim: int, half_to_float: Any = False) -> Value:
    return graph.softmax(cast(x, cx.out_element()), axis=dim)


@converts("aten._log_softmax.default", "aten.log_softmax.int")
def _log_softmax(cx: Context, x: Value, dim: int, half_to_float: Any = False) -> Value:
    return graph.log_softmax(cast(x, cx.out_element()), axis=dim)


@converts("aten.scaled_dot_product_attention.default")
def _sdpa(
    cx: Context,
    q: Value,
    k: Value,
    v: Value,
    attn_mask: Value | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Value:
    qt, kt = ttype(q), ttype(k)
    if dropout_p:
        raise ConversionError("attention dropout is not supported")
    if enable_gqa and qt.shape[-3] != kt.shape[-3]:
        raise ConversionError("grouped-query attention (enable_gqa) is not supported")
    element = qt.element
    if scale is None:
        scale = 1 / math.sqrt(static_dim(qt, qt.rank - 1, "attention scale"))
    scores = graph.mul(graph.matmul(q, k, transpose_b=True), cx.const(scale, element))
    neg_inf = cx.const(-np.inf, element)
    if is_causal:
        rows = static_dim(qt, qt.rank - 2, "causal attention")
        cols = static_dim(kt, kt.rank - 2, "causal attention")
        scores = graph.where(cx.const(np.tril(np.ones((rows, cols), bool)), i1), scores, neg_inf)
    if attn_mask is not None:
        if ttype(attn_mask).element == i1:
            scores = graph.where(attn_mask, scores, neg_inf)
        else:
            scores = graph.add(scores, cast(attn_mask, element))
    return graph.matmul(graph.softmax(scores, axis=-1), v)


def _uses_result(cx: Context, index: int) -> bool:
    """Whether a later node reads result ``index`` of the current node (through ``operator.getitem``)."""
    assert cx.node is not None
    return any(getattr(u.target, "__name__", "") == "getitem" and u.args[1] == index for u in cx.node.users)


def _pair(v: Any) -> list[int]:
    return [v, v] if isinstance(v, int) else list(v) * (2 if len(v) == 1 else 1)


@converts("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool2d(
    cx: Context,
    x: Value,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> Any:
    assert cx.node is not None
    if "with_indices" in str(cx.node.target) and _uses_result(cx, 1):
        from .pytorch_pool_ops import window_max_pool

        return window_max_pool(cx, x, kernel, stride, padding, dilation, ceil_mode)
    k, p = _pair(kernel), _pair(padding)
    y = graph.max_pool2d(
        x,
        kernel=k,
        strides=_pair(stride) if stride else k,
        padding=[p[0], p[1], p[0], p[1]],
        dilations=_pair(dilation),
        ceil_mode=ceil_mode,
    )
    return (y, None) if "with_indices" in str(cx.node.target) else y


@converts("aten.avg_pool2d.default")
def _avg_pool2d(
    cx: Context,
    x: Value,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    if divisor_override is not None:
        from .pytorch_pool_ops import window_avg_pool

        return window_avg_pool(cx, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    k, p = _pair(kernel), _pair(padding)
    return graph.avg_pool2d(
        x,
        kernel=k,
        strides=_pair(stride) if stride else k,
        padding=[p[0], p[1], p[0], p[1]],
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )


def _spatial_size(cx: Context) -> list[int]:
    dims = cx.out_dims()[-2:]
    if not all(isinstance(d, int) for d in dims):
        raise ConversionError("interpolation to a symbolic size is not supported")
    return [int(d) for d in dims]  # type: ignore[arg-type]


@converts("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def _upsample_nearest(cx: Context, x: Value, *args: Any) -> Value:
    return graph.resize(x, size=_spatial_size(cx), mode="nearest")


@converts("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def _upsample_bilinear(cx: Context, x: Value, output_size: Any, align_corners: bool, *args: Any) -> Value:
    mode = "align_corners" if align_corners else "half_pixel"
    return graph.resize(x, size=_spatial_size(cx), mode="bilinear", coordinate_mode=mode)


def bind_generator(cx: Context, input_names: list[str], metadata: dict[str, Any]) -> None:
    """After an import whose random ops made the generator key (:meth:`Context.generator_key`): its name
    goes last in ``input_names``, its value (0, 0) into ``metadata["params"]`` (so it becomes a bound
    parameter) and ``metadata["generator"]`` names it for the runtime, which advances the counter after
    every call (:meth:`tensorium.runtime.artifact.Artifact.manual_seed` restarts it)."""
    if cx.generator is None:
        return
    name = cx.generator.name_hint
    assert name is not None
    input_names.append(name)
    metadata["params"] = {**(metadata.get("params") or {}), name: np.zeros(2, np.int64)}
    metadata["generator"] = name


@converts("torch.ops.higher_order.with_effects")
def with_effects(cx: Context, token: Any, op: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """An op torch.export threads an effect token through: error checks (:data:`EFFECT_CHECKS`) pass the token
    on and compute nothing; any other effectful op is refused, named."""
    name = target_name(op)
    if name in EFFECT_CHECKS or name in IGNORED:
        return (token,)
    raise ConversionError(f"{name} has side effects (torch.export gives it an effect token); it is not supported")
