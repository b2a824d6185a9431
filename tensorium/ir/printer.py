"""The textual form of the IR (MLIR-shaped). :mod:`tensorium.ir.parser` reads it back exactly.

    module {
      func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
        %0 = graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
        func.return %0 : tensor<4x8xf32>
      }
    }

Every op that is not a module, function or return prints in one uniform form:
``%r = dialect.op %a, %b ({regions}) {attrs} : (operand types) -> result types``.
Attributes equal to their declared default are left out.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable

import numpy as np

from .attributes import Attr, DenseAttr
from .core import Block, Operation, Region, Value
from .types import FunctionType, Type

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
DENSE_HEX_THRESHOLD = 64


def format_float(x: float) -> str:
    """A float as text that parses back to the same double (always with '.', 'e', inf or nan)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(float(x))
    return text if ("." in text or "e" in text or "n" in text) else text + ".0"


def _format_scalar(x: object) -> str:
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (float, np.floating)):
        return format_float(float(x))
    return str(int(x))  # type: ignore[call-overload]


def format_dense(attr: DenseAttr, digest: bool = False) -> str:
    """``dense<...> : tensor<...>``: a splat, nested lists, or hex bytes for large constants.

    With ``digest`` a large constant prints as ``"sha256:..."`` of its bytes instead: text for fingerprints
    (cache keys), which costs a hash instead of a hex dump and does not parse back.
    """
    arr = attr.array
    if attr.is_splat:
        body = _format_scalar(arr.reshape(-1)[0])
    elif arr.size > DENSE_HEX_THRESHOLD or arr.size == 0:
        data = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))
        if digest:
            body = '"sha256:' + hashlib.sha256(data.data).hexdigest() + '"'
        else:
            body = '"0x' + data.tobytes().hex().upper() + '"'
    else:
        body = _format_nested(arr)
    return f"dense<{body}> : {attr.type}"


def _format_nested(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return _format_scalar(arr.item())
    return "[" + ", ".join(_format_nested(a) for a in arr) + "]"


def format_attr(value: Attr, digest: bool = False) -> str:
    """The text of one attribute value (``digest``: see :func:`format_dense`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v, digest) for v in value) + "]"
    if isinstance(value, DenseAttr):
        return format_dense(value, digest)
    if isinstance(value, Type):
        return str(value)
    raise TypeError(f"cannot print attribute value {value!r}")


def format_attr_dict(attrs: dict[str, Attr], digest: bool = False) -> str:
    if not attrs:
        return ""
    return "{" + ", ".join(f"{k} = {format_attr(v, digest)}" for k, v in attrs.items()) + "}"


def _types(types: Iterable[Type]) -> str:
    return ", ".join(str(t) for t in types)


def format_result_types(types: list[Type]) -> str:
    return str(types[0]) if len(types) == 1 else f"({_types(types)})"


class _Namer:
    """SSA names for one function: name hints where free, else sequential numbers."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.next_number = 0

    def name(self, value: Value) -> str:
        found = self.names.get(id(value))
        if found is None:
            raise KeyError(id(value))
        return found

    def define(self, value: Value, fallback_prefix: str = "") -> str:
        hint = value.name_hint
        if hint and _IDENT.fullmatch(hint) and hint not in self.used:
            name = hint
        elif fallback_prefix:
            i = 0
            while f"{fallback_prefix}{i}" in self.used:
                i += 1
            name = f"{fallback_prefix}{i}"
        else:
            while str(self.next_number) in self.used:
                self.next_number += 1
            name = str(self.next_number)
            self.next_number += 1
        self.used.add(name)
        self.names[id(value)] = name
        return name


class Printer:
    """Prints ops with consistent names; one instance per printed module or function."""

    def __init__(self, indent: str = "  ", digest: bool = False):
        self.indent = indent
        self.digest = digest
        self.lines: list[str] = []
        self.namer = _Namer()

    def ref(self, value: Value) -> str:
        try:
            return "%" + self.namer.name(value)
        except KeyError:
            return "%<<undefined>>"

    def print_op(self, op: Operation, depth: int = 0) -> None:
        pad = self.indent * depth
        if op.name == "builtin.module":
            head = "module"
            extra = format_attr_dict(op.attributes, self.digest)
            if extra:
                head += " attributes " + extra
            self.lines.append(pad + head + " {")
            for inner in op.regions[0].block.ops:
                self.print_op(inner, depth + 1)
            self.lines.append(pad + "}")
        elif op.name == "func.func":
            self._print_func(op, depth)
        elif op.name == "func.return":
            self._print_return(op, pad)
        else:
            self._print_generic(op, depth)

    def _print_func(self, op: Operation, depth: int) -> None:
        pad = self.indent * depth
        self.namer = _Namer()
        ftype = op.attributes["function_type"]
        assert isinstance(ftype, FunctionType)
        block = op.regions[0].blocks[0]
        args = ", ".join(f"%{self.namer.define(a, 'arg')}: {a.type}" for a in block.args)
        head = f"func.func @{op.attributes['sym_name']}({args})"
        if ftype.results:
            head += " -> " + format_result_types(list(ftype.results))
        extra = {k: v for k, v in op.attributes.items() if k not in ("sym_name", "function_type")}
        if extra:
            head += " attributes " + format_attr_dict(extra, self.digest)
        self.lines.append(pad + head + " {")
        for inner in block.ops:
            self.print_op(inner, depth + 1)
        self.lines.append(pad + "}")

    def _print_return(self, op: Operation, pad: str) -> None:
        if not op.operands:
            self.lines.append(pad + "func.return")
            return
        refs = ", ".join(self.ref(v) for v in op.operands)
        self.lines.append(f"{pad}func.return {refs} : {_types(v.type for v in op.operands)}")

    def _print_generic(self, op: Operation, depth: int) -> None:
        pad = self.indent * depth
        text = ""
        if op.results:
            first = self.namer.define(op.results[0])
            for i, r in enumerate(op.results[1:], 1):
                self.namer.names[id(r)] = f"{first}#{i}"
            if len(op.results) > 1:
                self.namer.names[id(op.results[0])] = f"{first}#0"
                text = f"%{first}:{len(op.results)} = "
            else:
                text = f"%{first} = "
        text += op.name
        if op.operands:
            text += " " + ", ".join(self.ref(v) for v in op.operands)
        opdef = op.opdef
        attrs: dict[str, Attr] = {
            k: v for k, v in op.attributes.items() if v is not None and not (opdef and opdef.is_default(k, v))
        }
        if op.regions:
            self.lines.append(pad + text + " (")
            for i, region in enumerate(op.regions):
                self._print_region(region, depth + 1, last=i == len(op.regions) - 1)
            text = ")"
            pad = self.indent * depth
        else:
            pad = self.indent * depth
        if attrs:
            text += " " + format_attr_dict(attrs, self.digest)
        text += f" : ({_types(v.type for v in op.operands)}) -> "
        text += format_result_types(op.result_types) if op.results else "()"
        self.lines.append(pad + text)

    def _print_region(self, region: Region, depth: int, last: bool) -> None:
        pad = self.indent * depth
        self.lines.append(pad + "{")
        for block in region.blocks:
            self._print_block(block, depth + 1)
        self.lines.append(pad + ("}" if last else "},"))

    def _print_block(self, block: Block, depth: int) -> None:
        if block.args:
            args = ", ".join(f"%{self.namer.define(a, 'arg')}: {a.type}" for a in block.args)
            self.lines.append(self.indent * (depth - 1) + f"^bb0({args}):")
        for op in block.ops:
            self.print_op(op, depth)


def print_op(op: Operation, digest: bool = False) -> str:
    """The text of ``op`` (a module, a function or any single op); ``digest``: see :func:`fingerprint`."""
    p = Printer(digest=digest)
    if op.name != "func.func" and op.name != "builtin.module":
        for operand in op.operands:
            p.namer.define(operand)
    p.print_op(op)
    return "\n".join(p.lines) + "\n"


def print_module(module: Operation) -> str:
    """The text of a module, ready to be parsed back."""
    return print_op(module)


def fingerprint(module: Operation) -> str:
    """The module's text with each large constant replaced by the sha256 of its bytes (see
    :func:`format_dense`): equal for equal modules, and cheap for models with large weights. Not parseable."""
    return print_op(module, digest=True)
