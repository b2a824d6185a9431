"""canonicalize: apply every registered canonicalization pattern to a fixpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import PassError
from ..ir.core import Operation
from ..ir.rewrite import apply_patterns_greedily, canonicalization_patterns
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class Canonicalize(Pass):
    """Simplify ops with their dialects' canonicalization patterns and erase dead pure ops.

    ``max_iterations`` bounds how often patterns may fire per op (on average) before the pass gives up.
    """

    name: ClassVar[str] = "canonicalize"
    max_iterations: int = 32

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise PassError(f"max-iterations must be at least 1, got {self.max_iterations}")

    def run(self, module: Operation) -> None:
        apply_patterns_greedily(module, canonicalization_patterns(), self.max_iterations)
