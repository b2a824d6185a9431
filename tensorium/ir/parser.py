"""The lark-based reader of the textual IR (see :mod:`tensorium.ir.printer` for the format).

Every malformed input raises :class:`~tensorium.errors.ParseError` with file:line:column, the
offending source line and what was expected there. Semantic checks that need the op declarations
(operand and attribute rules, result types) run in the verifier right after parsing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..errors import Location, ParseError, VerifyError
from .attributes import Attr, DenseAttr
from .core import Block, Operation, Region, Value
from .dialects.builtin import make_module
from .opdef import lookup, suggest_op
from .types import (
    DYN,
    MEMORY_SPACES,
    SYM_PATTERN,
    BufferType,
    Dim,
    FunctionType,
    IntegerType,
    ScalarType,
    Sym,
    TensorType,
    Type,
    integer_bounds,
    parse_scalar_type,
    storage_dtype,
    type_syntax,
)

GRAMMAR = r"""
start: operation*

operation: results? op_body
results: result ("," result)* "="
result: VALUE_ID (":" INT)?

?op_body: module_op | func_op | return_op | custom_op | generic_op

module_op: MODULE_KW attributes_kw? region
func_op: "func.func" SYMBOL "(" block_args? ")" func_results? attributes_kw? region
func_results: "->" type_list_or_one
attributes_kw: "attributes" attr_dict
return_op: "func.return" (value_list ":" type ("," type)*)?
custom_op: OP_NAME value_list? regions? attr_dict? ":" function_type
generic_op: ESCAPED_STRING "(" value_list? ")" regions? attr_dict? ":" function_type

regions: "(" region ("," region)* ")"
region: "{" block_label? operation* "}"
block_label: BLOCK_ID "(" block_args? ")" ":"
block_args: block_arg ("," block_arg)*
block_arg: VALUE_ID ":" type

value_list: VALUE_ID ("," VALUE_ID)*
function_type: "(" (type ("," type)*)? ")" "->" type_list_or_one
type_list_or_one: type | "(" (type ("," type)*)? ")"
type: TENSOR_TYPE | TYPE_DIALECT | SCALAR_TYPE | TYPE_BUFFER

attr_dict: "{" (attr_entry ("," attr_entry)*)? "}"
attr_entry: BARE_ID "=" attr_value
?attr_value: "true" -> true
    | "false" -> false
    | INT -> int
    | FLOAT -> float
    | "inf" -> inf
    | "-inf" -> neg_inf
    | "nan" -> nan
    | ESCAPED_STRING -> string
    | "[" (attr_value ("," attr_value)*)? "]" -> array
    | type
    | "dense" "<" dense_body ">" ":" type -> dense
?dense_body: dense_elem | ESCAPED_STRING -> dense_hex
?dense_elem: "true" -> true
    | "false" -> false
    | INT -> int
    | FLOAT -> float
    | "inf" -> inf
    | "-inf" -> neg_inf
    | "nan" -> nan
    | "[" (dense_elem ("," dense_elem)*)? "]" -> array

MODULE_KW: "module" | "builtin.module"
VALUE_ID: /%[A-Za-z0-9_$.]+(#[0-9]+)?/
BLOCK_ID: /\^[A-Za-z0-9_]+/
SYMBOL: /@[A-Za-z_][A-Za-z0-9_$.]*/
OP_NAME: /[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_.]*/
TENSOR_TYPE: /tensor<(?:[^<>\n(){},]|<[^<>\n]*>)*>/
// buffer types: named to sort after the other type terminals, which keeps 'expected one of' lists stable
TYPE_BUFFER: /buffer<[^<>\n(){}]*>/
// a dialect's own type, !name<...>, parsed by the syntax the dialect registers (types.register_type_syntax)
TYPE_DIALECT: /![a-z_][a-z0-9_]*<[^<>\n()]*(?:\([^()<>\n]*\))?>/
SCALAR_TYPE: /(bf16|f16|f32|f64|index|[iu][0-9]+)(?![A-Za-z0-9_])/
BARE_ID: /[A-Za-z_][A-Za-z0-9_]*/
FLOAT: /[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+)/
INT: /[-+]?\d+/
ESCAPED_STRING: /"[^"\\\n]*(?:\\.[^"\\\n]*)*"/
COMMENT: /\/\/[^\n]*/

%ignore COMMENT
%ignore /[ \t\r\n]+/
"""

_FRIENDLY = {
    "VALUE_ID": "a value (%name)",
    "BLOCK_ID": "a block label (^bb0)",
    "SYMBOL": "a symbol (@name)",
    "OP_NAME": "an op name (dialect.op)",
    "TENSOR_TYPE": "a type",
    "TYPE_DIALECT": "a type",
    "TYPE_BUFFER": "a type",
    "SCALAR_TYPE": "a type",
    "BARE_ID": "an attribute name",
    "FLOAT": "a number",
    "INT": "a number",
    "ESCAPED_STRING": "a string",
    "MODULE_KW": "'module'",
    "$END": "end of input",
}


_DROPPED_KEYWORDS = ("func.func", "func.return")
"""Keywords the tree leaves out (anonymous terminals) that start an op: where the op is, without positions."""
_KEYWORD = re.compile(r"func\.(?:func|return)")


@lru_cache(maxsize=2)
def _lark(positions: bool = True) -> Lark:
    """The parser; ``positions=False`` leaves tree nodes without line and column (tokens keep theirs), which
    halves the time lark takes on a large module (see :func:`parse_module`)."""
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=positions, maybe_placeholders=False)


def _keyword_places(text: str) -> dict[str, list[tuple[int, int]]]:
    """Per keyword of :data:`_DROPPED_KEYWORDS`, the (line, column) of each place ``text`` spells it, the
    last one first. Places inside comments, strings or names are among them: the builder then finds more
    places than ops, and the full parser takes over."""
    places: dict[str, list[tuple[int, int]]] = {k: [] for k in _DROPPED_KEYWORDS}
    line, line_start, pos = 1, 0, 0
    for match in _KEYWORD.finditer(text):
        start = match.start()
        newlines = text.count("\n", pos, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", pos, start) + 1
        pos = start
        places[match.group()].append((line, start - line_start + 1))
    for found in places.values():
        found.reverse()
    return places


class _NeedsPositions(Exception):
    """Raised by a builder over a tree without positions where an op's location cannot be told."""


def _describe_terminals(names: Sequence[str]) -> str:
    lark = _lark()
    out: list[str] = []
    for name in sorted(names):
        if name in _FRIENDLY:
            desc = _FRIENDLY[name]
        else:
            try:
                pattern = lark.get_terminal(name).pattern
                desc = f"'{pattern.value}'"
            except KeyError:
                desc = name
        if desc not in out:
            out.append(desc)
    if len(out) == 1:
        return out[0]
    return "one of " + ", ".join(out)


class _Source:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.lines = text.splitlines()

    def loc(self, line: int, column: int) -> Location:
        return Location(line, column, self.filename)

    def error(self, message: str, line: int, column: int) -> ParseError:
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return ParseError(message, self.loc(line, column), src)

    def at(self, node: Token | Tree, message: str, offset: int = 0) -> ParseError:
        if isinstance(node, Token):
            return self.error(message, node.line or 1, (node.column or 1) + offset)
        meta = node.meta
        return self.error(message, getattr(meta, "line", 1), getattr(meta, "column", 1) + offset)


# --- types -----------------------------------------------------------------------------------
_DIM = re.compile(rf"(\d+|\?|\[{SYM_PATTERN}\])x", re.ASCII)
_TYPE_DIALECT = re.compile(r"!([a-z_][a-z0-9_]*)<")


class TypeSyntaxError(ValueError):
    """A malformed type; ``offset`` is the column offset of the problem inside the type text."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


def parse_type(text: str) -> Type:
    """The type spelled ``text``; raises TypeSyntaxError."""
    dialect = _TYPE_DIALECT.match(text)
    if (text.startswith(("tensor<", "buffer<")) or dialect) and not text.endswith(">"):
        raise TypeSyntaxError(f"type '{text}' is missing its closing '>'")
    if text.startswith("tensor<"):
        return _parse_tensor_type(text)
    if text.startswith("buffer<"):
        return _parse_buffer_type(text)
    if dialect:
        return _parse_dialect_type(dialect.group(1), text)
    scalar = parse_scalar_type(text)
    if scalar is None:
        raise TypeSyntaxError(f"unknown type '{text}'")
    return scalar


def _parse_dialect_type(name: str, text: str) -> Type:
    syntax = type_syntax(name)
    if syntax is None:
        raise TypeSyntaxError(f"unknown type '{text}' (no dialect registers '!{name}<...>' types)")
    try:
        return syntax.parse(text)
    except ValueError as e:
        raise TypeSyntaxError(str(e)) from None


def _parse_dims(body: str) -> tuple[list[Dim], int]:
    """The leading ``4x?x[n]x`` dims of a shaped type's body and where they end."""
    pos = 0
    dims: list[Dim] = []
    while True:
        m = _DIM.match(body, pos)
        if m is None:
            return dims, pos
        token = m.group(1)
        dims.append(int(token) if token.isdigit() else DYN if token == "?" else Sym(token[1:-1]))
        pos = m.end()


def _parse_buffer_type(text: str) -> BufferType:
    body, comma, space = text[len("buffer<") : -1].rpartition(",")
    space = space.strip()
    spaces = ", ".join(MEMORY_SPACES)
    if not comma:
        raise TypeSyntaxError(f"bad buffer type '{text}': expected a memory space ({spaces}) after the element type")
    if space not in MEMORY_SPACES:
        raise TypeSyntaxError(f"bad buffer type '{text}': unknown memory space '{space}' (expected one of {spaces})")
    dims, pos = _parse_dims(body)
    element = parse_scalar_type(body[pos:])
    if element is None:
        raise TypeSyntaxError(
            f"bad buffer type '{text}': expected dimensions like 4x?x[n]x and a float, integer or index element "
            f"type, got '{body[pos:]}'",
            len("buffer<") + pos,
        )
    return BufferType(tuple(dims), element, space)  # type: ignore[arg-type]


def _parse_tensor_type(text: str) -> TensorType:
    body = text[len("tensor<") : -1]
    dims, pos = _parse_dims(body)
    element_text = body[pos:]
    offset = len("tensor<") + pos
    try:
        element = parse_type(element_text)
    except TypeSyntaxError as e:
        hint = "" if element_text else " (missing element type)"
        bad = element_text.split("x", 1)[0]
        raise TypeSyntaxError(
            f"bad tensor type '{text}': expected dimensions like 4x?x[n]x and an element type, got '{bad}'{hint}"
            if not _TYPE_DIALECT.match(element_text)
            else str(e),
            offset,
        ) from None
    if not isinstance(element, ScalarType):
        raise TypeSyntaxError(f"tensor element must be a scalar type, got '{element_text}'", offset)
    return TensorType(tuple(dims), element)


# --- attributes --------------------------------------------------------------------------------
def _scalar_value(node: Tree | Token) -> Any:
    if not isinstance(node, Tree):
        raise AssertionError(node)
    kind = node.data
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "int":
        return int(str(node.children[0]))
    if kind == "float":
        return float(str(node.children[0]))
    if kind == "inf":
        return float("inf")
    if kind == "neg_inf":
        return float("-inf")
    if kind == "nan":
        return float("nan")
    raise AssertionError(kind)


def _out_of_range(value: int, element: ScalarType, bounds: tuple[int, int]) -> str:
    return f"value {value} is out of range for {element} ({bounds[0]}..{bounds[1]})"


def _nested_shape(values: Any) -> tuple[int, ...] | None:
    """The shape of nested lists of scalars, or None when rows have different lengths."""
    if not isinstance(values, list):
        return ()
    shapes = {_nested_shape(v) for v in values}
    if None in shapes or len(shapes) > 1:
        return None
    inner = shapes.pop() if shapes else ()
    assert inner is not None
    return (len(values), *inner)


class _IRBuilder:
    """Walks the lark tree and builds ops, resolving SSA names scope by scope.

    Over a tree without positions (``positions=False``) an op's location is its first token's; for
    ``func.func`` and ``func.return``, whose keyword the tree drops, the keyword's place in the text: the
    builder meets these ops in the order the text spells them."""

    def __init__(self, source: _Source, positions: bool = True):
        self.src = source
        self.positions = positions
        self.keywords = {} if positions else _keyword_places(source.text)
        """Without positions: per keyword, where the text spells it, the last place first (:meth:`op_loc`)."""
        self.scopes: list[dict[str, Value]] = []

    def op_loc(self, node: Tree, keyword: str = "") -> Location:
        """Where the op of ``node`` (a module, function, return or general op) starts: its first token,
        the ``keyword`` that the tree drops included."""
        if self.positions:
            return self.src.loc(node.meta.line, node.meta.column)
        if keyword:
            places = self.keywords[keyword]
            if not places:
                raise _NeedsPositions(keyword)
            return self.src.loc(*places.pop())
        first = next(node.scan_values(lambda v: isinstance(v, Token)), None)  # depth first
        if first is None or first.line is None or first.column is None:
            raise _NeedsPositions(node.data)
        return self.src.loc(first.line, first.column)

    # scopes ------------------------------------------------------------------------------
    def lookup_value(self, token: Token) -> Value:
        name = str(token)[1:]
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.src.at(token, f"use of undefined value '%{name}'")

    def define_value(self, token: Token, name: str, value: Value) -> None:
        if "#" in name:
            raise self.src.at(token, f"cannot define '%{name}': '#' only selects a result of a multi-result op")
        for scope in self.scopes:
            if name in scope:
                raise self.src.at(token, f"redefinition of value '%{name}'")
        self.scopes[-1][name] = value
        if not name.isdigit():
            value.name_hint = name

    # types -------------------------------------------------------------------------------
    def type(self, node: Tree) -> Type:
        token = node.children[0]
        assert isinstance(token, Token)
        try:
            return parse_type(str(token))
        except TypeSyntaxError as e:
            raise self.src.at(token, str(e), e.offset) from None
        except ValueError as e:
            raise self.src.at(token, f"bad type '{token}': {e}") from None

    def type_list_or_one(self, node: Tree) -> list[Type]:
        return [self.type(c) for c in node.children]  # type: ignore[arg-type]

    def function_type(self, node: Tree) -> tuple[list[Type], list[Type]]:
        *ins, outs = node.children
        return [self.type(c) for c in ins], self.type_list_or_one(outs)  # type: ignore[arg-type]

    # attributes --------------------------------------------------------------------------
    def string(self, token: Token) -> str:
        """The value of a quoted string token (JSON escapes)."""
        try:
            return str(json.loads(str(token)))
        except json.JSONDecodeError as e:
            raise self.src.at(token, f"bad string literal: {e.msg}", e.pos) from None

    def attr_dict(self, node: Tree | None) -> dict[str, Attr]:
        out: dict[str, Attr] = {}
        if node is None:
            return out
        for entry in node.children:
            key_tok, value_node = entry.children  # type: ignore[union-attr]
            key = str(key_tok)
            if key in out:
                raise self.src.at(key_tok, f"attribute '{key}' is given twice")
            out[key] = self.attr_value(value_node)
        return out

    def attr_value(self, node: Tree | Token) -> Attr:
        if isinstance(node, Token):
            raise AssertionError(node)
        kind = node.data
        if kind == "string":
            return self.string(node.children[0])  # type: ignore[arg-type]
        if kind == "array":
            return tuple(self.attr_value(c) for c in node.children)
        if kind == "type":
            return self.type(node)
        if kind == "dense":
            return self.dense(node)
        return _scalar_value(node)  # type: ignore[no-any-return]

    def dense(self, node: Tree) -> DenseAttr:
        body, type_node = node.children
        ttype = self.type(type_node)  # type: ignore[arg-type]
        if not isinstance(ttype, TensorType) or not ttype.is_static:
            raise self.src.at(type_node, f"a dense constant needs a static tensor type, got {ttype}")
        dtype = storage_dtype(ttype.element)
        shape = ttype.static_shape
        if isinstance(body, Tree) and body.data == "dense_hex":
            raw = self.string(body.children[0])  # type: ignore[arg-type]
            if not raw.startswith("0x"):
                raise self.src.at(body, "hex constant data must start with 0x")
            if len(raw) % 2:
                raise self.src.at(body, "hex constant data has an odd number of digits")
            try:
                data = bytes.fromhex(raw[2:])
            except ValueError:
                raise self.src.at(body, "hex constant data has a non-hex character") from None
            expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if len(data) != expected:
                raise self.src.at(body, f"hex constant has {len(data)} bytes, {ttype} needs {expected}")
            array = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
            bounds = integer_bounds(ttype.element)
            if bounds is not None and array.size:
                ints = array.view(np.uint8) if array.dtype == np.bool_ else array
                for value in (int(ints.min()), int(ints.max())):
                    if not bounds[0] <= value <= bounds[1]:
                        raise self.src.at(body, _out_of_range(value, ttype.element, bounds))
            return DenseAttr(array, ttype)
        values = self._dense_values(body, ttype.element)
        if _nested_shape(values) is None:
            raise self.src.at(body, "constant data rows have different lengths")
        array = np.array(values, dtype=dtype)
        if array.shape != shape and array.size != 1:
            raise self.src.at(body, f"constant data of shape {list(array.shape)} does not match {ttype}")
        if array.size == 1 and array.shape != shape and array.ndim > 0:
            raise self.src.at(body, f"constant data of shape {list(array.shape)} does not match {ttype}")
        return DenseAttr(array, ttype)

    def _dense_values(self, node: Tree | Token, element: ScalarType) -> Any:
        """The nested Python values of dense data, each checked against ``element``."""
        if isinstance(node, Tree) and node.data == "array":
            return [self._dense_values(c, element) for c in node.children]
        value = _scalar_value(node)
        bounds = integer_bounds(element)
        if isinstance(value, bool) and not (isinstance(element, IntegerType) and element.is_bool):
            raise self.src.at(node, f"boolean value in a constant of element type {element}")
        if isinstance(value, float) and bounds is not None:
            raise self.src.at(node, f"float value {value!r} in a constant of element type {element}")
        if bounds is not None and not bounds[0] <= int(value) <= bounds[1]:
            raise self.src.at(node, _out_of_range(int(value), element, bounds))
        return value

    # ops ---------------------------------------------------------------------------------
    def operations(self, nodes: Sequence[Tree], block: Block) -> None:
        for node in nodes:
            block.append(self.operation(node))

    def operation(self, node: Tree) -> Operation:
        children = list(node.children)
        results_node = children[0] if children[0].data == "results" else None  # type: ignore[union-attr]
        body = children[-1]
        assert isinstance(body, Tree)
        kind = body.data
        if kind in ("module_op", "func_op", "return_op") and results_node is not None:
            raise self.src.at(results_node, f"'{_KIND_NAMES[kind]}' has no results")
        if kind == "module_op":
            return self.module_op(body)
        if kind == "func_op":
            return self.func_op(body)
        if kind == "return_op":
            return self.return_op(body)
        return self.general_op(body, results_node)

    def module_op(self, node: Tree) -> Operation:
        attrs: dict[str, Attr] = {}
        region_node = node.children[-1]
        for child in node.children[1:-1]:
            attrs = self.attr_dict(child.children[0])  # type: ignore[union-attr]
        loc = self.op_loc(node)
        module = make_module(loc=loc)
        module.attributes.update(attrs)
        region = region_node  # type: ignore[assignment]
        if region.children and isinstance(region.children[0], Tree) and region.children[0].data == "block_label":  # type: ignore[union-attr]
            raise self.src.at(region.children[0], "a module body takes no block label")  # type: ignore[union-attr, arg-type]
        self.operations(region.children, module.regions[0].block)  # type: ignore[union-attr, arg-type]
        return module

    def func_op(self, node: Tree) -> Operation:
        sym = node.children[0]
        loc = self.op_loc(node, "func.func")
        args_node: Tree | None = None
        results: list[Type] = []
        attrs: dict[str, Attr] = {}
        for child in node.children[1:-1]:
            assert isinstance(child, Tree)
            if child.data == "block_args":
                args_node = child
            elif child.data == "func_results":
                results = self.type_list_or_one(child.children[0])  # type: ignore[arg-type]
            elif child.data == "attributes_kw":
                attrs = self.attr_dict(child.children[0])  # type: ignore[arg-type]
        self.scopes.append({})
        block = Block()
        self.block_args(args_node, block)
        region_node = node.children[-1]
        assert isinstance(region_node, Tree)
        if (
            region_node.children
            and isinstance(region_node.children[0], Tree)
            and region_node.children[0].data == "block_label"
        ):
            raise self.src.at(
                region_node.children[0], "a function body takes no block label; arguments go in the signature"
            )
        self.operations(region_node.children, block)  # type: ignore[arg-type]
        self.scopes.pop()
        for key in ("sym_name", "function_type"):
            if key in attrs:
                raise self.src.at(node, f"attribute '{key}' of a function is set by its signature")
        ftype = FunctionType(tuple(a.type for a in block.args), tuple(results))
        func = Operation(
            "func.func",
            attributes={"sym_name": str(sym)[1:], "function_type": ftype, **attrs},
            regions=[Region([block])],
            loc=loc,
        )
        return func

    def block_args(self, node: Tree | None, block: Block) -> None:
        if node is None:
            return
        for arg in node.children:
            tok, type_node = arg.children  # type: ignore[union-attr]
            value = block.add_arg(self.type(type_node))  # type: ignore[arg-type]
            self.define_value(tok, str(tok)[1:], value)  # type: ignore[arg-type]

    def return_op(self, node: Tree) -> Operation:
        loc = self.op_loc(node, "func.return")
        if not node.children:
            return Operation("func.return", [], loc=loc)
        value_list, *type_nodes = node.children
        values = [self.lookup_value(t) for t in value_list.children]  # type: ignore[union-attr, arg-type]
        types = [self.type(t) for t in type_nodes]  # type: ignore[arg-type]
        self._check_operand_types(node, value_list.children, values, types)  # type: ignore[union-attr, arg-type]
        return Operation("func.return", values, loc=loc)

    def _check_operand_types(
        self, node: Tree, tokens: Sequence[Token], values: Sequence[Value], types: Sequence[Type]
    ) -> None:
        if len(types) != len(values):
            raise self.src.at(node, f"{len(values)} operands but {len(types)} operand types")
        for i, (tok, v, t) in enumerate(zip(tokens, values, types)):
            if v.type != t:
                raise self.src.at(tok, f"operand #{i} {tok} has type {v.type}, but the signature says {t}")

    def general_op(self, node: Tree, results_node: Tree | None) -> Operation:
        name_tok = node.children[0]
        assert isinstance(name_tok, Token)
        name = str(name_tok) if node.data == "custom_op" else self.string(name_tok)
        if name in _KIND_NAMES.values() or name == "builtin.module":
            raise self.src.at(name_tok, f"'{name}' has its own syntax and no generic form")
        opdef = lookup(name)
        if opdef is None:
            raise self.src.at(name_tok, f"unknown operation '{name}'{suggest_op(name)}")
        value_tokens: list[Token] = []
        regions_node: Tree | None = None
        attrs: dict[str, Attr] = {}
        ftype_node: Tree | None = None
        for child in node.children[1:]:
            assert isinstance(child, Tree)
            if child.data == "value_list":
                value_tokens = list(child.children)  # type: ignore[arg-type]
            elif child.data == "regions":
                regions_node = child
            elif child.data == "attr_dict":
                attrs = self.attr_dict(child)
            elif child.data == "function_type":
                ftype_node = child
        assert ftype_node is not None
        values = [self.lookup_value(t) for t in value_tokens]
        in_types, out_types = self.function_type(ftype_node)
        self._check_operand_types(ftype_node, value_tokens, values, in_types)
        regions = self.regions(regions_node) if regions_node is not None else []
        loc = self.op_loc(node)
        op = Operation(name, values, out_types, opdef.complete_attrs(attrs), regions, loc=loc)
        self.bind_results(results_node, op, name_tok)
        return op

    def regions(self, node: Tree) -> list[Region]:
        out = []
        for region_node in node.children:
            block = Block()
            self.scopes.append({})
            children = list(region_node.children)  # type: ignore[union-attr]
            if children and isinstance(children[0], Tree) and children[0].data == "block_label":
                label = children.pop(0)
                args = label.children[1] if len(label.children) > 1 else None  # type: ignore[union-attr]
                self.block_args(args, block)  # type: ignore[arg-type]
            self.operations(children, block)  # type: ignore[arg-type]
            self.scopes.pop()
            out.append(Region([block]))
        return out

    def bind_results(self, results_node: Tree | None, op: Operation, name_tok: Token) -> None:
        groups: list[tuple[Token, int | None]] = []
        if results_node is not None:
            for r in results_node.children:
                tok = r.children[0]  # type: ignore[union-attr]
                count = int(r.children[1]) if len(r.children) > 1 else None  # type: ignore[union-attr, arg-type]
                groups.append((tok, count))  # type: ignore[arg-type]
        named = sum(1 if c is None else c for _, c in groups)
        if named != len(op.results):
            raise self.src.at(
                results_node if results_node is not None else name_tok,
                f"'{op.name}' has {len(op.results)} result{'s' if len(op.results) != 1 else ''} "
                f"in its type signature, but {named} {'are' if named != 1 else 'is'} named",
            )
        i = 0
        for tok, count in groups:
            base = str(tok)[1:]
            if count is None:
                self.define_value(tok, base, op.results[i])
                i += 1
                continue
            if count < 1:
                raise self.src.at(tok, "a result group needs a count of at least 1")
            self.define_value(tok, base, op.results[i])
            self.scopes[-1][base + "#0"] = op.results[i]
            for k in range(1, count):
                self.scopes[-1][f"{base}#{k}"] = op.results[i + k]
            if count > 1:
                del self.scopes[-1][base]
                if not base.isdigit():
                    for k in range(count):
                        op.results[i + k].name_hint = None
                    op.results[i].name_hint = base
            i += count


_KIND_NAMES = {"module_op": "module", "func_op": "func.func", "return_op": "func.return"}


def parse_module(text: str, filename: str = "<input>", verify: bool = True) -> Operation:
    """Parse IR text into a module (bare functions are wrapped in one); verifies unless told not to.

    The text is first parsed into a tree without positions, which takes lark half the time; input that
    this fast path refuses for any reason (malformed IR, or an op whose location it cannot tell) is parsed
    again with positions, so that errors and locations are exactly those of the full parser."""
    source = _Source(text, filename)
    try:
        module = _build(source, positions=False)
    except Exception:
        module = _build(source, positions=True)
    if verify:
        from .verifier import verify as run_verifier

        try:
            run_verifier(module)
        except VerifyError as e:
            raise e.with_source(source.lines) from None
    return module


def _build(source: _Source, positions: bool) -> Operation:
    """The module ``source`` spells (unverified); raises ParseError."""
    try:
        tree = _lark(positions).parse(source.text)
    except UnexpectedInput as e:
        raise _syntax_error(source, e) from None
    except VisitError as e:  # pragma: no cover - no callbacks run during parsing
        raise ParseError(str(e.orig_exc)) from None
    builder = _IRBuilder(source, positions)
    builder.scopes.append({})
    ops = [builder.operation(node) for node in tree.children]  # type: ignore[arg-type]
    if any(builder.keywords.values()):
        raise _NeedsPositions("a keyword spelled where no op starts (a comment, a string, a name)")
    return _as_module(source, ops)


def _as_module(source: _Source, ops: list[Operation]) -> Operation:
    if len(ops) == 1 and ops[0].name == "builtin.module":
        return ops[0]
    for op in ops:
        assert op.loc is not None
        if op.name == "builtin.module":
            raise source.error("a module must be the only op at the top level", op.loc.line, op.loc.column)
        if op.name != "func.func":
            raise source.error(
                f"expected 'module' or 'func.func' at the top level, found '{op.name}'", op.loc.line, op.loc.column
            )
    return make_module(ops, loc=ops[0].loc if ops else None)


def _syntax_error(source: _Source, e: UnexpectedInput) -> ParseError:
    if isinstance(e, UnexpectedEOF):
        line = len(source.lines) or 1
        col = len(source.lines[-1]) + 1 if source.lines else 1
        return source.error(f"unexpected end of input, expected {_describe_terminals(list(e.expected))}", line, col)
    if isinstance(e, UnexpectedToken):
        if e.token.type == "$END":
            line = len(source.lines) or 1
            col = len(source.lines[-1]) + 1 if source.lines else 1
            return source.error(f"unexpected end of input, expected {_describe_terminals(list(e.expected))}", line, col)
        type_only = set(e.expected) <= {"TENSOR_TYPE", "TYPE_DIALECT", "SCALAR_TYPE", "TYPE_BUFFER"}
        if e.token.type == "BARE_ID" and "SCALAR_TYPE" in e.expected and (type_only or e.token in ("tensor", "buffer")):
            return _bad_type_error(source, str(e.token), e.line, e.column)
        expected = _describe_terminals([t for t in e.expected if not t.startswith("__")] or list(e.expected))
        return source.error(f"unexpected '{e.token}', expected {expected}", e.line, e.column)
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream or 0
        char = source.text[pos] if pos < len(source.text) else "?"
        if char == '"':
            return source.error("unterminated string (a string ends with '\"' on the same line)", e.line, e.column)
        dialect = _TYPE_DIALECT.match(source.text, pos)
        if dialect:
            return _bad_type_error(source, dialect.group(0)[:-1], e.line, e.column)
        allowed = _describe_terminals(list(e.allowed or ())) if e.allowed else "something else"
        return source.error(f"unexpected character '{char}', expected {allowed}", e.line, e.column)
    return source.error(str(e), getattr(e, "line", 1), getattr(e, "column", 1))  # pragma: no cover


def _bad_type_error(source: _Source, word: str, line: int, column: int) -> ParseError:
    """The error for a word where a type was expected that did not lex as one."""
    rest = source.lines[line - 1][column - 1 :]
    syntax = type_syntax(word[1:]) if word.startswith("!") else None
    if syntax is not None and ">" in rest:
        return source.error(syntax.malformed(rest[: rest.index(">") + 1]), line, column)
    if word in ("tensor", "buffer") or word.startswith("!"):
        ends = {"tensor": r"[(){},>]", "buffer": r"[(){}>]"}
        shown = re.split(ends[word], rest, maxsplit=1)[0].rstrip() if word in ends else rest.rstrip()
        return source.error(f"type '{shown}' is missing its closing '>'", line, column)
    return source.error(f"unknown type '{word}'", line, column)


def parse_type_text(text: str) -> Type:
    """The type spelled ``text`` (for APIs and the CLI); raises ParseError."""
    try:
        return parse_type(text.strip())
    except (TypeSyntaxError, ValueError) as e:
        raise ParseError(str(e)) from None
