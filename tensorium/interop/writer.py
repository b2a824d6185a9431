"""A writer of upstream MLIR text: SSA names, types, literals, and the linalg/tensor building blocks the
exporter composes (``linalg.generic`` with a scalar body, fills, reshapes, dynamic sizes).

Values are plain records of an SSA name and a type; the writer only appends lines, so what it writes is
checked afterwards by MLIR itself (:func:`tensorium.interop.bindings.verify_text`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.types import FloatType, IndexType, IntegerType, QuantizedType, ScalarType, Sym, TensorType


@dataclass(frozen=True)
class V:
    """An MLIR SSA value the writer made: its name (with ``%``) and its Tensorium type."""

    name: str
    type: TensorType | ScalarType


def storage(t: ScalarType) -> ScalarType:
    """The integer the k-bit codes of a quantized element type are held in, a byte (IREE cannot compile
    constants of sub-byte types, and every code fits in one); any other type itself."""
    return IntegerType(8, t.signed) if isinstance(t, QuantizedType) else t


def element_text(t: ScalarType) -> str:
    """MLIR's spelling of an element type: integers are signless (``u8`` becomes ``i8``), quantized types are
    the bytes holding their codes (``!quant<u4:f32, ...>`` becomes ``i8``)."""
    t = storage(t)
    if isinstance(t, IntegerType):
        return f"i{t.width}"
    if isinstance(t, (FloatType, IndexType)):
        return str(t)
    raise ExportTypeError(f"element type {t} has no upstream MLIR form")


def type_text(t: TensorType | ScalarType) -> str:
    """``tensor<4x?xf32>`` for a tensor (named dims become ``?``), the element spelling for a scalar."""
    if isinstance(t, TensorType):
        dims = "".join(("?" if isinstance(d, Sym) else str(d)) + "x" for d in t.shape)
        return f"tensor<{dims}{element_text(t.element)}>"
    return element_text(t)


class ExportTypeError(ValueError):
    """A type that upstream MLIR cannot spell (quantized, buffers)."""


def float_literal(value: float, t: FloatType) -> str:
    """A float attribute literal: decimal when finite, the bit pattern in hex otherwise (inf, NaN)."""
    if math.isfinite(value):
        text = repr(float(np.dtype(_NUMPY_FLOAT[t.name]).type(value)))
        mantissa, e, exponent = text.partition("e")
        return f"{mantissa}.0{e}{exponent}" if "." not in mantissa else text  # MLIR wants a '.': 1.0e-06
    bits = {
        "f16": lambda v: np.float16(v).view(np.uint16),
        "bf16": lambda v: np.float32(v).view(np.uint32) >> 16,
        "f32": lambda v: np.float32(v).view(np.uint32),
        "f64": lambda v: struct.unpack("<Q", struct.pack("<d", v))[0],
    }[t.name](value)
    return f"0x{int(bits):X}"


_NUMPY_FLOAT = {"f16": "float16", "bf16": "float32", "f32": "float32", "f64": "float64"}
"""The numpy type a float literal is rounded to first (bf16 is held in float32, as Tensorium stores it)."""


def scalar_literal(value: float | int | bool, t: ScalarType) -> str:
    """The literal of one scalar of type ``t`` (``true``, ``3``, ``1.5``, ``0x7F800000``)."""
    if isinstance(t, FloatType):
        return float_literal(float(value), t)
    if isinstance(t, IntegerType) and t.is_bool:
        return "true" if value else "false"
    return str(int(value))


def dense_literal(array: np.ndarray, t: TensorType) -> str:
    """``dense<...> : tensor<...>`` holding ``array``: a splat, raw little-endian bytes in hex for the byte
    sized types, nested lists otherwise (i1 and odd integer widths)."""
    element = storage(t.element)
    flat = array.reshape(-1)
    if flat.size and (flat == flat[0]).all() and not (flat.dtype.kind == "f" and np.isnan(flat).any()):
        return f"dense<{scalar_literal(flat[0].item(), element)}> : {type_text(t)}"
    if flat.size == 0:
        return f'dense<"0x"> : {type_text(t)}'
    raw = _raw_bytes(array, element)
    if raw is not None:
        return f'dense<"0x{raw.hex().upper()}"> : {type_text(t)}'
    return f"dense<{_nested(array, element)}> : {type_text(t)}"


def _raw_bytes(array: np.ndarray, element: ScalarType) -> bytes | None:
    if isinstance(element, FloatType):
        if element.name == "bf16":
            return (np.ascontiguousarray(array, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
        return np.ascontiguousarray(array, _NUMPY_FLOAT[element.name]).astype(f"<{_float_code(element)}").tobytes()
    if isinstance(element, IntegerType) and element.width in (8, 16, 32, 64):
        kind = "i" if element.signed else "u"
        return np.ascontiguousarray(array).astype(f"<{kind}{element.width // 8}").tobytes()
    return None


def _float_code(t: FloatType) -> str:
    return {"f16": "f2", "f32": "f4", "f64": "f8"}[t.name]


def _nested(array: np.ndarray, element: ScalarType) -> str:
    if array.ndim == 0:
        return scalar_literal(array.item(), element)
    return "[" + ", ".join(_nested(a, element) for a in array) + "]"


def affine_map(num_dims: int, results: Sequence[int | str]) -> str:
    """``affine_map<(d0, d1) -> (d1, 0)>``: each result is a loop dim index or a literal expression."""
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    exprs = ", ".join(f"d{r}" if isinstance(r, int) else r for r in results)
    return f"affine_map<({dims}) -> ({exprs})>"


Body = Callable[["Scalars", Sequence[V]], V]
"""Writes a ``linalg.generic`` body: given the block arguments (inputs, then the output), returns what to yield."""


class Writer:
    """Appends MLIR lines with fresh SSA names; the building blocks of the exporter."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = "    "
        self._count = 0

    def fresh(self, hint: str = "v") -> str:
        self._count += 1
        return f"%{hint}{self._count}"

    def emit(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def op(self, text: str, result: TensorType | ScalarType, hint: str = "v") -> V:
        """Write ``%name = text`` and return the new value."""
        value = V(self.fresh(hint), result)
        self.emit(f"{value.name} = {text}")
        return value

    # --- scalars and sizes ---------------------------------------------------------------------------
    def constant(self, value: float | int | bool, t: ScalarType) -> V:
        if isinstance(t, IntegerType) and t.is_bool:  # MLIR spells an i1 constant `true`, with no type
            return self.op(f"arith.constant {scalar_literal(value, t)}", t, "c")
        return self.op(f"arith.constant {scalar_literal(value, t)} : {type_text(t)}", t, "c")

    def index(self, value: int) -> V:
        return self.constant(value, IndexType())

    def dim(self, value: V, axis: int) -> V:
        """The run-time size of ``value`` along ``axis`` (``tensor.dim``)."""
        assert isinstance(value.type, TensorType)
        return self.op(f"tensor.dim {value.name}, {self.index(axis).name} : {type_text(value.type)}", IndexType(), "d")

    def sizes(self, t: TensorType, sources: Sequence[tuple[V, Sequence[int | None]]]) -> list[str]:
        """SSA names of the dynamic sizes of ``t``: each comes from the first source whose axis (given per
        result axis, None for none) holds a symbolic dim; the exporter reports a size nothing gives."""
        names = []
        for axis, d in enumerate(t.shape):
            if isinstance(d, int):
                continue
            for value, axes in sources:
                src = axes[axis]
                assert isinstance(value.type, TensorType)
                if src is not None and isinstance(value.type.shape[src], Sym):
                    names.append(self.dim(value, src).name)
                    break
            else:
                raise DynamicSizeError(f"cannot tell the run-time size of dim {axis} of {t}")
        return names

    def empty(self, t: TensorType, sources: Sequence[tuple[V, Sequence[int | None]]] = ()) -> V:
        sizes = ", ".join(self.sizes(t, sources))
        return self.op(f"tensor.empty({sizes}) : {type_text(t)}", t, "e")

    def filled(
        self, t: TensorType, value: float | int | bool, sources: Sequence[tuple[V, Sequence[int | None]]] = ()
    ) -> V:
        """A tensor of type ``t`` holding ``value`` everywhere (``linalg.fill``)."""
        init = self.empty(t, sources)
        scalar = self.constant(value, t.element)
        tt = type_text(t)
        return self.op(f"linalg.fill ins({scalar.name} : {type_text(t.element)}) outs({init.name} : {tt}) -> {tt}", t)

    def dense(self, array: np.ndarray, t: TensorType) -> V:
        return self.op(f"arith.constant {dense_literal(array, t)}", t, "cst")

    # --- structured ops ------------------------------------------------------------------------------
    def region_op(
        self,
        head: str,
        result: TensorType,
        args: Sequence[tuple[str, ScalarType]],
        body: Body,
        terminator: str,
        tail: str = "",
        block_label: bool = True,
    ) -> V:
        """``%r = <head> { ^bb0(args): <body> <terminator> v } <tail>``: an op with one single-block region.
        ``args`` are (name hint, type) of the block arguments; ``body`` gets them and returns what to yield."""
        value = V(self.fresh(), result)
        block_args = [V(self.fresh(hint), t) for hint, t in args]
        signature = ", ".join(f"{a.name}: {type_text(a.type)}" for a in block_args)
        if block_label:
            self.emit(f"{value.name} = {head} {{")
            self.emit(f"^bb0({signature}):")
        else:
            self.emit(f"{value.name} = {head} ({signature}) {{")
        outer = self.indent
        self.indent += "  "
        yielded = body(Scalars(self), block_args)
        self.emit(f"{terminator} {yielded.name} : {type_text(yielded.type)}")
        self.indent = outer
        self.emit(f"}}{tail}")
        return value

    def generic(
        self,
        inputs: Sequence[V],
        maps: Sequence[Sequence[int | str]],
        init: V,
        iterators: Sequence[str],
        body: Body,
    ) -> V:
        """A ``linalg.generic`` over ``len(iterators)`` loops: ``maps`` gives the indexing of each input and
        then of ``init``; ``body`` writes the scalar computation."""
        n = len(iterators)
        all_maps = ", ".join(affine_map(n, m) for m in maps)
        kinds = ", ".join(f'"{k}"' for k in iterators)
        assert isinstance(init.type, TensorType)
        out = type_text(init.type)
        ins = f" ins({', '.join(v.name for v in inputs)} : {', '.join(type_text(v.type) for v in inputs)})"
        head = f"linalg.generic {{indexing_maps = [{all_maps}], iterator_types = [{kinds}]}}"
        head += f"{ins if inputs else ''} outs({init.name} : {out})"
        args = [("in", _element(v)) for v in [*inputs, init]]
        return self.region_op(head, init.type, args, body, "linalg.yield", f" -> {out}")

    def reshape(self, value: V, t: TensorType) -> V:
        """``value`` with the static shape of ``t``: collapsed to one dim, then expanded (either step is left
        out where the shape already has that rank)."""
        assert isinstance(value.type, TensorType)
        src = value.type
        if src.shape == t.shape:
            return value
        if not (src.is_static and t.is_static):
            return self._dynamic_reshape(value, t)
        if src.rank == 0 or t.rank == 0:  # to or from a single element: one op with no reassociation groups
            kind = "expand" if t.rank else "collapse"
            output = f" output_shape [{', '.join(map(str, t.shape))}]" if t.rank else ""
            return self.op(f"tensor.{kind}_shape {value.name} []{output} : {type_text(src)} into {type_text(t)}", t)
        flat = TensorType((src.num_elements or 0,), src.element)
        if src.rank != 1:
            value = self.op(
                f"tensor.collapse_shape {value.name} [{_group(src.rank)}] : {type_text(src)} into {type_text(flat)}",
                flat,
            )
        if t.rank != 1:
            shape = ", ".join(map(str, t.shape))
            value = self.op(
                f"tensor.expand_shape {value.name} [{_group(t.rank)}] output_shape [{shape}] : "
                f"{type_text(flat)} into {type_text(t)}",
                t,
            )
        return value

    def _dynamic_reshape(self, value: V, t: TensorType) -> V:
        """``tensor.reshape`` to a shape computed at run time: its one symbolic dim is the element count
        divided by the product of its static dims (an i64 shape tensor: IREE keeps index values out of
        its dispatches)."""
        src = value.type
        assert isinstance(src, TensorType)
        if sum(1 for d in t.shape if isinstance(d, Sym)) != 1:
            raise DynamicSizeError(f"a reshape of {src} to {t}: only one symbolic result dim can be computed")
        count = self.index(math.prod(d for d in src.shape if isinstance(d, int)))
        for axis, d in enumerate(src.shape):
            if isinstance(d, Sym):
                count = self.op(f"arith.muli {count.name}, {self.dim(value, axis).name} : index", IndexType())
        known = self.index(math.prod(d for d in t.shape if isinstance(d, int)))
        size = self.op(f"arith.divui {count.name}, {known.name} : index", IndexType())
        wide = self.op(f"arith.index_cast {size.name} : index to i64", IntegerType(64))
        sizes = ", ".join(wide.name if isinstance(d, Sym) else self.constant(d, IntegerType(64)).name for d in t.shape)
        shape_type = TensorType((t.rank,), IntegerType(64))
        shape = self.op(f"tensor.from_elements {sizes} : {type_text(shape_type)}", shape_type)
        text = f"tensor.reshape {value.name}({shape.name}) : ({type_text(src)}, {type_text(shape_type)}) -> "
        return self.op(text + type_text(t), t)


def _group(rank: int) -> str:
    """The reassociation that joins ``rank`` dims into one (none for rank 0)."""
    return "[" + ", ".join(map(str, range(rank))) + "]" if rank else ""


def _element(v: V) -> ScalarType:
    return v.type.element if isinstance(v.type, TensorType) else v.type


class DynamicSizeError(ValueError):
    """A size the exporter cannot compute at run time (a reshape of symbolic dims, a size no operand has)."""


class Scalars:
    """Scalar arith/math ops inside a ``linalg.generic`` body, picking the float or integer form by type."""

    def __init__(self, writer: Writer):
        self.w = writer

    def op(self, name: str, *args: V, result: ScalarType | None = None) -> V:
        t = result if result is not None else args[0].type
        assert isinstance(t, ScalarType)
        operands = ", ".join(a.name for a in args)
        return self.w.op(f"{name} {operands} : {type_text(args[0].type)}", t)

    def const(self, value: float | int | bool, t: ScalarType) -> V:
        return self.w.constant(value, t)

    def like(self, value: float | int | bool, x: V) -> V:
        """A constant of ``x``'s type."""
        assert isinstance(x.type, ScalarType)
        return self.const(value, x.type)

    def arith(self, float_op: str, int_op: str, *args: V, unsigned_op: str | None = None) -> V:
        """``arith.<float_op>`` on floats, ``arith.<int_op>`` on integers, ``unsigned_op`` on unsigned ones and
        on i1 (whose true is -1 to the signed ops, so ``maxsi`` would pick false)."""
        t = args[0].type
        if isinstance(t, FloatType):
            return self.op(f"arith.{float_op}", *args)
        if unsigned_op is not None and isinstance(t, IntegerType) and (not t.signed or t.is_bool):
            return self.op(f"arith.{unsigned_op}", *args)
        return self.op(f"arith.{int_op}", *args)

    def math(self, name: str, x: V) -> V:
        return self.op(f"math.{name}", x)

    def cmp(self, predicate: str, a: V, b: V) -> V:
        """A comparison by Tensorium's name (eq, ne, lt, le, gt, ge): ordered for floats (``ne`` unordered,
        so NaN != NaN), signed or unsigned for integers."""
        t = a.type
        if isinstance(t, FloatType):
            pred = {"eq": "oeq", "ne": "une"}.get(predicate, "o" + predicate)
            kind = "cmpf"
        else:
            unsigned = isinstance(t, IntegerType) and (not t.signed or t.is_bool)
            pred = predicate if predicate in ("eq", "ne") else ("u" if unsigned else "s") + predicate
            kind = "cmpi"
        return self.w.op(f"arith.{kind} {pred}, {a.name}, {b.name} : {type_text(t)}", IntegerType(1), "b")

    def select(self, cond: V, a: V, b: V) -> V:
        return self.w.op(f"arith.select {cond.name}, {a.name}, {b.name} : {type_text(a.type)}", a.type)

    def cast(self, x: V, to: ScalarType) -> V:
        """Tensorium's ``graph.cast`` of one scalar (see docs/mlir_interop.md for where arith differs)."""
        src = storage(x.type) if isinstance(x.type, ScalarType) else x.type
        to = storage(to)
        if src == to:
            return V(x.name, to)
        if isinstance(to, IntegerType) and to.is_bool:
            return self.cmp("ne", x, self.like(0, x))
        if isinstance(src, IntegerType) and isinstance(to, IntegerType) and src.width == to.width:
            return V(x.name, to)
        name = _cast_name(src, to)
        return self.w.op(f"arith.{name} {x.name} : {type_text(src)} to {type_text(to)}", to)


def _cast_name(src: ScalarType | TensorType, to: ScalarType) -> str:
    if isinstance(src, FloatType) and isinstance(to, FloatType):
        return "extf" if to.width > src.width else "truncf"
    if isinstance(src, IntegerType) and isinstance(to, FloatType):
        return "uitofp" if (not src.signed or src.is_bool) else "sitofp"
    if isinstance(src, FloatType) and isinstance(to, IntegerType):
        return "fptosi" if to.signed else "fptoui"
    if isinstance(src, IntegerType) and isinstance(to, IntegerType):
        if to.width < src.width:
            return "trunci"
        return "extui" if (not src.signed or src.is_bool) else "extsi"
    raise ExportTypeError(f"no arith cast from {src} to {to}")
