"""Export of the graph dialect to upstream MLIR: ``func``, ``linalg`` (named ops where they exist,
``linalg.generic`` otherwise), ``tensor``, ``arith`` and ``math``.

Each graph op has one rule in :data:`RULES`; a rule writes MLIR through the :class:`~.writer.Writer`.
Ops with no direct upstream form are first rewritten into simpler graph ops (:meth:`Exporter.via_graph`:
layer norm into reductions and elementwise math, a biased convolution into a convolution and an add),
which are then exported by their own rules, so each op's MLIR form is written once. Ops the exporter
cannot express are collected and reported all at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..frontend.common import Unsupported, UnsupportedOpsError
from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Block, Operation, Value
from ..ir.dialects import graph
from ..ir.dialects.builtin import func_body, func_name, func_type, functions
from ..ir.dialects.graph.shape import is_full_range, slice_plan
from ..ir.dialects.quant import layouts
from ..ir.dialects.quant.types import scale_shape
from ..ir.evaluate import evaluate_op
from ..ir.shapes import normalize_axes, normalize_axis
from ..ir.types import FloatType, IndexType, IntegerType, QuantizedType, ScalarType, TensorType
from .writer import DynamicSizeError, ExportTypeError, Scalars, V, Writer, type_text

__all__ = ["RULES", "ExportError", "Exporter", "export_text", "exportable_ops"]


class ExportError(UnsupportedOpsError):
    """Ops of a module that have no upstream MLIR form here; lists every one of them at once."""

    def __init__(self, items: list[Unsupported]):
        super().__init__("MLIR export", items)


Rule = Callable[["Exporter", Operation, list[V]], list[V]]


class Exporter:
    """Writes the functions of one module as upstream MLIR text, one graph op at a time."""

    def __init__(self) -> None:
        self.w = Writer()
        self.values: dict[Value, V] = {}
        self.problems: list[Unsupported] = []

    def module(self, module: Operation) -> str:
        """The MLIR text of ``module``; raises :class:`ExportError` listing every op it cannot export."""
        out = ["module {"]
        for func in functions(module):
            out += self.function(func)
        out.append("}")
        if self.problems:
            raise ExportError(self.problems)
        return "\n".join(out) + "\n"

    def function(self, func: Operation) -> list[str]:
        self.w.lines = []
        ftype = func_type(func)
        block = func_body(func)
        args = []
        for i, arg in enumerate(block.args):
            try:
                self.values[arg] = V(f"%arg{i}", arg.type)  # type: ignore[arg-type]
                args.append(f"%arg{i}: {type_text(arg.type)}")  # type: ignore[arg-type]
            except ExportTypeError as e:
                self.problems.append(Unsupported("func.func", f"@{func_name(func)} argument {i}", None, str(e)))
        self.ops(block.ops[:-1])
        returned = [self.values.get(v) for v in block.ops[-1].operands]
        try:
            results = ", ".join(type_text(t) for t in ftype.results if isinstance(t, TensorType))
        except ExportTypeError:
            results = ""  # the op or argument of that type is reported
        header = f"  func.func @{func_name(func)}({', '.join(args)}) -> ({results}) {{"
        body = self.w.lines
        if all(r is not None for r in returned) and returned:
            shown = ", ".join(r.name for r in returned if r is not None)
            body.append(f"    func.return {shown} : {results}")
        elif not returned:
            body.append("    func.return")
        return [header, *body, "  }"]

    def ops(self, ops: Sequence[Operation]) -> None:
        for op in ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        args = [self.values.get(v) for v in op.operands]
        if any(a is None for a in args):
            return  # an operand already failed; that op was reported
        rule = RULES.get(op.name)
        reason = f"no export rule for '{op.name}'"
        if rule is not None:
            try:
                results = rule(self, op, args)  # type: ignore[arg-type]
            except (ExportTypeError, DynamicSizeError, NotExportable) as e:
                reason = str(e)
            else:
                for value, result in zip(op.results, results):
                    self.values[value] = result
                return
        where = str(op.loc) if op.loc is not None else None
        self.problems.append(Unsupported(op.name, _describe(op), where, reason))

    def via_graph(self, op: Operation, build: Callable[..., Any]) -> list[V]:
        """Export ``op`` as the graph ops ``build(*operands)`` makes (in a scratch block, erased after)."""
        scratch = Block()
        try:
            with InsertionPoint(scratch):
                made = build(*op.operands)
            made = list(made) if isinstance(made, (tuple, list)) else [made]
            for inner in scratch.ops:
                before = len(self.problems)
                self.op(inner)
                if len(self.problems) > before:
                    raise NotExportable(self.problems.pop().reason)
            return [self.values[v] for v in made]
        finally:  # the scratch ops use the module's values: erasing them drops those uses again
            for inner in reversed(scratch.ops):
                inner.erase()


class NotExportable(ValueError):
    """An op whose attributes or types put it outside what its rule can express."""


def _describe(op: Operation) -> str:
    types = ", ".join(str(v.type) for v in op.operands)
    return f"{op.name}({types})"


def _tensor(v: V) -> TensorType:
    assert isinstance(v.type, TensorType)
    return v.type


def _result(op: Operation, index: int = 0) -> TensorType:
    t = op.results[index].type
    if not isinstance(t, TensorType):
        raise NotExportable(f"result {index} is not a tensor")
    return t


# --- broadcasting ----------------------------------------------------------------------------------
def aligned_axes(out_rank: int, t: TensorType) -> list[int | None]:
    """For each result axis of a right-aligned (numpy) broadcast, the axis of ``t`` it reads, or None."""
    offset = out_rank - t.rank
    return [i - offset if i >= offset else None for i in range(out_rank)]


def broadcast_map(out: TensorType, t: TensorType) -> list[int | str]:
    """The indexing map of an operand broadcast to ``out``: its size-1 dims read index 0."""
    offset = out.rank - t.rank
    return ["0" if d == 1 and out.shape[i + offset] != 1 else i + offset for i, d in enumerate(t.shape)]


def _sources(out: TensorType, args: Sequence[V]) -> list[tuple[V, Sequence[int | None]]]:
    return [(a, aligned_axes(out.rank, _tensor(a))) for a in args]


def elementwise(ex: Exporter, out: TensorType, args: Sequence[V], body: Callable[[Scalars, list[V]], V]) -> V:
    """A ``linalg.generic`` computing ``body`` on broadcast operands into a fresh tensor of type ``out``."""
    init = ex.w.empty(out, _sources(out, args))
    maps = [broadcast_map(out, _tensor(a)) for a in args] + [list(range(out.rank))]
    return ex.w.generic(args, maps, init, ["parallel"] * out.rank, lambda s, xs: body(s, list(xs[: len(args)])))


# --- elementwise ops: the scalar body of each ------------------------------------------------------
def _gelu(s: Scalars, x: V, approximate: str) -> V:
    half = s.like(0.5, x)
    one = s.like(1.0, x)
    if approximate == "tanh":
        cube = s.arith("mulf", "muli", s.arith("mulf", "muli", x, x), x)
        inner = s.arith("addf", "addi", x, s.arith("mulf", "muli", s.like(0.044715, x), cube))
        t = s.math("tanh", s.arith("mulf", "muli", s.like(math.sqrt(2 / math.pi), x), inner))
    else:
        t = s.math("erf", s.arith("mulf", "muli", x, s.like(math.sqrt(0.5), x)))
    return s.arith("mulf", "muli", s.arith("mulf", "muli", half, x), s.arith("addf", "addi", one, t))


def _sigmoid(s: Scalars, x: V) -> V:
    one = s.like(1.0, x)
    return s.arith("divf", "divsi", one, s.arith("addf", "addi", one, s.math("exp", s.op("arith.negf", x))))


def _sign(s: Scalars, x: V) -> V:
    zero = s.like(0, x)
    positive = s.select(s.cmp("gt", x, zero), s.like(1, x), zero)
    return s.select(s.cmp("lt", x, zero), s.like(-1, x), positive)


def _neg(s: Scalars, x: V) -> V:
    return s.op("arith.negf", x) if isinstance(x.type, FloatType) else s.op("arith.subi", s.like(0, x), x)


def _not(s: Scalars, x: V) -> V:
    return s.op("arith.xori", x, s.like(True if _is_bool(x) else -1, x))


def _abs(s: Scalars, x: V) -> V:
    return s.math("absf" if isinstance(x.type, FloatType) else "absi", x)


def _is_bool(x: V) -> bool:
    return isinstance(x.type, IntegerType) and x.type.is_bool


def _mod(s: Scalars, a: V, b: V) -> V:
    """numpy's mod: the remainder takes the sign of the divisor."""
    rem = s.arith("remf", "remsi", a, b, unsigned_op="remui")
    if isinstance(a.type, IntegerType) and not a.type.signed:
        return rem
    zero = s.like(0, a)
    signs_differ = s.cmp("ne", s.cmp("lt", rem, zero), s.cmp("lt", b, zero))
    fix = s.op("arith.andi", s.cmp("ne", rem, zero), signs_differ)
    return s.select(fix, s.arith("addf", "addi", rem, b), rem)


def _clamp(s: Scalars, x: V, low: float | None, high: float | None) -> V:
    if low is not None:
        bound = low if isinstance(x.type, FloatType) else math.ceil(low)
        x = s.arith("maximumf", "maxsi", x, s.like(bound, x), unsigned_op="maxui")
    if high is not None:
        bound = high if isinstance(x.type, FloatType) else math.floor(high)
        x = s.arith("minimumf", "minsi", x, s.like(bound, x), unsigned_op="minui")
    return x


def _pow(s: Scalars, a: V, b: V) -> V:
    if isinstance(a.type, FloatType):
        return s.op("math.powf", a, b)
    return s.op("math.ipowi", a, b)


Scalar = Callable[[Scalars, list[V], dict[str, Any]], V]

SCALAR: dict[str, Scalar] = {
    "graph.add": lambda s, xs, a: s.arith("addf", "addi", *xs),
    "graph.sub": lambda s, xs, a: s.arith("subf", "subi", *xs),
    "graph.mul": lambda s, xs, a: s.arith("mulf", "muli", *xs),
    "graph.div": lambda s, xs, a: s.arith("divf", "divsi", *xs, unsigned_op="divui"),
    "graph.max": lambda s, xs, a: s.arith("maximumf", "maxsi", *xs, unsigned_op="maxui"),
    "graph.min": lambda s, xs, a: s.arith("minimumf", "minsi", *xs, unsigned_op="minui"),
    "graph.mod": lambda s, xs, a: _mod(s, *xs),
    "graph.pow": lambda s, xs, a: _pow(s, *xs),
    "graph.and": lambda s, xs, a: s.op("arith.andi", *xs),
    "graph.or": lambda s, xs, a: s.op("arith.ori", *xs),
    "graph.xor": lambda s, xs, a: s.op("arith.xori", *xs),
    "graph.eq": lambda s, xs, a: s.cmp("eq", *xs),
    "graph.ne": lambda s, xs, a: s.cmp("ne", *xs),
    "graph.lt": lambda s, xs, a: s.cmp("lt", *xs),
    "graph.le": lambda s, xs, a: s.cmp("le", *xs),
    "graph.gt": lambda s, xs, a: s.cmp("gt", *xs),
    "graph.ge": lambda s, xs, a: s.cmp("ge", *xs),
    "graph.where": lambda s, xs, a: s.select(*xs),
    "graph.neg": lambda s, xs, a: _neg(s, xs[0]),
    "graph.abs": lambda s, xs, a: _abs(s, xs[0]),
    "graph.not": lambda s, xs, a: _not(s, xs[0]),
    "graph.sign": lambda s, xs, a: _sign(s, xs[0]),
    "graph.exp": lambda s, xs, a: s.math("exp", xs[0]),
    "graph.log": lambda s, xs, a: s.math("log", xs[0]),
    "graph.sqrt": lambda s, xs, a: s.math("sqrt", xs[0]),
    "graph.rsqrt": lambda s, xs, a: s.math("rsqrt", xs[0]),
    "graph.sin": lambda s, xs, a: s.math("sin", xs[0]),
    "graph.cos": lambda s, xs, a: s.math("cos", xs[0]),
    "graph.tanh": lambda s, xs, a: s.math("tanh", xs[0]),
    "graph.erf": lambda s, xs, a: s.math("erf", xs[0]),
    "graph.atan": lambda s, xs, a: s.math("atan", xs[0]),
    "graph.asin": lambda s, xs, a: s.math("asin", xs[0]),
    "graph.acos": lambda s, xs, a: s.math("acos", xs[0]),
    "graph.floor": lambda s, xs, a: s.math("floor", xs[0]),
    "graph.ceil": lambda s, xs, a: s.math("ceil", xs[0]),
    "graph.round": lambda s, xs, a: s.math("roundeven", xs[0]),
    "graph.reciprocal": lambda s, xs, a: s.op("arith.divf", s.like(1.0, xs[0]), xs[0]),
    "graph.relu": lambda s, xs, a: s.arith("maximumf", "maxsi", xs[0], s.like(0, xs[0]), unsigned_op="maxui"),
    "graph.sigmoid": lambda s, xs, a: _sigmoid(s, xs[0]),
    "graph.silu": lambda s, xs, a: s.op("arith.mulf", xs[0], _sigmoid(s, xs[0])),
    "graph.gelu": lambda s, xs, a: _gelu(s, xs[0], a["approximate"]),
    "graph.clamp": lambda s, xs, a: _clamp(s, xs[0], a.get("min"), a.get("max")),
    "graph.cast": lambda s, xs, a: s.cast(xs[0], a["dtype"]),
}
"""The scalar computation of each elementwise graph op, written into a ``linalg.generic`` body."""


def _elementwise_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    out = _result(op)
    fn = SCALAR[op.name]
    attrs = op.opdef.complete_attrs(dict(op.attributes))
    return [elementwise(ex, out, args, lambda s, xs: fn(s, xs, attrs))]


# --- contractions ----------------------------------------------------------------------------------
def _zero(element: ScalarType) -> float | int:
    return 0.0 if isinstance(element, FloatType) else 0


def _matmul_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    a, b = args
    ta, tb = op.attr("transpose_a"), op.attr("transpose_b")
    out = _result(op)
    at, bt = _tensor(a), _tensor(b)
    m_axis, n_axis = (at.rank - 1 if ta else at.rank - 2), (bt.rank - 2 if tb else bt.rank - 1)
    batch = out.rank - 2
    sources: list[tuple[V, Sequence[int | None]]] = [
        (a, [*aligned_axes(batch, TensorType(at.shape[:-2], at.element)), m_axis, None]),
        (b, [*aligned_axes(batch, TensorType(bt.shape[:-2], bt.element)), None, n_axis]),
    ]
    init = ex.w.filled(out, _zero(out.element), sources)
    tt = type_text(out)
    ins = f"ins({a.name}, {b.name} : {type_text(at)}, {type_text(bt)}) outs({init.name} : {tt}) -> {tt}"
    if not ta and not tb and at.rank == bt.rank == 2:
        return [ex.w.op(f"linalg.matmul {ins}", out)]
    if not ta and not tb and at.rank == bt.rank == 3 and at.shape[0] == bt.shape[0] == out.shape[0]:
        return [ex.w.op(f"linalg.batch_matmul {ins}", out)]
    k = out.rank  # the reduction loop
    out_batch = TensorType(out.shape[:-2], out.element)

    def operand_map(t: TensorType, transpose: bool, row: int | str, col: int | str) -> list[int | str]:
        return [
            *broadcast_map(out_batch, TensorType(t.shape[:-2], t.element)),
            *((col, row) if transpose else (row, col)),
        ]

    maps: list[list[int | str]] = [operand_map(at, ta, batch, k), operand_map(bt, tb, k, batch + 1)]
    maps.append(list(range(out.rank)))
    iterators = ["parallel"] * out.rank + ["reduction"]
    return [ex.w.generic([a, b], maps, init, iterators, _multiply_add)]


def _multiply_add(s: Scalars, xs: Sequence[V]) -> V:
    *factors, acc = xs
    product = factors[0]
    for f in factors[1:]:
        product = s.arith("mulf", "muli", product, f)
    return s.arith("addf", "addi", acc, product)


def _einsum_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    equation = str(op.attr("equation")).replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if "." in equation or len(terms) != len(args):
        raise NotExportable(f"einsum '{equation}' uses ellipses")
    loops = list(rhs) + sorted({c for t in terms for c in t} - set(rhs))
    out = _result(op)
    sources = [(a, [t.index(c) if c in t else None for c in rhs]) for a, t in zip(args, terms)]
    init = ex.w.filled(out, _zero(out.element), sources)
    maps: list[list[int | str]] = [[loops.index(c) for c in t] for t in [*terms, rhs]]
    iterators = ["parallel"] * len(rhs) + ["reduction"] * (len(loops) - len(rhs))
    return [ex.w.generic(args, maps, init, iterators, _multiply_add)]


# --- reductions ------------------------------------------------------------------------------------
def _identity(kind: str, element: ScalarType) -> float | int:
    if kind in ("sum", "mean"):
        return _zero(element)
    if kind == "prod":
        return 1.0 if isinstance(element, FloatType) else 1
    if isinstance(element, FloatType):
        return -math.inf if kind == "max" else math.inf
    assert isinstance(element, IntegerType)
    return element.min_value if kind == "max" else element.max_value


COMBINE: dict[str, tuple[str, str, str]] = {
    "sum": ("addf", "addi", "addi"),
    "mean": ("addf", "addi", "addi"),
    "prod": ("mulf", "muli", "muli"),
    "max": ("maximumf", "maxsi", "maxui"),
    "min": ("minimumf", "minsi", "minui"),
}
"""The arith op that folds one element into a reduction's accumulator: (float, signed, unsigned)."""


def _reduce_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    (x,) = args
    kind = op.name.removeprefix("graph.reduce_")
    xt = _tensor(x)
    axes = sorted(normalize_axes(op.attr("axes"), xt.rank))
    out = _result(op)
    if not axes:
        return [x]
    kept = [i for i in range(xt.rank) if i not in axes]
    reduced = TensorType(tuple(xt.shape[i] for i in kept), xt.element)
    init = ex.w.filled(reduced, _identity(kind, xt.element), [(x, kept)])
    float_op, int_op, unsigned_op = COMBINE[kind]
    head = f"linalg.reduce ins({x.name} : {type_text(xt)}) outs({init.name} : {type_text(reduced)}) dimensions = {axes}"
    block_args = [("in", xt.element), ("acc", xt.element)]

    def combine(s: Scalars, xs: Sequence[V]) -> V:
        return s.arith(float_op, int_op, *xs, unsigned_op=unsigned_op)

    result = ex.w.region_op(head, reduced, block_args, combine, "linalg.yield", block_label=False)
    if kind == "mean":
        sizes = [xt.shape[i] for i in axes]
        if not all(isinstance(d, int) for d in sizes):
            raise NotExportable("a mean over symbolic dims")
        count = math.prod(d for d in sizes if isinstance(d, int))
        result = elementwise(ex, reduced, [result], lambda s, xs: s.arith("divf", "divsi", xs[0], s.like(count, xs[0])))
    return [ex.w.reshape(result, out)]


# --- shapes and data movement ----------------------------------------------------------------------
def _reshape_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    return [ex.w.reshape(args[0], _result(op))]


def _transpose_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    (x,) = args
    perm = [int(p) for p in op.attr("perm")]
    out = _result(op)
    if perm == sorted(perm):  # the identity (MLIR's verifier runs out of memory on a rank-0 linalg.transpose)
        return [x]
    init = ex.w.empty(out, [(x, perm)])
    tt = type_text(out)
    text = f"linalg.transpose ins({x.name} : {type_text(x.type)}) outs({init.name} : {tt}) permutation = {perm}"
    return [ex.w.op(text, out)]


def _broadcast_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    return [elementwise(ex, _result(op), args, lambda s, xs: xs[0])]


def _constant_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    value = op.attr("value")
    assert isinstance(value, DenseAttr)
    return [ex.w.dense(value.array, _result(op))]


def _static(t: TensorType, what: str) -> tuple[int, ...]:
    if not t.is_static:
        raise NotExportable(f"{what} of symbolic dims ({t})")
    return t.static_shape


def _extract(ex: Exporter, x: V, offsets: Sequence[int], out: TensorType, strides: Sequence[int] | None = None) -> V:
    """``tensor.extract_slice``; a symbolic dim of ``out`` is the whole of that axis (its size read at run time)."""
    xt = _tensor(x)
    strides = strides or [1] * xt.rank
    sizes = [str(d) if isinstance(d, int) else ex.w.dim(x, axis).name for axis, d in enumerate(out.shape)]
    text = f"tensor.extract_slice {x.name}[{', '.join(map(str, offsets))}] [{', '.join(sizes)}] "
    text += f"[{', '.join(map(str, strides))}] : {type_text(xt)} to {type_text(out)}"
    return ex.w.op(text, out)


def _slice_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    (x,) = args
    shape = _tensor(x).shape
    offsets, strides = [0] * len(shape), [1] * len(shape)
    plan = slice_plan(len(shape), op.attr("starts"), op.attr("ends"), op.attr("axes"), op.attr("steps"))
    for axis, start, end, step in plan:
        dim = shape[axis]
        if not isinstance(dim, int):
            if not is_full_range(start, end, step) or step != 1:
                raise NotExportable(f"a slice of part of the symbolic dim {axis} of {_tensor(x)}")
            continue
        if step < 0:
            return ex.via_graph(op, lambda v: _slice_by_gathers(v, plan))
        picked = range(dim)[slice(start, end, step)]
        offsets[axis], strides[axis] = (picked.start if len(picked) else 0), step
    return [_extract(ex, x, offsets, _result(op), strides)]


def _take(x: Value, positions: Sequence[int], axis: int) -> Value:
    """The elements of ``x`` at ``positions`` along ``axis``: a gather at constant indices."""
    indices = graph.constant(value=DenseAttr.of(np.asarray(list(positions), np.int64)))
    return graph.gather(x, indices, axis=axis)


def _slice_by_gathers(x: Value, plan: Sequence[tuple[int, int, int, int]]) -> Value:
    """A slice with negative steps: each reversed axis is a gather at the positions it picks (static dims)."""
    for axis, start, end, step in plan:
        size = _tensor_type(x).shape[axis]
        assert isinstance(size, int)
        if step < 0:
            x = _take(x, range(size)[slice(start, end, step)], axis)
        else:
            x = graph.slice(x, starts=[start], ends=[end], axes=[axis], steps=[step])
    return x


def _split_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    (x,) = args
    shape = _tensor(x).shape
    axis = normalize_axis(op.attr("axis"), len(shape))
    if not isinstance(shape[axis], int):  # other symbolic dims are taken whole (their size read at run time)
        raise NotExportable(f"a split along the symbolic dim {axis} of {_tensor(x)}")
    results, start = [], 0
    for index, size in enumerate(op.attr("sizes")):
        offsets = [start if i == axis else 0 for i in range(len(shape))]
        results.append(_extract(ex, x, offsets, _result(op, index)))
        start += size
    return results


def _concat_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    out = _result(op)
    axis = normalize_axis(op.attr("axis"), out.rank)
    if len(args) == 1:
        return args
    names = ", ".join(a.name for a in args)
    types = ", ".join(type_text(a.type) for a in args)
    return [ex.w.op(f"tensor.concat dim({axis}) {names} : ({types}) -> {type_text(out)}", out)]


def pad(ex: Exporter, x: V, low: Sequence[int], high: Sequence[int], value: float | int, out: TensorType) -> V:
    """``x`` padded with ``value`` (``tensor.pad``)."""
    if not any(low) and not any(high):
        return x
    xt = _tensor(x)
    head = f"tensor.pad {x.name} low[{', '.join(map(str, low))}] high[{', '.join(map(str, high))}]"
    args = [("i", IndexType()) for _ in low]

    def fill(s: Scalars, xs: Sequence[V]) -> V:
        return s.const(value, xt.element)

    return ex.w.region_op(head, out, args, fill, "tensor.yield", f" : {type_text(xt)} to {type_text(out)}")


def _pad_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    (x,) = args
    pads, mode = list(op.attr("pads")), op.attr("mode")
    rank = _tensor(x).rank
    if mode != "constant" or any(p < 0 for p in pads):
        return ex.via_graph(op, lambda v: _pad_by_gathers(v, pads, mode, op.attr("value")))
    value = op.attr("value")
    element = _tensor(x).element
    fill = value if isinstance(element, FloatType) else int(value)
    return [pad(ex, x, pads[:rank], pads[rank:], fill, _result(op))]


# --- indexing -------------------------------------------------------------------------------------------
def gather(ex: Exporter, data: V, indices: V, axis: int, out: TensorType, elements: bool = False) -> V:
    """``out[..., i, ...] = data[..., indices[i], ...]`` (or, for ``elements``, ``out[p] = data[p with
    indices[p] at axis]``): a ``linalg.generic`` over the result whose body reads ``data`` with
    ``tensor.extract`` at the loop indices and the index (a negative one counts from the end)."""
    dt, it = _tensor(data), _tensor(indices)
    size = dt.shape[axis]
    if not isinstance(size, int):
        raise NotExportable(f"a gather along the symbolic dim {axis} of {dt}")
    spread = 1 if elements else it.rank  # result dims the index fills
    data_axes: list[int | None] = [*range(axis), *[None] * spread, *range(axis + 1, dt.rank)]
    index_axes: list[int | None] = list(range(out.rank)) if elements else [*[None] * axis, *range(it.rank)]
    index_axes += [None] * (out.rank - len(index_axes))
    init = ex.w.empty(out, [(data, data_axes), (indices, index_axes)])
    index_map: list[int | str] = [*range(out.rank)] if elements else [*range(axis, axis + it.rank)]
    maps: list[list[int | str]] = [index_map, list(range(out.rank))]

    def body(s: Scalars, xs: Sequence[V]) -> V:
        index = ex.w.op(f"arith.index_cast {xs[0].name} : {type_text(xs[0].type)} to index", IndexType())
        wrapped = ex.w.op(f"arith.addi {index.name}, {ex.w.index(size).name} : index", IndexType())
        negative = ex.w.op(f"arith.cmpi slt, {index.name}, {ex.w.index(0).name} : index", IntegerType(1))
        index = ex.w.op(f"arith.select {negative.name}, {wrapped.name}, {index.name} : index", IndexType())
        loops = [ex.w.op(f"linalg.index {d} : index", IndexType()).name for d in range(out.rank)]
        coords = [*loops[:axis], index.name, *loops[axis + spread :]]
        return ex.w.op(f"tensor.extract {data.name}[{', '.join(coords)}] : {type_text(dt)}", dt.element)

    return ex.w.generic([indices], maps, init, ["parallel"] * out.rank, body)


def _gather_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    data, indices = args
    axis = normalize_axis(op.attr("axis", 0), _tensor(data).rank)
    return [gather(ex, data, indices, axis, _result(op), elements=op.name == "graph.gather_elements")]


def _pad_by_gathers(x: Value, pads: Sequence[int], mode: str, value: float) -> Value:
    """Negative pads crop (a slice); edge and reflect pads are gathers at the positions ``np.pad`` reads."""
    t = _tensor_type(x)
    rank = t.rank
    shape = _static(t, f"a {mode} pad")
    crops = [(max(0, -pads[i]), shape[i] - max(0, -pads[i + rank])) for i in range(rank)]
    if any(c != (0, n) for c, n in zip(crops, shape)):
        x = graph.slice(x, starts=[c[0] for c in crops], ends=[c[1] for c in crops])
    widths = [max(0, p) for p in pads]
    if mode == "constant":
        return graph.pad(x, pads=widths, value=value)
    for axis in range(rank):
        before, after = widths[axis], widths[axis + rank]
        if before or after:
            size = crops[axis][1] - crops[axis][0]
            positions = np.pad(np.arange(size), (before, after), mode="reflect" if mode == "reflect" else "edge")
            x = _take(x, positions.tolist(), axis)
    return x


# --- convolution and pooling (NCHW and OIHW; other layouts go through transposes) --------------------
NCHW_TO = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 2, 3, 1)}
KERNEL_TO_OIHW = {"OIHW": (0, 1, 2, 3), "HWIO": (3, 2, 0, 1), "OHWI": (0, 3, 1, 2)}


def _spatial_pad(ex: Exporter, x: V, padding: Sequence[int], value: float, extra: Sequence[int] = (0, 0)) -> V:
    top, left, bottom, right = padding
    xt = _tensor(x)
    n, c, h, w = _static(xt, "a padded convolution or pooling")
    out = TensorType((n, c, h + top + bottom + extra[0], w + left + right + extra[1]), xt.element)
    return pad(ex, x, [0, 0, top, left], [0, 0, bottom + extra[0], right + extra[1]], value, out)


def _dense_pair(name: str, values: Sequence[int]) -> str:
    return f"{name} = dense<[{values[0]}, {values[1]}]> : tensor<2xi64>"


def _conv_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    a: dict[str, Any] = dict(op.attributes)
    if len(args) == 3 or a["layout"] != "NCHW" or a["kernel_layout"] != "OIHW":
        return ex.via_graph(op, lambda *xs: _conv_nchw(xs, a))
    x, w = args
    out = _result(op)
    _static(out, "a convolution")
    x = _spatial_pad(ex, x, a["padding"], 0.0 if isinstance(out.element, FloatType) else 0)
    init = ex.w.filled(out, _zero(out.element))
    attrs = f"{{{_dense_pair('dilations', a['dilations'])}, {_dense_pair('strides', a['strides'])}}}"
    groups = a["groups"]
    tt = type_text(out)
    if groups == 1:
        ins = f"ins({x.name}, {w.name} : {type_text(x.type)}, {type_text(w.type)}) outs({init.name} : {tt}) -> {tt}"
        return [ex.w.op(f"linalg.conv_2d_nchw_fchw {attrs} {ins}", out)]
    n, c, h, wd = _tensor(x).static_shape
    o, i, kh, kw = _static(_tensor(w), "a convolution weight")
    gx = ex.w.reshape(x, TensorType((n, groups, c // groups, h, wd), out.element))
    gw = ex.w.reshape(w, TensorType((groups, o // groups, i, kh, kw), out.element))
    gout = TensorType((out.shape[0], groups, o // groups, *out.shape[2:]), out.element)
    ginit = ex.w.filled(gout, _zero(out.element))
    gt = type_text(gout)
    ins = f"ins({gx.name}, {gw.name} : {type_text(gx.type)}, {type_text(gw.type)}) outs({ginit.name} : {gt}) -> {gt}"
    grouped = ex.w.op(f"linalg.conv_2d_ngchw_gfchw {attrs} {ins}", gout)
    return [ex.w.reshape(grouped, out)]


def _conv_nchw(xs: Sequence[Value], a: dict[str, Any]) -> Value:
    """A convolution in NCHW/OIHW without bias, between transposes, plus the bias: what the rule exports."""
    x, w = xs[0], xs[1]
    layout = a["layout"]
    to_nchw = NCHW_TO[layout]
    x = graph.transpose(x, perm=list(np.argsort(to_nchw))) if layout != "NCHW" else x
    if a["kernel_layout"] != "OIHW":
        w = graph.transpose(w, perm=list(KERNEL_TO_OIHW[a["kernel_layout"]]))
    keep = {k: a[k] for k in ("strides", "padding", "dilations", "groups")}
    y = graph.conv2d(x, w, **keep)
    if len(xs) == 3:
        y = graph.add(y, graph.reshape(xs[2], shape=[-1, 1, 1]))
    return graph.transpose(y, perm=list(to_nchw)) if layout != "NCHW" else y


POOLS = {"graph.max_pool2d": ("max", -math.inf), "graph.avg_pool2d": ("sum", 0.0)}


def _pool_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    a: dict[str, Any] = dict(op.attributes)
    if a["layout"] != "NCHW":
        return ex.via_graph(op, lambda x: _pool_nchw(op, x))
    (x,) = args
    kind, fill = POOLS[op.name]
    out = _result(op)
    xt = _tensor(x)
    if not isinstance(xt.element, FloatType):
        raise NotExportable("integer pooling")
    h, w = _static(xt, "pooling")[2:]
    kh, kw = a["kernel"]
    sh, sw = a["strides"]
    dh, dw = a.get("dilations", (1, 1))
    top, left, bottom, right = a["padding"]
    oh, ow = out.static_shape[2:]
    extra = (
        max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + top + bottom)),
        max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + left + right)),
    )
    padded = _spatial_pad(ex, x, a["padding"], fill, extra)
    window = ex.w.empty(TensorType((kh, kw), xt.element))
    init = ex.w.filled(out, fill)
    attrs = f"{{{_dense_pair('dilations', (dh, dw))}, {_dense_pair('strides', (sh, sw))}}}"
    tt = type_text(out)
    ins = f"ins({padded.name}, {window.name} : {type_text(padded.type)}, {type_text(window.type)})"
    pooled = ex.w.op(f"linalg.pooling_nchw_{kind} {attrs} {ins} outs({init.name} : {tt}) -> {tt}", out)
    if kind == "max":
        return [pooled]
    divisor = _avg_divisors(op, xt)
    scale = ex.w.dense(divisor, out)
    return [elementwise(ex, out, [pooled, scale], lambda s, xs: s.op("arith.divf", *xs))]


def _avg_divisors(op: Operation, xt: TensorType) -> np.ndarray:
    """The divisor of each output cell of an NCHW average pool: its sum of ones over its mean of ones."""
    ones = np.ones(xt.static_shape, np.float32)
    means = op.opdef.reference(ones, **op.attributes)
    sums = _window_sums(ones, op)
    return (sums / means).astype(np.float32)


def _window_sums(ones: np.ndarray, op: Operation) -> np.ndarray:
    a: dict[str, Any] = dict(op.attributes)
    top, left, bottom, right = a["padding"]
    kh, kw = a["kernel"]
    sh, sw = a["strides"]
    out = op.results[0].type
    assert isinstance(out, TensorType)
    oh, ow = out.static_shape[2:]
    padded = np.pad(ones, ((0, 0), (0, 0), (top, bottom + kh), (left, right + kw)))
    sums = np.zeros(out.static_shape, np.float32)
    for i in range(oh):
        for j in range(ow):
            sums[:, :, i, j] = padded[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw].sum(axis=(2, 3))
    return sums


def _pool_nchw(op: Operation, x: Value) -> Value:
    to_nchw = NCHW_TO[op.attr("layout")]
    keep: dict[str, Any] = {k: v for k, v in op.attributes.items() if k != "layout"}
    builder = graph.max_pool2d if op.name == "graph.max_pool2d" else graph.avg_pool2d
    y = builder(graph.transpose(x, perm=list(np.argsort(to_nchw))), **keep)
    return graph.transpose(y, perm=list(to_nchw))


# --- ops written as simpler graph ops ---------------------------------------------------------------
def _scalar(value: float, like: Value) -> Value:
    t = like.type
    assert isinstance(t, TensorType)
    return graph.constant(value=DenseAttr.of(np.asarray(value, dtype=np.float64), t.element))


def _norm(x: Value, axes: list[int], eps: float, center: bool) -> Value:
    mean = graph.reduce_mean(x, axes=axes, keepdims=True) if center else None
    d = graph.sub(x, mean) if mean is not None else x
    var = graph.reduce_mean(graph.mul(d, d), axes=axes, keepdims=True)
    return graph.mul(d, graph.rsqrt(graph.add(var, _scalar(eps, x))))


def _layer_norm(op: Operation) -> Callable[..., Value]:
    grouped = op.opdef.group_operands(list(op.operands))
    present = [spec.name for spec, v in zip(op.opdef.operands[1:], grouped[1:]) if v is not None]

    def build(x: Value, *params: Value) -> Value:
        rank = _rank(x)
        axes = list(range(normalize_axis(op.attr("axis"), rank), rank))
        y = _norm(x, axes, op.attr("eps"), center=op.name == "graph.layer_norm")
        for name, p in zip(present, params):
            y = graph.mul(y, p) if name == "weight" else graph.add(y, p)
        return y

    return build


def _rank(v: Value) -> int:
    assert isinstance(v.type, TensorType)
    return v.type.rank


def _batch_norm(op: Operation) -> Callable[..., Value]:
    def build(x: Value, scale: Value, bias: Value, mean: Value, var: Value) -> Value:
        rank = _rank(x)
        axis = normalize_axis(op.attr("axis"), rank)

        def along(v: Value) -> Value:
            return graph.reshape(v, shape=[-1] + [1] * (rank - axis - 1))

        inv = graph.rsqrt(graph.add(along(var), _scalar(op.attr("eps"), x)))
        return graph.add(graph.mul(graph.mul(graph.sub(x, along(mean)), inv), along(scale)), along(bias))

    return build


def _log_softmax(op: Operation) -> Callable[..., Value]:
    def build(x: Value) -> Value:
        axis = normalize_axis(op.attr("axis"), _rank(x))
        shifted = graph.sub(x, graph.reduce_max(x, axes=[axis], keepdims=True))
        return graph.sub(shifted, graph.log(graph.reduce_sum(graph.exp(shifted), axes=[axis], keepdims=True)))

    return build


def _global_pool(op: Operation) -> Callable[..., Value]:
    reduce = graph.reduce_mean if op.name == "graph.global_avg_pool2d" else graph.reduce_max
    axes = [2, 3] if op.attr("layout") == "NCHW" else [1, 2]
    return lambda x: reduce(x, axes=axes, keepdims=True)


def _attention(op: Operation) -> Callable[..., Value]:
    def build(q: Value, k: Value, v: Value, mask: Value | None = None) -> Value:
        scores = graph.mul(graph.matmul(q, k, transpose_b=True), _scalar(op.attr("scale"), q))
        assert isinstance(scores.type, TensorType)
        rows, cols = scores.type.shape[-2:]
        if op.attr("causal"):
            if not isinstance(rows, int) or not isinstance(cols, int):
                raise NotExportable("a causal attention over symbolic lengths")
            keep = graph.constant(value=DenseAttr.of(np.tril(np.ones((rows, cols), bool))))
            scores = graph.where(keep, scores, _scalar(-math.inf, q))
        if mask is not None and isinstance(mask.type, TensorType) and mask.type.element == IntegerType(1):
            scores = graph.where(mask, scores, _scalar(-math.inf, q))
        elif mask is not None:
            scores = graph.add(scores, mask)
        return graph.matmul(graph.softmax(scores, axis=-1), v)

    return build


def _cumsum(op: Operation) -> Callable[..., Value]:
    """A cumulative sum as a masked sum over a constant 0/1 matrix along the axis (moved last for it): each
    output sums the inputs its mask row selects, so an infinite input reaches only the outputs it is summed
    into (a product with the matrix would give inf * 0 = NaN everywhere else)."""

    def build(x: Value) -> Value:
        t = _tensor_type(x)
        axis = normalize_axis(op.attr("axis"), t.rank)
        size = t.shape[axis]
        if not isinstance(size, int):
            raise NotExportable("a cumsum along a symbolic dim")
        rows, cols = np.indices((size, size))
        keeps = {(False, False): rows <= cols, (True, False): rows < cols, (False, True): rows >= cols}
        mask = keeps.get((op.attr("exclusive"), op.attr("reverse")), rows > cols)
        perm = [*(i for i in range(t.rank) if i != axis), axis]
        moved = graph.transpose(x, perm=perm) if axis != t.rank - 1 else x
        terms = graph.where(
            graph.constant(value=DenseAttr.of(mask)), graph.unsqueeze(moved, axes=[t.rank]), _scalar(0, x)
        )
        y = graph.reduce_sum(terms, axes=[t.rank - 1])
        return graph.transpose(y, perm=list(np.argsort(perm))) if axis != t.rank - 1 else y

    return build


def _arg_extreme(op: Operation) -> Callable[..., Value]:
    """argmax/argmin as the least (or, with select_last_index, the greatest) index where the element equals
    the reduced extreme or is NaN (a NaN wins): a select against a constant iota, then a reduction."""

    def build(x: Value) -> Value:
        t = _tensor_type(x)
        axis = normalize_axis(op.attr("axis"), t.rank)
        size = t.shape[axis]
        if not isinstance(size, int):
            raise NotExportable(f"{op.name} along a symbolic dim")
        extreme = (graph.reduce_max if op.name == "graph.argmax" else graph.reduce_min)(x, axes=[axis], keepdims=True)
        hit = graph.eq(x, extreme)
        if isinstance(t.element, FloatType):
            hit = graph.or_(hit, graph.ne(x, x))
        iota = np.arange(size, dtype=np.int64).reshape([-1 if i == axis else 1 for i in range(t.rank)])
        last = op.attr("select_last_index")
        miss = graph.constant(value=DenseAttr.of(np.asarray(-1 if last else size, np.int64)))
        picked = graph.where(hit, graph.constant(value=DenseAttr.of(iota)), miss)
        reduce = graph.reduce_max if last else graph.reduce_min
        return reduce(picked, axes=[axis], keepdims=op.attr("keepdims"))

    return build


def _resize(op: Operation) -> Callable[..., Value]:
    """A nearest-neighbour resize as a gather per spatial axis, at the source positions the op's own
    reference semantics pick (computed on a tensor holding each cell's row, then column, number)."""

    def build(x: Value) -> Value:
        if op.attr("mode") != "nearest":
            raise NotExportable(f"a {op.attr('mode')} resize (only nearest ones are gathers)")
        t = _tensor_type(x)
        shape = _static(t, "a resize")
        h_axis, w_axis = (2, 3) if op.attr("layout") == "NCHW" else (1, 2)
        for axis, other in ((h_axis, w_axis), (w_axis, h_axis)):
            probe = np.zeros(shape, np.float32)
            probe += np.arange(shape[axis], dtype=np.float32).reshape([-1 if i == axis else 1 for i in range(4)])
            picked = op.opdef.reference(probe, **op.opdef.complete_attrs(dict(op.attributes)))
            line = np.moveaxis(picked, (axis, other), (0, 1))[:, 0].reshape(picked.shape[axis], -1)[:, 0]
            x = _take(x, line.astype(np.int64).tolist(), axis)
        return x

    return build


def _triangle(op: Operation) -> Callable[..., Value]:
    """tril/triu as a select with a constant mask over the last two dims."""

    def build(x: Value) -> Value:
        assert isinstance(x.type, TensorType)
        rows, cols = x.type.shape[-2:]
        if not isinstance(rows, int) or not isinstance(cols, int):
            raise NotExportable(f"{op.name} over symbolic dims")
        pick = np.tril if op.name == "graph.tril" else np.triu
        keep = pick(np.ones((rows, cols), bool), op.attr("k"))
        return graph.where(graph.constant(value=DenseAttr.of(keep)), x, _scalar(0, x))

    return build


def _tile(op: Operation) -> Callable[..., Value]:
    """tile as a broadcast along a new axis before each dim, then a reshape that merges each pair."""

    def build(x: Value) -> Value:
        assert isinstance(x.type, TensorType)
        shape = _static(x.type, "a tile")
        repeats = list(op.attr("repeats"))
        spread = graph.reshape(x, shape=[d for n in shape for d in (1, n)])
        wide = graph.broadcast_to(spread, shape=[d for r, n in zip(repeats, shape) for d in (r, n)])
        return graph.reshape(wide, shape=[r * n for r, n in zip(repeats, shape)])

    return build


def _matmul_packed(op: Operation) -> Callable[..., Value]:
    """B[k, p * W + j] = packed[p, k, j], cut to ``cols`` columns, then a plain matmul."""

    def build(a: Value, packed: Value) -> Value:
        assert isinstance(packed.type, TensorType)
        panels, _, width = packed.type.shape
        if not isinstance(panels, int) or not isinstance(width, int):
            raise NotExportable("packed panels of symbolic size")
        b = graph.reshape(graph.transpose(packed, perm=[1, 0, 2]), shape=[-1, panels * width])
        b = graph.slice(b, starts=[0], ends=[op.attr("cols")], axes=[1])
        return graph.matmul(a, b, transpose_a=op.attr("transpose_a"))

    return build


def _expanded(params: Value, q: QuantizedType, shape: tuple[int, ...]) -> Value:
    """Scales or zero points (laid out by the quantized type) repeated along a per-group axis, so that they
    broadcast against codes of ``shape``."""
    if q.granularity != "per_group":
        return params
    assert q.axis is not None and q.group_size is not None
    axis = q.axis % len(shape)
    laid = list(scale_shape(q, shape))
    spread = graph.reshape(params, shape=[*laid[: axis + 1], 1, *laid[axis + 1 :]])
    wide = graph.broadcast_to(spread, shape=[*laid[: axis + 1], q.group_size, *laid[axis + 1 :]])
    return graph.reshape(wide, shape=[*laid[:axis], shape[axis], *laid[axis + 1 :]])


def _quant_operands(x: Value, what: str) -> tuple[TensorType, QuantizedType]:
    t = x.type
    if not isinstance(t, TensorType) or not isinstance(t.element, QuantizedType):
        raise NotExportable(f"{what} is not a quantized tensor")
    _static(t, what)
    return t, t.element


def dequantized(q: Value, scale: Value, zero: Value | None) -> Value:
    """``(q - zero) * scale`` in the expressed float type, on the k-bit codes."""
    t, qt = _quant_operands(q, "a dequantized tensor")
    codes = graph.cast(q, dtype=qt.expressed)
    if zero is not None:
        codes = graph.sub(codes, _expanded(zero, qt, t.static_shape))
    return graph.mul(codes, _expanded(scale, qt, t.static_shape))


def _dequantize(op: Operation) -> Callable[..., Value]:
    return lambda q, scale, zero=None: dequantized(q, scale, zero)


def _quantize(op: Operation) -> Callable[..., Value]:
    """``clamp(round_half_even(x / scale + zero), qmin, qmax)`` cast to the k-bit codes."""
    qt = op.attr("type")
    assert isinstance(qt, QuantizedType)

    def build(x: Value, scale: Value, zero: Value | None = None) -> Value:
        shape = _static(_tensor_type(x), "a quantized tensor")
        y = graph.div(x, _expanded(scale, qt, shape))
        if zero is not None:
            y = graph.add(y, _expanded(zero, qt, shape))
        low, high = qt.code_range
        return graph.cast(graph.clamp(graph.round(y), min=float(low), max=float(high)), dtype=qt)

    return build


def _quant_embedding(op: Operation) -> Callable[..., Value]:
    """Rows of the dequantized table (the whole table is dequantized: exact, if not the fastest form)."""
    return lambda w, indices, scale, zero=None: graph.gather(dequantized(w, scale, zero), indices, axis=0)


def _quant_matmul(op: Operation) -> Callable[..., Value]:
    return lambda x, w, scale, zero=None: graph.matmul(x, dequantized(w, scale, zero), transpose_b=True)


def _quant_matmul_packed(op: Operation) -> Callable[..., Value]:
    """A matmul with constant weights packed for the CPU: the codes unpacked at export time into a
    per-group quantized constant, the padded group-major or panel-major scales and zero points cut back to
    that layout."""
    bits, cols, group, lanes = (int(op.attr(k)) for k in ("bits", "cols", "group", "lanes"))

    def build(x: Value, packed: Value, scale: Value, zero: Value) -> Value:
        source = packed.defining_op()
        if source is None or source.name != "graph.constant":
            raise NotExportable("packed weights that are not a constant")
        params = _static(_tensor_type(scale), "packed scales")
        depth = params[-2 if len(params) == 3 else 0] * group
        layout = str(op.attr("layout", "interleaved"))
        codes = layouts.unpack(source.attr("value").array, bits, False, layout, (cols, depth), lanes)
        expressed = _tensor_type(x).element
        assert isinstance(expressed, FloatType)
        qt = QuantizedType(bits, False, expressed, "per_group", axis=1, group_size=group)
        weight = graph.constant(value=DenseAttr.of(codes, qt))

        def per_row(params: Value) -> Value:
            if len(_tensor_type(params).shape) == 3:  # panel-major [panels, groups, lanes]
                rows = graph.reshape(graph.transpose(params, perm=[0, 2, 1]), shape=[-1, depth // group])
                return graph.slice(rows, starts=[0], ends=[cols], axes=[0])
            return graph.transpose(graph.slice(params, starts=[0], ends=[cols], axes=[1]), perm=[1, 0])

        return graph.matmul(x, dequantized(weight, per_row(scale), per_row(zero)), transpose_b=True)

    return build


def _tensor_type(v: Value) -> TensorType:
    assert isinstance(v.type, TensorType)
    return v.type


DECOMPOSE: dict[str, Callable[[Operation], Callable[..., Value]]] = {
    "quant.dequantize": _dequantize,
    "quant.quantize": _quantize,
    "quant.matmul": _quant_matmul,
    "quant.embedding": _quant_embedding,
    "quant.matmul_packed": _quant_matmul_packed,
    "graph.attention": _attention,
    "graph.cumsum": _cumsum,
    "graph.argmax": _arg_extreme,
    "graph.argmin": _arg_extreme,
    "graph.resize": _resize,
    "graph.tril": _triangle,
    "graph.triu": _triangle,
    "graph.tile": _tile,
    "graph.matmul_packed": _matmul_packed,
    "graph.layer_norm": _layer_norm,
    "graph.rms_norm": _layer_norm,
    "graph.batch_norm": _batch_norm,
    "graph.log_softmax": _log_softmax,
    "graph.global_avg_pool2d": _global_pool,
    "graph.global_max_pool2d": _global_pool,
}
"""Graph ops exported as simpler graph ops: each entry builds the replacement from the op's operands."""


def _decompose_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    return ex.via_graph(op, DECOMPOSE[op.name](op))


def _softmax_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    (x,) = args
    out = _result(op)
    axis = normalize_axis(op.attr("axis"), out.rank)
    init = ex.w.empty(out, _sources(out, args))
    tt = type_text(out)
    return [ex.w.op(f"linalg.softmax dimension({axis}) ins({x.name} : {tt}) outs({init.name} : {tt}) -> {tt}", out)]


def _computed_constant_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    """An op without operands (``arange``) is the constant its reference semantics compute."""
    out = _result(op)
    _static(out, op.name)
    return [ex.w.dense(evaluate_op(op, [])[0], out)]


def _fused_rule(ex: Exporter, op: Operation, args: list[V]) -> list[V]:
    """A fused group means its region: its ops are exported in place of it."""
    block = op.regions[0].block
    for arg, value in zip(block.args, args):
        ex.values[arg] = value
    before = len(ex.problems)
    ex.ops(block.ops[:-1])
    if len(ex.problems) > before:
        raise NotExportable(ex.problems.pop().reason)
    return [ex.values[v] for v in block.ops[-1].operands]


RULES: dict[str, Rule] = {
    **{name: _elementwise_rule for name in SCALAR},
    **{name: _decompose_rule for name in DECOMPOSE},
    "graph.constant": _constant_rule,
    "graph.arange": _computed_constant_rule,
    "graph.matmul": _matmul_rule,
    "graph.einsum": _einsum_rule,
    **{f"graph.reduce_{kind}": _reduce_rule for kind in COMBINE},
    "graph.reshape": _reshape_rule,
    "graph.squeeze": _reshape_rule,
    "graph.unsqueeze": _reshape_rule,
    "graph.transpose": _transpose_rule,
    "graph.broadcast_to": _broadcast_rule,
    "graph.slice": _slice_rule,
    "graph.split": _split_rule,
    "graph.concat": _concat_rule,
    "graph.pad": _pad_rule,
    "graph.softmax": _softmax_rule,
    "graph.conv2d": _conv_rule,
    "graph.max_pool2d": _pool_rule,
    "graph.avg_pool2d": _pool_rule,
    "graph.fused": _fused_rule,
    "graph.gather": _gather_rule,
    "graph.embedding": _gather_rule,
    "graph.gather_elements": _gather_rule,
}
"""The export rule of each graph op (ops not listed are reported as unsupported)."""


def exportable_ops() -> list[str]:
    """The graph ops with an export rule."""
    return sorted(RULES)


def export_text(module: Operation) -> str:
    """The upstream-MLIR text of a graph-dialect ``module``; raises :class:`ExportError` listing every op
    it cannot export."""
    return Exporter().module(module)
