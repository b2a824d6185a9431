"""Import of upstream MLIR (the subset the exporter writes) into the graph dialect.

The text is parsed and verified by MLIR's own Python bindings, then each op is translated by its rule in
:data:`RULES`. A ``linalg.generic`` is read by one general scheme: every input is brought to the loop
space (its indexing map undone by reshapes and a transpose), the scalar body becomes graph elementwise
ops on those tensors (:data:`SCALAR_OPS`), a reduction body becomes a ``graph.reduce_*`` over the
reduction loops, and a multiply-accumulate body a ``graph.einsum``. Ops outside the subset are reported
all at once.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import TensoriumError
from ..frontend.common import Unsupported, UnsupportedOpsError
from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import graph
from ..ir.dialects.builtin import make_func, make_module, set_results
from ..ir.dialects.graph.shape import INT64_MAX
from ..ir.parser import parse_type_text
from ..ir.types import FloatType, IntegerType, ScalarType, TensorType, Type
from .bindings import mlir_ir, parse

__all__ = ["RULES", "SCALAR_OPS", "ImportError_", "import_text"]


class ImportError_(UnsupportedOpsError):
    """Upstream-MLIR ops outside the subset Tensorium imports; lists every one of them at once."""

    def __init__(self, items: list[Unsupported]):
        super().__init__("MLIR import", items)


class NotImportable(ValueError):
    """One op that its rule cannot express in the graph dialect."""


Rule = Callable[["Importer", Any], list[Value | None]]


class Importer:
    """Translates one parsed MLIR module into a graph-dialect module."""

    def __init__(self, ir: Any):
        self.ir = ir
        self.values: dict[Any, Value] = {}
        self.scalars: dict[Any, float | int | bool] = {}
        self.fills: dict[Any, tuple[float | int | bool, TensorType]] = {}
        self.empties: dict[Any, TensorType] = {}
        self.failed: set[Any] = set()
        """Results of ops that were reported: their users are skipped rather than reported again."""
        self.problems: list[Unsupported] = []

    # --- values ----------------------------------------------------------------------------------------
    def value(self, v: Any) -> Value:
        """The graph value of MLIR value ``v`` (a fill becomes a splat constant when something reads it)."""
        found = self.values.get(v)
        if found is not None:
            return found
        if v in self.fills:
            number, t = self.fills[v]
            if not t.is_static:
                raise NotImportable("a linalg.fill of symbolic size read as data")
            made = graph.constant(value=DenseAttr.of(np.full(t.static_shape, number, _numpy(t.element)), t.element))
            self.values[v] = made
            return made
        if v in self.scalars:
            raise NotImportable("a scalar value used as a tensor")
        raise NotImportable("an operand that was not imported (an empty tensor read as data)")

    def scalar(self, v: Any) -> float | int | bool:
        if v not in self.scalars:
            raise NotImportable("a scalar operand that is not a constant")
        return self.scalars[v]

    def accumulate(self, result: Value, init: Any, identity: float | int, combine: Callable[..., Value]) -> Value:
        """``result`` folded into the op's ``outs`` tensor unless that is a fill of ``identity`` (or empty)."""
        if init in self.empties:
            return result
        fill = self.fills.get(init)
        if fill is not None and fill[0] == identity:
            return result
        return combine(self.value(init), result)

    # --- module and functions --------------------------------------------------------------------------
    def module(self, module: Any) -> Operation:
        funcs = [self.function(op.operation) for op in module.body.operations if op.operation.name == "func.func"]
        if self.problems:
            raise ImportError_(self.problems)
        return make_module(funcs)

    def function(self, func: Any) -> Operation:
        ir = self.ir
        ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        name = ir.StringAttr(func.attributes["sym_name"]).value
        block = func.regions[0].blocks[0]
        inputs = [self.type(t, f"@{name} argument {i}") for i, t in enumerate(ftype.inputs)]
        made = make_func(name, [t for t in inputs if t is not None])
        body = made.regions[0].block
        for arg, value in zip(block.arguments, body.args):
            self.values[arg] = value
        with InsertionPoint(body):
            for op in block.operations:
                op = op.operation
                if op.name == "func.return":
                    if any(v in self.failed for v in op.operands):
                        continue
                    try:
                        set_results(made, [self.value(v) for v in op.operands])
                    except NotImportable as e:
                        self.problems.append(Unsupported("func.return", f"@{name}", str(op.location), str(e)))
                    continue
                self.op(op)
        return made

    def op(self, op: Any) -> None:
        if any(v in self.failed for v in op.operands):
            self.failed.update(op.results)
            return
        rule = RULES.get(op.name)
        reason = f"no import rule for '{op.name}'"
        if rule is not None:
            try:
                results = rule(self, op)
            except NotImportable as e:
                reason = str(e)
            else:
                for mlir_value, value in zip(op.results, results):
                    if value is not None:
                        self.values[mlir_value] = value
                return
        self.failed.update(op.results)
        self.problems.append(Unsupported(op.name, _result_types(op), str(op.location), reason))

    def type(self, t: Any, where: str = "") -> TensorType | None:
        parsed = _parse_type(str(t))
        if not isinstance(parsed, TensorType):
            self.problems.append(Unsupported("type", where, None, f"'{t}' is not a ranked tensor Tensorium knows"))
            return None
        return parsed


def _parse_type(text: str) -> Type | None:
    try:
        return parse_type_text(text)
    except (TensoriumError, ValueError):  # an MLIR type Tensorium has no spelling for (memref, complex ...)
        return None


def tensor_type(v: Any) -> TensorType:
    t = _parse_type(str(v.type))
    if not isinstance(t, TensorType):
        raise NotImportable(f"'{v.type}' is not a ranked tensor of a Tensorium element type")
    return t


def scalar_type(v: Any) -> ScalarType:
    t = _parse_type(str(v.type))
    if not isinstance(t, ScalarType):
        raise NotImportable(f"'{v.type}' is not a scalar type Tensorium knows")
    return t


def _result_types(op: Any) -> str:
    return ", ".join(str(r.type) for r in op.results) or "no results"


def _numpy(element: ScalarType) -> Any:
    if isinstance(element, FloatType):
        return {"f16": np.float16, "f64": np.float64}.get(element.name, np.float32)
    if isinstance(element, IntegerType) and element.is_bool:
        return np.bool_
    return np.int64


def _ints(attr: Any) -> list[int]:
    return [int(x) for x in mlir_ir().DenseI64ArrayAttr(attr)]


def _dense_ints(attr: Any) -> list[int]:
    return [int(x) for x in mlir_ir().DenseIntElementsAttr(attr)]


# --- constants, fills, empties -------------------------------------------------------------------------
def _attribute_number(attr: Any) -> float | int | bool:
    ir = mlir_ir()
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    return int(ir.IntegerAttr(attr).value)


def _constant(im: Importer, op: Any) -> list[Value | None]:
    ir = im.ir
    attr = op.attributes["value"]
    result = op.results[0]
    if not isinstance(attr, ir.DenseElementsAttr):
        im.scalars[result] = _attribute_number(attr)
        return [None]
    t = tensor_type(result)
    dense = ir.DenseElementsAttr(attr)
    if dense.is_splat:
        array = np.full(t.static_shape, _attribute_number(dense.get_splat_value()), _numpy(t.element))
    else:
        array = _dense_array(dense, t)
    return [graph.constant(value=DenseAttr.of(array, t.element))]


def _dense_array(dense: Any, t: TensorType) -> np.ndarray:
    """The elements of a non-splat dense attribute: through the buffer protocol for byte-sized elements, from
    the attribute's nested-list text otherwise (i1, i4: the bindings give no buffer for sub-byte types)."""
    array = np.array(dense)
    if array.size != t.num_elements:
        body = str(dense).split(" : ")[0].removeprefix("dense<").removesuffix(">")
        if not body.startswith("["):
            raise NotImportable(f"a dense constant of {t} in MLIR's hex form")
        array = np.array(json.loads(body.replace("true", "1").replace("false", "0")), _numpy(t.element))
    return array.reshape(t.static_shape)


def _empty(im: Importer, op: Any) -> list[Value | None]:
    im.empties[op.results[0]] = tensor_type(op.results[0])
    return [None]


def _size(im: Importer, op: Any) -> list[Value | None]:
    """Index arithmetic and shape tensors: they only give sizes, which the graph ops infer (a value of these
    that an op reads as data is reported there, as not imported)."""
    if any(not _is_size_type(str(r.type)) for r in op.results):
        raise NotImportable(f"'{op.name}' on {_result_types(op)} outside a linalg.generic body")
    return [None]


def _is_size_type(text: str) -> bool:
    """index, an integer, or a rank-1 tensor of them (a shape)."""
    return re.fullmatch(r"(index|i[0-9]+)|tensor<([0-9]+|\?)x(index|i[0-9]+)>", text) is not None


def _fill(im: Importer, op: Any) -> list[Value | None]:
    im.fills[op.results[0]] = (im.scalar(op.operands[0]), tensor_type(op.results[0]))
    return [None]


# --- structured ops --------------------------------------------------------------------------------------
def _matmul(im: Importer, op: Any) -> list[Value | None]:
    a, b, init = op.operands
    maps = [_map_results(m) for m in mlir_ir().ArrayAttr(op.attributes["indexing_maps"])]
    if maps[0][-2:] != maps[2][-2:-1] + maps[0][-1:] or maps[1][-1:] != maps[2][-1:]:
        raise NotImportable("a linalg matmul with transposing indexing maps")
    product = graph.matmul(im.value(a), im.value(b))
    return [im.accumulate(product, init, 0, graph.add)]


def _transpose(im: Importer, op: Any) -> list[Value | None]:
    return [graph.transpose(im.value(op.operands[0]), perm=_ints(op.attributes["permutation"]))]


def _softmax(im: Importer, op: Any) -> list[Value | None]:
    axis = int(im.ir.IntegerAttr(op.attributes["dimension"]).value)
    return [graph.softmax(im.value(op.operands[0]), axis=axis)]


REDUCE_COMBINERS: dict[str, str] = {
    "arith.addf": "sum",
    "arith.addi": "sum",
    "arith.mulf": "prod",
    "arith.muli": "prod",
    "arith.maximumf": "max",
    "arith.maxsi": "max",
    "arith.maxui": "max",
    "arith.minimumf": "min",
    "arith.minsi": "min",
    "arith.minui": "min",
}
"""The reduction each accumulating arith op makes (``linalg.reduce`` bodies and generic reductions)."""


def _identity(kind: str, element: ScalarType) -> float | int:
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if isinstance(element, FloatType):
        return -math.inf if kind == "max" else math.inf
    assert isinstance(element, IntegerType)
    return element.min_value if kind == "max" else element.max_value


_COMBINE_OP = {"sum": graph.add, "prod": graph.mul, "max": graph.max, "min": graph.min}


def _reduce(im: Importer, op: Any) -> list[Value | None]:
    (x, init) = op.operands
    body = list(op.regions[0].blocks[0].operations)
    kind = REDUCE_COMBINERS.get(body[0].operation.name) if len(body) == 2 else None
    if kind is None:
        raise NotImportable("a linalg.reduce whose body is not one add, mul, max or min")
    reducer = getattr(graph, f"reduce_{kind}")
    reduced = reducer(im.value(x), axes=_ints(op.attributes["dimensions"]))
    return [im.accumulate(reduced, init, _identity(kind, tensor_type(init).element), _COMBINE_OP[kind])]


def _pair(op: Any, name: str) -> list[int]:
    return _dense_ints(op.attributes[name]) if name in op.attributes else [1, 1]


def _conv(im: Importer, op: Any) -> list[Value | None]:
    x, w, init = op.operands
    strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
    if op.name == "linalg.conv_2d_nchw_fchw":
        y = graph.conv2d(im.value(x), im.value(w), strides=strides, dilations=dilations)
    else:
        n, g, c, h, wd = tensor_type(x).static_shape
        _, f, _, kh, kw = tensor_type(w).static_shape
        xs = graph.reshape(im.value(x), shape=[n, g * c, h, wd])
        ws = graph.reshape(im.value(w), shape=[g * f, c, kh, kw])
        y = graph.conv2d(xs, ws, strides=strides, dilations=dilations, groups=g)
        y = graph.reshape(y, shape=list(tensor_type(op.results[0]).static_shape))
    return [im.accumulate(y, init, 0, graph.add)]


def _pool(im: Importer, op: Any) -> list[Value | None]:
    x, window, init = op.operands
    kernel = list(tensor_type(window).static_shape)
    strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
    element = tensor_type(x).element
    if op.name == "linalg.pooling_nchw_max":
        y = graph.max_pool2d(im.value(x), kernel=kernel, strides=strides, dilations=dilations)
        return [im.accumulate(y, init, _identity("max", element), graph.max)]
    if dilations != [1, 1]:
        raise NotImportable("a dilated sum pooling")
    mean = graph.avg_pool2d(im.value(x), kernel=kernel, strides=strides, count_include_pad=True)
    y = graph.mul(mean, graph.constant(value=DenseAttr.of(np.asarray(kernel[0] * kernel[1]), element)))
    return [im.accumulate(y, init, 0, graph.add)]


# --- tensor ops ------------------------------------------------------------------------------------------
def _reshape(im: Importer, op: Any) -> list[Value | None]:
    t = tensor_type(op.results[0])
    symbolic = [i for i, d in enumerate(t.shape) if not isinstance(d, int)]
    if len(symbolic) > 1:
        raise NotImportable(f"a reshape to {t} with more than one symbolic dim")
    shape = [d if isinstance(d, int) else -1 for d in t.shape]
    return [graph.reshape(im.value(op.operands[0]), shape=shape)]


def _extract_slice(im: Importer, op: Any) -> list[Value | None]:
    source = op.operands[0]
    offsets, sizes, strides = (_ints(op.attributes[k]) for k in ("static_offsets", "static_sizes", "static_strides"))
    dynamic = iter(op.operands[1:])
    ends = []
    for axis, (offset, size, stride) in enumerate(zip(offsets, sizes, strides)):
        if size != im.ir.ShapedType.get_dynamic_size():
            ends.append(offset + (size - 1) * stride + 1 if size else offset)
        elif offset == 0 and stride == 1 and _is_dim_of(next(dynamic), source, axis):
            ends.append(INT64_MAX)  # the whole of a symbolic axis
        else:
            raise NotImportable("a tensor.extract_slice with dynamic offsets or strides, or part of a symbolic dim")
    x = graph.slice(im.value(source), starts=offsets, ends=ends, steps=strides)
    result = tensor_type(op.results[0])
    if tensor_type(source).rank != result.rank:
        x = graph.reshape(x, shape=list(result.static_shape))
    return [x]


def _is_dim_of(size: Any, source: Any, axis: int) -> bool:
    """Whether ``size`` is ``tensor.dim`` of ``source`` along ``axis`` (an index constant)."""
    owner = size.owner
    if not hasattr(owner, "name") or owner.name != "tensor.dim" or owner.operands[0] != source:
        return False
    index = owner.operands[1].owner
    return index.name == "arith.constant" and _attribute_number(index.attributes["value"]) == axis


def _concat(im: Importer, op: Any) -> list[Value | None]:
    axis = int(im.ir.IntegerAttr(op.attributes["dim"]).value)
    return [graph.concat(*[im.value(v) for v in op.operands], axis=axis)]


def _pad(im: Importer, op: Any) -> list[Value | None]:
    if len(op.operands) > 1:
        raise NotImportable("a tensor.pad with dynamic amounts")
    low, high = _ints(op.attributes["static_low"]), _ints(op.attributes["static_high"])
    body = list(op.regions[0].blocks[0].operations)
    yielded = body[-1].operation.operands[0]
    inner = {o.operation.results[0]: o.operation for o in body[:-1]}
    if yielded in inner and inner[yielded].name == "arith.constant":
        value = _attribute_number(inner[yielded].attributes["value"])
    else:
        value = im.scalar(yielded)
    return [graph.pad(im.value(op.operands[0]), pads=low + high, value=float(value))]


# --- linalg.generic ---------------------------------------------------------------------------------------
def _cmp(predicate: str) -> Callable[[Value, Value], Value]:
    name = predicate.lower()
    base = {"oeq": "eq", "ueq": "eq", "one": "ne", "une": "ne"}.get(name)
    if base is None:
        base = name[1:] if name[0] in "osuo" and name not in ("eq", "ne") else name
    return getattr(graph, {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}[base])


def _cast(op: Any, xs: list[Value]) -> Value:
    return graph.cast(xs[0], dtype=scalar_type(op.results[0]))


def _truncated_remainder(a: Value, b: Value) -> Value:
    """``arith.remf``/``remsi`` (the sign of ``a``) from numpy's ``mod`` (the sign of ``b``): they differ by ``b``
    exactly where the remainder is not 0 and the signs of ``a`` and ``b`` differ."""
    floored = graph.mod(a, b)
    zero = graph.constant(value=DenseAttr.of(np.asarray(0), _element(a)))
    signs_differ = graph.ne(graph.lt(a, zero), graph.lt(b, zero))
    return graph.where(graph.and_(graph.ne(floored, zero), signs_differ), graph.sub(floored, b), floored)


def _element(v: Value) -> ScalarType:
    assert isinstance(v.type, TensorType)
    return v.type.element


def _as_unsigned(x: Value) -> Value:
    """A signless integer MLIR value read as unsigned: Tensorium imports signless integers as signed."""
    t = _element(x)
    if isinstance(t, IntegerType) and t.signed and not t.is_bool:
        return graph.cast(x, dtype=IntegerType(t.width, False))
    return x


def _as_signed(x: Value) -> Value:
    t = _element(x)
    if isinstance(t, IntegerType) and not t.signed and not t.is_bool:
        return graph.cast(x, dtype=IntegerType(t.width, True))
    return x


def _unsigned(make: Callable[..., Value]) -> Callable[[Any, list[Value]], Value]:
    """An op with unsigned semantics (``divui``, ``maxui``, ...): its operands as unsigned, its result signed."""
    return lambda op, xs: _as_signed(make(*[_as_unsigned(x) for x in xs]))


def _cmpi(op: Any, xs: list[Value]) -> Value:
    predicate = _predicate(op, "CmpIPredicate")
    operands = [_as_unsigned(x) for x in xs] if predicate.startswith("u") else xs
    return _cmp(predicate)(*operands)


def _to_unsigned(op: Any, xs: list[Value]) -> Value:
    """``fptoui``: to the unsigned integer of the result's width, then the signless (signed) result type."""
    result = scalar_type(op.results[0])
    assert isinstance(result, IntegerType)
    return graph.cast(graph.cast(xs[0], dtype=IntegerType(result.width, False)), dtype=result)


def _binary(make: Callable[..., Value]) -> Callable[[Any, list[Value]], Value]:
    return lambda op, xs: make(*xs)


SCALAR_OPS: dict[str, Callable[[Any, list[Value]], Value]] = {
    **{f"arith.{n}": _binary(graph.add) for n in ("addf", "addi")},
    **{f"arith.{n}": _binary(graph.sub) for n in ("subf", "subi")},
    **{f"arith.{n}": _binary(graph.mul) for n in ("mulf", "muli")},
    **{f"arith.{n}": _binary(graph.div) for n in ("divf", "divsi")},
    **{f"arith.{n}": _binary(graph.max) for n in ("maximumf", "maxsi")},
    **{f"arith.{n}": _binary(graph.min) for n in ("minimumf", "minsi")},
    **{f"arith.{n}": _binary(_truncated_remainder) for n in ("remf", "remsi")},
    "arith.divui": _unsigned(graph.div),
    "arith.remui": _unsigned(graph.mod),
    "arith.maxui": _unsigned(graph.max),
    "arith.minui": _unsigned(graph.min),
    "arith.andi": _binary(graph.and_),
    "arith.ori": _binary(graph.or_),
    "arith.xori": _binary(graph.xor),
    "arith.negf": _binary(graph.neg),
    "arith.select": _binary(graph.where),
    "arith.cmpf": lambda op, xs: _cmp(_predicate(op, "CmpFPredicate"))(*xs),
    "arith.cmpi": _cmpi,
    **{f"arith.{n}": _cast for n in ("extf", "truncf", "sitofp", "fptosi", "extsi", "trunci")},
    **{f"arith.{n}": (lambda op, xs: _cast(op, [_as_unsigned(xs[0])])) for n in ("uitofp", "extui")},
    "arith.fptoui": _to_unsigned,
    **{
        f"math.{n}": _binary(getattr(graph, n))
        for n in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "atan", "asin", "acos", "floor", "ceil")
    },
    "math.absf": _binary(graph.abs),
    "math.absi": _binary(graph.abs),
    "math.roundeven": _binary(graph.round),
    "math.powf": _binary(graph.pow),
    "math.ipowi": _binary(graph.pow),
}
"""The graph op of each scalar arith/math op in a ``linalg.generic`` body (applied to whole tensors)."""


def _predicate(op: Any, enum: str) -> str:
    from iree.compiler.dialects import arith

    return str(getattr(arith, enum)(int(mlir_ir().IntegerAttr(op.attributes["predicate"]).value)).name)


def _map_results(attr: Any) -> list[int | None]:
    """The results of an affine map: a loop dim's position, or None for the constant 0."""
    ir = mlir_ir()
    found: list[int | None] = []
    for expr in ir.AffineMapAttr(attr).value.results:
        if isinstance(expr, ir.AffineDimExpr):
            found.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            found.append(None)
        else:
            raise NotImportable(f"an indexing map with the expression {expr}")
    return found


def to_loop_space(x: Value, results: Sequence[int | None], loops: int) -> Value:
    """``x`` (indexed by ``results``) as a tensor of rank ``loops``: dims in loop order, size 1 where the
    map leaves a loop out (constant-0 entries index size-1 dims and are dropped)."""
    t = x.type
    assert isinstance(t, TensorType)
    dims = [d for d in results if d is not None]
    if len(dims) != len(results):
        x = graph.squeeze(x, axes=[i for i, d in enumerate(results) if d is None])
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    if order != list(range(len(dims))):
        x = graph.transpose(x, perm=order)
    present = sorted(dims)
    if len(present) != loops:
        x = graph.unsqueeze(x, axes=[i for i in range(loops) if i not in present])
    return x


def _generic(im: Importer, op: Any) -> list[Value | None]:
    ir = im.ir
    maps = [_map_results(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    kinds = [str(k).split("<")[-1].rstrip(">") for k in ir.ArrayAttr(op.attributes["iterator_types"])]
    loops = len(kinds)
    *inputs, init = op.operands
    if len(op.results) != 1:
        raise NotImportable("a linalg.generic with several results")
    out_map = maps[-1]
    if None in out_map or sorted(out_map) != [i for i, k in enumerate(kinds) if k == "parallel"]:  # type: ignore[type-var]
        raise NotImportable("a linalg.generic whose output map is not a permutation of its parallel loops")
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    args = list(block.arguments)
    if any(o.name == "tensor.extract" for o in body):
        return [_gather(im, body, args, inputs, maps, out_map)]
    reductions = [i for i, k in enumerate(kinds) if k == "reduction"]
    local: dict[Any, Value] = {}
    for arg, value, m in zip(args, inputs, maps):
        local[arg] = to_loop_space(im.value(value), m, loops)
    if reductions:
        contraction = _contraction(im, body, args, inputs, maps, kinds)
        if contraction is not None:
            return [im.accumulate(contraction, init, 0, graph.add)]
    yielded = body[-1].operands[0]
    kind = None
    if reductions:
        combine = _defining(yielded, body)
        kind = REDUCE_COMBINERS.get(combine.name) if combine is not None else None
        acc = args[-1]
        if combine is None or kind is None or acc not in list(combine.operands):
            raise NotImportable("a reduction body that is not an add, mul, max or min into the accumulator")
        others = [v for v in combine.operands if v != acc]
        yielded = others[0]
    elif args[-1] in _uses(body):
        local[args[-1]] = to_loop_space(im.value(init), out_map, loops)
    for inner in body[:-1]:
        if kind is not None and inner.results and inner.results[0] == body[-1].operands[0]:
            continue
        _scalar_op(im, inner, local)
    value = _local(im, yielded, local)
    out = tensor_type(op.results[0])
    if kind is not None:
        element = out.element
        value = getattr(graph, f"reduce_{kind}")(_full(value, out, out_map, loops), axes=reductions)
        value = _permuted(value, [d for d in out_map if d is not None], reductions)
        return [im.accumulate(value, init, _identity(kind, element), _COMBINE_OP[kind])]
    value = _permuted(_full(value, out, out_map, loops), [d for d in out_map if d is not None], [])
    return [value]


def _gather(im: Importer, body: list[Any], args: list[Any], inputs: Sequence[Any], maps: Any, out_map: Any) -> Value:
    """A generic whose body yields ``tensor.extract`` of an outer tensor at the loop indices, with one
    coordinate read from its single input (an index, wrapped when negative), is ``graph.gather`` (the index
    fills the input's dims) or ``graph.gather_elements`` (it replaces the loop index at its axis)."""
    extract, yielded = body[-2], body[-1]
    if len(inputs) != 1 or extract.name != "tensor.extract" or yielded.operands[0] != extract.results[0]:
        raise NotImportable("a linalg.generic reading a tensor with tensor.extract other than a gather")
    data, coords = extract.operands[0], list(extract.operands[1:])
    local = {o.results[0]: o for o in body if len(o.results) == 1}
    dims = [_loop_index(local.get(c)) for c in coords]
    if dims.count(None) != 1 or out_map != list(range(len(out_map))):
        raise NotImportable("a tensor.extract that is not one index among the loop indices")
    axis = dims.index(None)
    rank = tensor_type(inputs[0]).rank
    loops = [d for d in dims if d is not None]
    size = tensor_type(data).shape[axis]
    if not _is_index_of(coords[axis], args[0], size, local):
        raise NotImportable("a tensor.extract at a computed index other than the input (wrapped when negative)")
    if loops == [*range(axis), *range(axis + rank, len(dims) + rank - 1)] and maps[0] == list(range(axis, axis + rank)):
        return graph.gather(im.value(data), im.value(inputs[0]), axis=axis)
    if loops == [*range(axis), *range(axis + 1, len(dims))] and maps[0] == list(range(len(out_map))):
        return graph.gather_elements(im.value(data), im.value(inputs[0]), axis=axis)
    raise NotImportable("a tensor.extract whose loop indices follow neither a gather's nor a gather_elements' layout")


def _loop_index(op: Any) -> int | None:
    if op is None or op.name != "linalg.index":
        return None
    return int(mlir_ir().IntegerAttr(op.attributes["dim"]).value)


def _is_index_of(value: Any, arg: Any, size: Any, local: dict[Any, Any]) -> bool:
    """``value`` is ``index_cast(arg)``, or that plus ``size`` where it is negative (a gather's wrap)."""

    def cast_of_arg(v: Any) -> bool:
        op = local.get(v)
        return op is not None and op.name == "arith.index_cast" and op.operands[0] == arg

    if cast_of_arg(value):
        return True
    select = local.get(value)
    if select is None or select.name != "arith.select":
        return False
    cond, wrapped = (local.get(v) for v in select.operands[:2])
    return (
        cast_of_arg(select.operands[2])
        and cond is not None
        and cond.name == "arith.cmpi"
        and _predicate(cond, "CmpIPredicate") == "slt"
        and wrapped is not None
        and wrapped.name == "arith.addi"
        and wrapped.operands[0] == select.operands[2]
        and _constant_value(local.get(wrapped.operands[1])) == size
    )


def _constant_value(op: Any) -> float | int | bool | None:
    return _attribute_number(op.attributes["value"]) if op is not None and op.name == "arith.constant" else None


def _full(value: Value, out: TensorType, out_map: list[int | None], loops: int) -> Value:
    """``value`` broadcast to the loop space where the output map fixes every parallel loop's size."""
    t = value.type
    assert isinstance(t, TensorType)
    sizes = {d: out.shape[i] for i, d in enumerate(out_map) if d is not None}
    target = [sizes.get(i, -1) for i in range(loops)]
    if t.rank == loops and all(target[i] == -1 or t.shape[i] == target[i] for i in range(loops)):
        return value
    if any(not isinstance(s, int) for s in target):
        raise NotImportable("a broadcast to a symbolic size")
    if t.rank < loops:
        value = graph.reshape(value, shape=[1] * (loops - t.rank) + [s if isinstance(s, int) else -1 for s in t.shape])
    return graph.broadcast_to(value, shape=target)


def _permuted(value: Value, out_dims: list[int], reduced: list[int]) -> Value:
    """The reduced loop-space ``value`` in the output map's order."""
    remaining = [d for d in sorted(out_dims) if d not in reduced]
    perm = [remaining.index(d) for d in out_dims]
    return value if perm == list(range(len(perm))) else graph.transpose(value, perm=perm)


def _uses(body: list[Any]) -> list[Any]:
    return [v for o in body for v in o.operands]


def _defining(v: Any, body: list[Any]) -> Any:
    for o in body:
        if v in list(o.results):
            return o
    return None


def _local(im: Importer, v: Any, local: dict[Any, Value]) -> Value:
    if v in local:
        return local[v]
    if v in im.scalars:
        t = scalar_type(v)
        return graph.constant(value=DenseAttr.of(np.asarray(im.scalars[v]), t))
    raise NotImportable("a body value defined outside the linalg.generic")


def _scalar_op(im: Importer, op: Any, local: dict[Any, Value]) -> None:
    if op.name == "arith.constant":
        t = scalar_type(op.results[0])
        number = _attribute_number(op.attributes["value"])
        local[op.results[0]] = graph.constant(value=DenseAttr.of(np.asarray(number), t))
        return
    make = SCALAR_OPS.get(op.name)
    if make is None:
        raise NotImportable(f"the body op '{op.name}' has no graph form")
    local[op.results[0]] = make(op, [_local(im, v, local) for v in op.operands])


def _contraction(
    im: Importer,
    body: list[Any],
    args: list[Any],
    inputs: Sequence[Any],
    maps: list[list[int | None]],
    kinds: list[str],
) -> Value | None:
    """``acc + a * b`` over two inputs with projected-permutation maps, as a ``graph.einsum``."""
    if len(body) != 3 or len(inputs) != 2:
        return None
    mul, add = body[0], body[1]
    if mul.name not in ("arith.mulf", "arith.muli") or add.name not in ("arith.addf", "arith.addi"):
        return None
    if set(mul.operands) != set(args[:2]) or set(add.operands) != {mul.results[0], args[2]}:
        return None
    if any(None in m for m in maps):
        return None
    letters = "abcdefghijklmnopqrstuvwxyz"
    terms = ["".join(letters[d] for d in m if d is not None) for m in maps]
    equation = f"{terms[0]},{terms[1]}->{terms[2]}"
    return graph.einsum(im.value(inputs[0]), im.value(inputs[1]), equation=equation)


RULES: dict[str, Rule] = {
    "arith.constant": _constant,
    "tensor.empty": _empty,
    "tensor.dim": _size,
    "tensor.from_elements": _size,
    **{f"arith.{name}": _size for name in ("addi", "subi", "muli", "divui", "divsi", "ceildivui", "index_cast")},
    "linalg.fill": _fill,
    "linalg.generic": _generic,
    "linalg.matmul": _matmul,
    "linalg.batch_matmul": _matmul,
    "linalg.transpose": _transpose,
    "linalg.reduce": _reduce,
    "linalg.softmax": _softmax,
    "linalg.conv_2d_nchw_fchw": _conv,
    "linalg.conv_2d_ngchw_gfchw": _conv,
    "linalg.pooling_nchw_max": _pool,
    "linalg.pooling_nchw_sum": _pool,
    "tensor.collapse_shape": _reshape,
    "tensor.expand_shape": _reshape,
    "tensor.reshape": _reshape,
    "tensor.extract_slice": _extract_slice,
    "tensor.concat": _concat,
    "tensor.pad": _pad,
}
"""The import rule of each upstream op (ops not listed are reported as unsupported). Sizes (``tensor.dim``,
index constants and arithmetic, shape tensors) only feed ``tensor.empty`` and ``tensor.reshape``, whose
shapes the graph ops infer, so they import as nothing."""


def import_text(text: str, source: str = "<mlir>") -> Operation:
    """The graph-dialect module of upstream-MLIR ``text`` (parsed and verified by MLIR first); raises
    :class:`ImportError_` listing every op outside the imported subset."""
    ir = mlir_ir()
    with ir.Context() as context, ir.Location.unknown():
        module = parse(text, context, source)
        return Importer(ir).module(module)
