"""Declarative op definitions and the registry of every known op.

An op is declared once with :func:`define`: its name, operands, attributes, traits, type
inference, reference semantics (numpy) and optional extra checks. The declaration drives the
builder (``graph.add(x, y)``), generic verification, the parser's checks and the interpreter.

Operand specs are names; ``"*inputs"`` is variadic (any number, at most one per op) and
``"bias?"`` is optional (only at the end).
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..errors import Location, VerifyError
from .attributes import Attr, AttrSpec, attr_equal, normalize_attr
from .core import Operation, Value
from .types import Type

Infer = Callable[..., "Type | Sequence[Type]"]
Reference = Callable[..., Any]


class InferError(ValueError):
    """Raised by type inference when operands or attributes break an op's rules."""


@dataclass(frozen=True)
class OperandSpec:
    """One declared operand: plain, variadic (``*name``) or optional (``name?``)."""

    name: str
    variadic: bool = False
    optional: bool = False

    @staticmethod
    def parse(spec: str) -> OperandSpec:
        if spec.startswith("*"):
            return OperandSpec(spec[1:], variadic=True)
        if spec.endswith("?"):
            return OperandSpec(spec[:-1], optional=True)
        return OperandSpec(spec)


@dataclass(frozen=True, eq=False)
class OpDef:
    """The declaration of one op. Calling it builds the op at the current insertion point."""

    name: str
    operands: tuple[OperandSpec, ...]
    attrs: dict[str, AttrSpec]
    infer: Infer | None
    reference: Reference | None = None
    traits: frozenset[str] = frozenset()
    extra_verify: Callable[[Operation], str | None] | None = None
    num_results: int | None = 1
    doc: str = ""

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1]

    def has_trait(self, trait: str) -> bool:
        return trait in self.traits

    # operands ------------------------------------------------------------------------------
    @cached_property
    def operand_counts(self) -> tuple[int, int, bool]:
        """(plain operands, optional operands, whether one is variadic), as declared."""
        fixed = sum(1 for s in self.operands if not s.variadic and not s.optional)
        return fixed, sum(1 for s in self.operands if s.optional), any(s.variadic for s in self.operands)

    def operand_count_error(self, count: int) -> str | None:
        """None when ``count`` operands fit the declaration, else what was expected."""
        fixed, optional, variadic = self.operand_counts
        if variadic and count >= fixed:
            return None
        if fixed <= count <= fixed + optional:
            return None
        if variadic:
            return f"expected at least {fixed} operands, got {count}"
        if optional:
            return f"expected {fixed} to {fixed + optional} operands, got {count}"
        return f"expected {fixed} operand{'s' if fixed != 1 else ''}, got {count}"

    def group_operands(self, values: Sequence[Any]) -> list[Any]:
        """Split a flat operand list by declaration: a variadic one becomes a list, absent optionals None."""
        out: list[Any] = []
        i = 0
        for pos, spec in enumerate(self.operands):
            if spec.variadic:
                k = len(values) - i - (len(self.operands) - pos - 1)
                out.append(list(values[i : i + k]))
                i += k
            elif spec.optional:
                out.append(values[i] if i < len(values) else None)
                i += 1
            else:
                out.append(values[i])
                i += 1
        return out

    # attributes ----------------------------------------------------------------------------
    def complete_attrs(self, attrs: dict[str, Any]) -> dict[str, Attr]:
        """Normalize values and fill defaults; unknown names are kept for the verifier to reject."""
        out: dict[str, Attr] = {}
        for key, value in attrs.items():
            if value is None:
                continue
            value = normalize_attr(value)
            spec = self.attrs.get(key)
            out[key] = spec.coerce(value) if spec is not None else value
        for key, spec in self.attrs.items():
            if key not in out and spec.default is not None:
                out[key] = spec.default
        return out

    def is_default(self, key: str, value: Attr) -> bool:
        spec = self.attrs.get(key)
        return spec is not None and spec.default is not None and attr_equal(spec.default, value)

    def attr_kwargs(self, op: Operation) -> dict[str, Any]:
        """Every declared attribute of ``op`` as keyword arguments (absent optional ones as None)."""
        return {key: op.attributes.get(key, spec.default) for key, spec in self.attrs.items()}

    # inference -----------------------------------------------------------------------------
    def infer_types(self, operand_types: Sequence[Type], attrs: dict[str, Any]) -> list[Type]:
        """Result types for these operand types and attributes; raises InferError."""
        if self.infer is None:
            raise InferError(f"'{self.name}' cannot infer its result types")
        full = {key: attrs.get(key, spec.default) for key, spec in self.attrs.items()}
        grouped = self.group_operands(list(operand_types))
        result = self.infer(*grouped, **full)
        return [result] if isinstance(result, Type) else list(result)

    # building ------------------------------------------------------------------------------
    def build(
        self,
        operands: Sequence[Value],
        attrs: dict[str, Any] | None = None,
        result_types: Sequence[Type] | None = None,
        loc: Location | None = None,
    ) -> Operation:
        """A new, detached op of this kind; result types are inferred unless given."""
        err = self.operand_count_error(len(operands))
        if err:
            raise VerifyError(err, self.name, loc)
        full = self.complete_attrs(attrs or {})
        for key, value in full.items():
            spec = self.attrs.get(key)
            if spec is None and self.has_trait("open_attributes"):
                continue
            if spec is None:
                raise VerifyError(f"unknown attribute '{key}'{_suggest(key, self.attrs)}", self.name, loc)
            problem = spec.validate(value)
            if problem:
                raise VerifyError(f"attribute '{key}': {problem}, got {value!r}", self.name, loc)
        for key, spec in self.attrs.items():
            if spec.required and key not in full:
                raise VerifyError(f"requires attribute '{key}' ({spec.kind})", self.name, loc)
        if result_types is None:
            try:
                result_types = self.infer_types([v.type for v in operands], full)
            except InferError as e:
                raise VerifyError(str(e), self.name, loc) from None
        return Operation(self.name, operands, result_types, full, loc=loc)

    def __call__(self, *operands: Any, loc: Location | None = None, **attrs: Any) -> Any:
        """Build this op at the current insertion point; returns its result(s)."""
        from .builder import current_insertion_point, flatten_values

        op = self.build(flatten_values(operands), attrs, loc=loc)
        ip = current_insertion_point()
        if ip is not None:
            ip.insert(op)
        if len(op.results) == 1:
            return op.results[0]
        return tuple(op.results)


_REGISTRY: dict[str, OpDef] = {}


def define(
    name: str,
    operands: Sequence[str] = (),
    attrs: dict[str, AttrSpec] | None = None,
    infer: Infer | None = None,
    reference: Reference | None = None,
    traits: Sequence[str] = (),
    verify: Callable[[Operation], str | None] | None = None,
    num_results: int | None = 1,
    doc: str = "",
) -> OpDef:
    """Declare and register an op; returns its :class:`OpDef` (callable as a builder)."""
    if name in _REGISTRY:
        raise ValueError(f"op '{name}' is declared twice")
    specs = tuple(OperandSpec.parse(s) for s in operands)
    if sum(s.variadic for s in specs) > 1:
        raise ValueError(f"op '{name}' declares more than one variadic operand")
    if any(s.variadic for s in specs) and any(s.optional for s in specs):
        raise ValueError(f"op '{name}' mixes variadic and optional operands")
    if any(s.optional and not t.optional for s, t in itertools.pairwise(specs)):
        raise ValueError(f"op '{name}' has a required operand after an optional one")
    opdef = OpDef(
        name=name,
        operands=specs,
        attrs=dict(attrs or {}),
        infer=infer,
        reference=reference,
        traits=frozenset(traits),
        extra_verify=verify,
        num_results=num_results,
        doc=doc,
    )
    _REGISTRY[name] = opdef
    return opdef


def lookup(name: str) -> OpDef | None:
    """The declaration of op ``name``, or None when no loaded dialect declares it."""
    return _REGISTRY.get(name)


def registered_ops(dialect: str | None = None) -> list[OpDef]:
    """Every declared op, optionally only those of one dialect, sorted by name."""
    return sorted(
        (d for d in _REGISTRY.values() if dialect is None or d.dialect == dialect),
        key=lambda d: d.name,
    )


def suggest_op(name: str) -> str:
    """A ``did you mean`` suffix for an unknown op name ('' when nothing is close)."""
    return _suggest(name, _REGISTRY)


def _suggest(name: str, choices: Any) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
