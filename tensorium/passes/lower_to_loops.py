"""lower-to-loops: replace a graph module by its loop-level kernels and launch plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import PassError
from ..ir.core import Operation
from ..lowering.codegen import lower_and_schedule
from ..targets import parse_target
from .base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class LowerToLoops(Pass):
    """Lower every graph op of ``@func`` to a kernel and keep the host plan in the module's attributes.

    With ``schedule`` the default schedule of each kernel is applied (parallel and vectorized loops,
    tiled matmuls). ``target`` names the machine (``cpu:x86-64-v3``; empty: this one). The module is
    replaced in place by the kernels; see docs/lowering.md.
    """

    name: ClassVar[str] = "lower-to-loops"
    func: str = "main"
    schedule: bool = False
    target: str = ""

    def run(self, module: Operation) -> None:
        if "plan_steps" in module.attributes:
            raise PassError("the module is already lowered to loops")
        lowered = lower_and_schedule(module, parse_target(self.target or "cpu"), self.func, self.schedule)
        block = module.regions[0].block
        for op in list(block.ops):
            op.erase()
        for kernel in list(lowered.regions[0].block.ops):
            lowered.regions[0].block.remove(kernel)
            block.append(kernel)
        module.attributes.update(lowered.attributes)
