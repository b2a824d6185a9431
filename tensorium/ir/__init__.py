"""The IR core: types, attributes, the op graph, op declarations, printer, parser and verifier."""

from __future__ import annotations

from . import dialects
from .attributes import DenseAttr
from .builder import InsertionPoint
from .core import Block, BlockArgument, Operation, OpResult, Region, Use, Value
from .dialects import graph
from .dialects.builtin import (
    func_body,
    func_return,
    func_type,
    functions,
    lookup_func,
    make_func,
    make_module,
    set_results,
)
from .opdef import InferError, OpDef, define, lookup, registered_ops
from .parser import parse_module, parse_type_text
from .printer import print_module, print_op
from .types import (
    DYN,
    Dim,
    FloatType,
    FunctionType,
    IndexType,
    IntegerType,
    QuantizedType,
    ScalarType,
    Sym,
    TensorType,
    Type,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
    index,
    u8,
)
from .verifier import verify

__all__ = [
    "DYN",
    "Block",
    "BlockArgument",
    "DenseAttr",
    "Dim",
    "FloatType",
    "FunctionType",
    "IndexType",
    "InferError",
    "InsertionPoint",
    "IntegerType",
    "OpDef",
    "OpResult",
    "Operation",
    "QuantizedType",
    "Region",
    "ScalarType",
    "Sym",
    "TensorType",
    "Type",
    "Use",
    "Value",
    "bf16",
    "define",
    "dialects",
    "f16",
    "f32",
    "f64",
    "func_body",
    "func_return",
    "func_type",
    "functions",
    "graph",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "index",
    "lookup",
    "lookup_func",
    "make_func",
    "make_module",
    "parse_module",
    "parse_type_text",
    "print_module",
    "print_op",
    "registered_ops",
    "set_results",
    "u8",
    "verify",
]
