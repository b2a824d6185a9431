"""Passes and their registry.

A pass is a small frozen dataclass whose fields are its options; ``name`` is how pipelines spell it
and ``run(module)`` changes the module in place. Register it once with :func:`register_pass`:

    @register_pass
    @dataclass(frozen=True)
    class Fold(Pass):
        \"\"\"Replace ops whose operands are all constants by constants.\"\"\"

        name: ClassVar[str] = "fold"
        max_elements: int = 1 << 20

        def run(self, module: Operation) -> None: ...

Options are ints, floats, bools or strings; pipelines spell ``max_elements`` as ``max-elements``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ..errors import PassError
from ..ir.core import Operation
from ..ir.printer import format_float

OPTION_TYPES: tuple[type, ...] = (bool, int, float, str)


@dataclass(frozen=True)
class Pass:
    """Base of every pass: a named, immutable set of options with a ``run`` over a module."""

    name: ClassVar[str] = ""
    exact: ClassVar[bool] = True
    """False for a pass that changes what a program computes by design (quantization): the fuzzer, whose
    oracles hold every pass to the original program's results, leaves such passes out of its pipelines."""

    def run(self, module: Operation) -> None:
        """Transform ``module`` in place."""
        raise NotImplementedError

    def __str__(self) -> str:
        """The pipeline text of this pass: its name and the options that differ from their defaults."""
        changed = [
            f"{option_text_name(f.name)}={format_option(getattr(self, f.name))}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        ]
        return self.name + ("{" + ",".join(changed) + "}" if changed else "")


P = TypeVar("P", bound=type[Pass])

_PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: P) -> P:
    """Register a pass class under its ``name``; its fields must be options with defaults."""
    if not cls.name:
        raise ValueError(f"pass class {cls.__name__} has no name")
    if cls.name in _PASSES:
        raise ValueError(f"pass '{cls.name}' is registered twice")
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if hints[f.name] not in OPTION_TYPES:
            raise ValueError(f"option '{f.name}' of pass '{cls.name}' must be an int, float, bool or str")
        if f.default is dataclasses.MISSING:
            raise ValueError(f"option '{f.name}' of pass '{cls.name}' needs a default")
    _PASSES[cls.name] = cls
    return cls


def get_pass(name: str) -> type[Pass]:
    """The pass class registered as ``name``; PassError (with a suggestion) when there is none."""
    found = _PASSES.get(name)
    if found is None:
        close = difflib.get_close_matches(name, list(_PASSES), n=1)
        if close:
            raise PassError(f"unknown pass '{name}' (did you mean '{close[0]}'?)")
        raise PassError(f"unknown pass '{name}'; known passes are {', '.join(pass_names())}")
    return found


def pass_names() -> list[str]:
    """The names of every registered pass, sorted."""
    return sorted(_PASSES)


def option_types(cls: type[Pass]) -> dict[str, type]:
    """The options of a pass class, by field name, with their Python types."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def option_text_name(field_name: str) -> str:
    """How pipeline text spells an option (``max_elements`` -> ``max-elements``)."""
    return field_name.replace("_", "-")


def format_option(value: Any) -> str:
    """The pipeline text of an option value (strings are quoted when they would not read back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str) and not _is_bare(value):
        return json.dumps(value)
    return str(value)


def _is_bare(text: str) -> bool:
    return bool(text) and all(c.isalnum() or c in "_-.+/" for c in text)
