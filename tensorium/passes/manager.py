"""The pass manager: runs a pipeline over a module, optionally verifying, timing and printing after each pass.

pm = PassManager.parse("canonicalize,cse,dce", verify_each=True, timing=True)
pm.run(module)
print(pm.timing_report())
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from ..errors import PassError, VerifyError
from ..ir.core import Operation
from ..ir.printer import Printer, print_module
from ..ir.verifier import verify, verify_op_locally
from .pipeline import Pipeline, parse_pipeline

CONTEXT_LINES = 3


class PassManager:
    """Runs the passes of ``pipeline`` in order on a module, changing it in place."""

    def __init__(
        self,
        pipeline: Pipeline,
        verify_each: bool = False,
        timing: bool = False,
        print_ir_after_all: bool = False,
        ir_stream: TextIO | None = None,
        after_pass: Callable[[str, Operation], None] | None = None,
    ):
        """``after_pass(pass_text, module)`` is called after each pass (``tensorium compile --dump-ir`` writes
        the IR with it)."""
        self.pipeline = pipeline
        self.after_pass = after_pass
        self.verify_each = verify_each
        self.timing = timing
        self.print_ir_after_all = print_ir_after_all
        self.ir_stream = ir_stream
        self._times: list[tuple[str, float]] = []
        self._verify_seconds = 0.0

    @classmethod
    def parse(
        cls,
        pipeline_text: str,
        verify_each: bool = False,
        timing: bool = False,
        print_ir_after_all: bool = False,
        ir_stream: TextIO | None = None,
        after_pass: Callable[[str, Operation], None] | None = None,
    ) -> PassManager:
        """A pass manager for pipeline text; PassError when the text names an unknown pass or option."""
        return cls(parse_pipeline(pipeline_text), verify_each, timing, print_ir_after_all, ir_stream, after_pass)

    def run(self, module: Operation) -> None:
        """Run every pass on ``module``; VerifyError names the pass after which the IR broke."""
        self._times = []
        self._verify_seconds = 0.0
        if self.verify_each:
            self._verify(module, None)
        for p in self.pipeline:
            start = time.perf_counter()
            try:
                p.run(module)
            except PassError as e:
                raise PassError(f"pass '{p}' failed: {e}") from e
            self._times.append((str(p), time.perf_counter() - start))
            if self.print_ir_after_all:
                stream = self.ir_stream if self.ir_stream is not None else sys.stderr
                stream.write(f"// -----// IR Dump After {p} //----- //\n{print_module(module)}\n")
            if self.verify_each:
                self._verify(module, str(p))
            if self.after_pass is not None:
                self.after_pass(str(p), module)

    def _verify(self, module: Operation, pass_label: str | None) -> None:
        start = time.perf_counter()
        try:
            verify(module)
        except VerifyError as e:
            when = "before the first pass" if pass_label is None else f"after pass '{pass_label}'"
            note = f"\nnote: the IR is invalid {when}"
            context = _context(module, e)
            if context:
                note += ":\n" + context
            raise VerifyError(e.message + note, e.op_name, e.loc) from e
        self._verify_seconds += time.perf_counter() - start

    def timing_report(self) -> str:
        """A table of the wall time of each pass in the last run (verification summed on its own row)."""
        if not self.timing:
            raise ValueError("timing_report() needs a PassManager created with timing=True")
        rows = list(self._times)
        if self.verify_each:
            rows.append(("(verify)", self._verify_seconds))
        total = sum(seconds for _, seconds in rows)
        rows.append(("total", total))
        width = max(len(label) for label in ["pass"] + [label for label, _ in rows])
        lines = [f"{'pass':<{width}}  {'wall (ms)':>10}  {'%':>6}"]
        for label, seconds in rows:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"{label:<{width}}  {seconds * 1e3:>10.3f}  {share:>6.1f}")
        return "\n".join(lines) + "\n"


class _MarkingPrinter(Printer):
    """A printer that remembers which line an op of interest starts on."""

    def __init__(self, target: Operation):
        super().__init__()
        self.target = target
        self.target_line: int | None = None

    def print_op(self, op: Operation, depth: int = 0) -> None:
        if op is self.target:
            self.target_line = len(self.lines)
        super().print_op(op, depth)


def _broken_op(module: Operation, error: VerifyError) -> Operation | None:
    """The op ``error`` is about: the first whose own checks fail the same way, else the first of its name and place."""
    candidates = [op for op in module.walk() if op.name == error.op_name and op.loc == error.loc]
    for op in candidates:
        opdef = op.opdef
        if opdef is None:
            return op
        try:
            verify_op_locally(op, opdef)
        except VerifyError as local:
            if local.message == error.message:
                return op
    return candidates[0] if candidates else None


def _context(module: Operation, error: VerifyError) -> str:
    """The function around the broken op, its line marked with '>'; '' when the op is not found."""
    op = _broken_op(module, error)
    func = op
    while func is not None and func.name != "func.func":
        func = func.parent_op
    if op is None or func is None:
        return ""
    printer = _MarkingPrinter(op)
    printer.print_op(func)
    mark = printer.target_line
    assert mark is not None
    lo, hi = max(mark - CONTEXT_LINES, 0), min(mark + CONTEXT_LINES + 1, len(printer.lines))
    return "\n".join(("> " if i == mark else "  ") + printer.lines[i] for i in range(lo, hi))
