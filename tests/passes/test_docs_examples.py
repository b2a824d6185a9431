"""docs/passes.md stays true: its python examples run in order and print exactly the text shown after them."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "passes.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_passes_doc_examples_run_and_print_what_the_doc_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(DOC.read_text())]
    module = types.ModuleType("passes_doc")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    ran = 0
    for i, (lang, code) in enumerate(blocks):
        if lang != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{DOC.name} block {i}", "exec", dont_inherit=True), namespace)
        ran += 1
        if i + 1 < len(blocks) and blocks[i + 1][0] == "text":
            assert out.getvalue() == blocks[i + 1][1], f"output of {DOC.name} python block {i}"
    assert ran == 5
