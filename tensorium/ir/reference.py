"""The op reference, generated from the op declarations themselves.

``python -m tensorium.ir.reference docs/ir.md`` rewrites the part of docs/ir.md between the
``<!-- BEGIN OP REFERENCE -->`` and ``<!-- END OP REFERENCE -->`` markers; a test checks it is current.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import dialects  # noqa: F401  (registers every op)
from .opdef import OpDef, registered_ops
from .printer import format_attr

BEGIN = "<!-- BEGIN OP REFERENCE -->"
END = "<!-- END OP REFERENCE -->"


def signature(opdef: OpDef) -> str:
    """``graph.conv2d(input, weight, bias?) {strides = [1, 1], groups = 1, ...}`` for one op."""
    operands = ", ".join(("*" if s.variadic else "") + s.name + ("?" if s.optional else "") for s in opdef.operands)
    attrs = []
    for key, spec in opdef.attrs.items():
        if spec.default is not None:
            attrs.append(f"{key} = {format_attr(spec.default)}")
        elif spec.required:
            attrs.append(f"{key}: {spec.kind.removeprefix('a ').removeprefix('an ')}")
        else:
            attrs.append(f"{key}?")
    text = f"{opdef.name}({operands})"
    if attrs:
        text += " {" + ", ".join(attrs) + "}"
    return text


def op_reference_markdown() -> str:
    """A markdown table of every graph-dialect op: signature, traits and meaning."""
    lines = ["| op | traits | meaning |", "| --- | --- | --- |"]
    for opdef in registered_ops("graph"):
        traits = ", ".join(sorted(opdef.traits))
        doc = " ".join(opdef.doc.split()).replace("|", "\\|")
        lines.append(f"| `{signature(opdef)}` | {traits} | {doc} |")
    return "\n".join(lines) + "\n"


def update(path: Path) -> bool:
    """Rewrite the reference block of ``path``; True when the file changed."""
    text = path.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    new = f"{head}{BEGIN}\n{op_reference_markdown()}{END}{tail}"
    if new != text:
        path.write_text(new)
        return True
    return False


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}: {'updated' if update(Path(name)) else 'up to date'}")
