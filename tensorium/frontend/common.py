"""What every frontend shares: the imported-graph record and the unsupported-op error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import TensoriumError
from ..ir.core import Operation


@dataclass(frozen=True)
class Unsupported:
    """One op a frontend could not translate: its framework name, node name and source location."""

    op: str
    node: str
    source: str | None = None
    reason: str = ""

    def __str__(self) -> str:
        text = f"{self.op} (node '{self.node}')"
        if self.source:
            text += f" at {self.source}"
        if self.reason:
            text += f": {self.reason}"
        return text


class UnsupportedOpsError(TensoriumError):
    """A model uses ops the frontend cannot translate; lists every one of them at once."""

    def __init__(self, frontend: str, items: list[Unsupported]):
        self.frontend = frontend
        self.items = list(items)
        kinds = sorted({item.op for item in self.items})
        lines = [f"{frontend}: {len(self.items)} unsupported op(s) of {len(kinds)} kind(s): {', '.join(kinds)}"]
        # one line per op, source line and reason: a layer used nine times is one line, not nine
        groups: dict[tuple[str, str | None, str], list[Unsupported]] = {}
        for item in self.items:
            groups.setdefault((item.op, item.source, item.reason), []).append(item)
        for same in groups.values():
            more = f" (and {len(same) - 1} more like it)" if len(same) > 1 and same[0].source else ""
            lines += [f"  - {same[0]}{more}"] if more else [f"  - {item}" for item in same]
        super().__init__("\n".join(lines))


@dataclass
class ImportedGraph:
    """A model translated to the graph IR: a module whose @main takes ``input_names`` in order.

    ``output_tree`` describes how the flat results of @main rebuild the model's outputs (a frontend
    specific pytree description, or None for a flat list); ``metadata`` holds anything else worth
    keeping in an artifact (framework, opset, parameter handling).
    """

    module: Operation
    input_names: list[str]
    output_names: list[str]
    output_tree: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
