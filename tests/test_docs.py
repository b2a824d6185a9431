"""The docs stay true to the code: the op reference is current and the README's commands are real."""

from __future__ import annotations

from pathlib import Path

from tensorium.ir.reference import BEGIN, END, op_reference_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_op_reference_is_current() -> None:
    text = (ROOT / "docs" / "ir.md").read_text()
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip() == op_reference_markdown().strip(), "run: python -m tensorium.ir.reference docs/ir.md"


def test_readme_starts_with_the_two_commands() -> None:
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines() if line.strip()]
    assert lines[1] == 'pip install -e ".[dev]" && python examples/quickstart.py'
    assert lines[2] == "python -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == lines[2]
