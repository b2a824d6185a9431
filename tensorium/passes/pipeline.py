"""Pipeline text: ``canonicalize,cse,fold{max-elements=1048576}``.

A pipeline is a comma-separated list of pass names, each optionally followed by options in braces
(``{key=value,...}``). Option names use dashes where the pass's fields use underscores; values are
read by the field's type: integers, floats, ``true``/``false``, or strings (bare, or quoted with
``"..."`` when they hold other characters). ``str(parse_pipeline(text))`` is the canonical text,
which leaves out options equal to their defaults.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import PassError
from .base import Pass, get_pass, option_text_name, option_types

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_BARE_VALUE = re.compile(r'[^,{}="\s]+')
_QUOTED = re.compile(r'"(\\.|[^"\\\n])*"')
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?inf|nan")
_KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Pipeline:
    """An ordered list of configured passes."""

    passes: tuple[Pass, ...]

    def __str__(self) -> str:
        return ",".join(str(p) for p in self.passes)

    def __iter__(self) -> Iterator[Pass]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)


def parse_pipeline(text: str) -> Pipeline:
    """Read pipeline text; PassError with the column for an unknown pass or option or a bad value."""
    return _Reader(text).pipeline()


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def error(self, problem: str, pos: int | None = None) -> PassError:
        at = self.pos if pos is None else pos
        caret = " " * at + "^"
        return PassError(f"pipeline column {at + 1}: {problem}\n  {self.text}\n  {caret}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def accept(self, char: str) -> bool:
        self.skip_space()
        if self.text.startswith(char, self.pos):
            self.pos += 1
            return True
        return False

    def expect(self, char: str, what: str) -> None:
        if not self.accept(char):
            raise self.error(f"expected {what}")

    def match(self, pattern: re.Pattern[str]) -> str | None:
        self.skip_space()
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)

    def pipeline(self) -> Pipeline:
        passes: list[Pass] = []
        self.skip_space()
        if self.pos == len(self.text):
            return Pipeline(())
        passes.append(self.entry())
        while self.accept(","):
            passes.append(self.entry())
        self.skip_space()
        if self.pos != len(self.text):
            raise self.error("expected ',' between passes")
        return Pipeline(tuple(passes))

    def entry(self) -> Pass:
        self.skip_space()
        start = self.pos
        name = self.match(_NAME)
        if name is None:
            raise self.error("expected a pass name")
        try:
            cls = get_pass(name)
        except PassError as e:
            raise self.error(str(e), start) from None
        options: dict[str, Any] = {}
        if self.accept("{") and not self.accept("}"):
            self.option(name, cls, options)
            while self.accept(","):
                self.option(name, cls, options)
            self.expect("}", "',' or '}' after an option")
        try:
            return cls(**options)
        except PassError as e:
            raise self.error(f"pass '{name}': {e}", start) from None

    def option(self, pass_name: str, cls: type[Pass], options: dict[str, Any]) -> None:
        self.skip_space()
        start = self.pos
        key = self.match(_NAME)
        if key is None:
            raise self.error("expected an option name")
        types = option_types(cls)
        spelled = {option_text_name(f): f for f in types}
        field = spelled.get(key)
        if field is None:
            raise self.error(_unknown_option(pass_name, key, list(spelled)), start)
        if field in options:
            raise self.error(f"option '{key}' of pass '{pass_name}' is given twice", start)
        self.expect("=", f"'=' after option '{key}'")
        self.skip_space()
        value_pos = self.pos
        quoted = self.match(_QUOTED)
        raw = quoted if quoted is not None else self.match(_BARE_VALUE)
        if raw is None:
            raise self.error(f"expected a value for option '{key}'")
        value = _convert(raw, quoted is not None, types[field])
        if value is None:
            kind = _KINDS[types[field]]
            raise self.error(f"option '{key}' of pass '{pass_name}' expects {kind}, got '{raw}'", value_pos)
        options[field] = value


def _unknown_option(pass_name: str, key: str, known: list[str]) -> str:
    if not known:
        return f"pass '{pass_name}' takes no options, got '{key}'"
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"pass '{pass_name}' has no option '{key}'{hint}; its options are {', '.join(known)}"


def _convert(raw: str, quoted: bool, kind: type) -> Any:
    """The value ``raw`` spells for an option of type ``kind``, or None when it spells none."""
    if kind is str:
        return json.loads(raw) if quoted else raw
    if quoted:
        return None
    if kind is bool:
        return {"true": True, "false": False}.get(raw)
    if kind is int:
        return int(raw) if _INT.fullmatch(raw) else None
    return float(raw) if _FLOAT.fullmatch(raw) else None
