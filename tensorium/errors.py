"""User-facing errors.

Every error a user can cause (bad IR text, an IR that breaks a rule, bad inputs to a run) is a
subclass of :class:`TensoriumError`. The CLI prints these as one message and exits with status 1;
anything else reaching the top is a bug in Tensorium.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A position in a source file (1-based line and column)."""

    line: int
    column: int
    file: str = "<input>"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class TensoriumError(Exception):
    """Base class of every documented, user-caused error."""


def _show(source_line: str, column: int) -> str:
    """The source line and a caret under ``column`` (tabs kept so the caret lines up)."""
    pad = "".join("\t" if c == "\t" else " " for c in source_line[: column - 1])
    return f"\n  {source_line}\n  {pad}^"


class ParseError(TensoriumError):
    """Malformed IR text: says where (file:line:column) and what was expected."""

    def __init__(self, message: str, loc: Location | None = None, source_line: str | None = None):
        self.message = message
        self.loc = loc
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None:
            return f"error: {self.message}"
        text = f"{self.loc}: error: {self.message}"
        if self.source_line is not None:
            text += _show(self.source_line, self.loc.column)
        return text

    def __reduce__(self) -> tuple[type, tuple[str, Location | None, str | None]]:
        return type(self), (self.message, self.loc, self.source_line)


class VerifyError(TensoriumError):
    """IR that breaks a rule: names the op, its location and the rule."""

    def __init__(
        self,
        message: str,
        op_name: str | None = None,
        loc: Location | None = None,
        source_line: str | None = None,
    ):
        self.message = message
        self.op_name = op_name
        self.loc = loc
        self.source_line = source_line
        where = f"{loc}: " if loc is not None else ""
        what = f"'{op_name}' op " if op_name else ""
        text = f"{where}error: {what}{message}"
        if source_line is not None and loc is not None:
            text += _show(source_line, loc.column)
        super().__init__(text)

    def __reduce__(self) -> tuple[type, tuple[str, str | None, Location | None, str | None]]:
        return type(self), (self.message, self.op_name, self.loc, self.source_line)

    def with_source(self, lines: list[str]) -> VerifyError:
        """The same error showing the source line it points at (when it is in ``lines``)."""
        if self.loc is None or self.source_line is not None or not 0 < self.loc.line <= len(lines):
            return self
        return VerifyError(self.message, self.op_name, self.loc, lines[self.loc.line - 1])


class SymbolError(TensoriumError):
    """A function named by the user does not exist, or none was named and the choice is ambiguous."""


class InterpreterError(TensoriumError):
    """A module could not be run: missing or mismatched inputs, or an op without semantics."""


class PassError(TensoriumError):
    """A bad pass pipeline (unknown pass, bad option) or a pass that failed on valid IR."""


class LoweringError(TensoriumError):
    """A graph op that has no loop lowering (or uses a feature the lowering does not support)."""


class ScheduleError(TensoriumError):
    """A schedule that does not fit a kernel: an unknown loop, or a rewrite that would change its results."""


class CompileError(TensoriumError):
    """A loop-level module that a backend cannot compile; names the op and its location."""
