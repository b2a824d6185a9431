"""The code-generation half as a named list of stages, like the graph pipeline: lower, schedule, decompose, emit.

Each stage is a small function over one :class:`Codegen` state: ``lower`` turns ``@main`` of a graph
module into loop kernels and a launch plan for the target (kernels at their search-space points),
``schedule`` applies each kernel's default schedule, ``decompose`` rewrites math the emitter lacks into
basic loop ops (:mod:`tensorium.lowering.decompose`), ``emit`` compiles the kernels. A backend names its
emitter's native ops and its compile function; ``disable`` leaves optional stages out, and an
``after_stage(name, state)`` hook sees the IR after each one (``tensorium compile --dump-ir``). The
``lower-to-loops`` pass runs the first two stages, as :func:`lower_and_schedule` does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TensoriumError
from ..ir.core import Operation
from ..ir.dialects.builtin import functions
from ..targets import Target
from .decompose import decompose
from .gpu_schedule import schedule_for_gpu
from .plan import lower_function
from .schedule import apply_schedule, default_schedule
from .space import Config

STAGES = ("lower", "schedule", "decompose", "emit")
"""The stages in order; ``schedule`` and ``decompose`` are optional (``disable=``)."""
OPTIONAL_STAGES = ("schedule", "decompose")


@dataclass
class Codegen:
    """What the stages read and build: the graph ``module`` in, the ``lowered`` loop module, the ``compiled``
    kernels out."""

    module: Operation
    target: Target
    func: str = "main"
    configs: Mapping[str, Config] = field(default_factory=dict)
    native: Collection[str] = frozenset()
    compile: Callable[[Operation, Target], Any] | None = None
    lowered: Operation | None = None
    compiled: Any = None
    decomposed: int = 0


def _lower(state: Codegen) -> None:
    state.lowered = lower_function(state.module, state.func, state.target, state.configs)


def _schedule_for_cpu(kernel: Operation, target: Target) -> None:
    apply_schedule(kernel, default_schedule(kernel, target))


SCHEDULERS: dict[str, Callable[[Operation, Target], None]] = {"cuda": schedule_for_gpu}
"""How the ``schedule`` stage schedules one kernel for each target kind (the CPU's default schedules otherwise)."""


def _schedule(state: Codegen) -> None:
    assert state.lowered is not None
    scheduler = SCHEDULERS.get(state.target.kind, _schedule_for_cpu)
    for kernel in functions(state.lowered):
        scheduler(kernel, state.target)


def _decompose(state: Codegen) -> None:
    assert state.lowered is not None
    state.decomposed = decompose(state.lowered, state.native)


def _emit(state: Codegen) -> None:
    assert state.lowered is not None and state.compile is not None
    state.compiled = state.compile(state.lowered, state.target)


STAGE_FUNCTIONS: dict[str, Callable[[Codegen], None]] = {
    "lower": _lower,
    "schedule": _schedule,
    "decompose": _decompose,
    "emit": _emit,
}

AfterStage = Callable[[str, Codegen], None]


def run_codegen(
    state: Codegen, disable: Collection[str] = (), after_stage: AfterStage | None = None, until: str = "emit"
) -> Codegen:
    """Run the stages on ``state`` in order up to ``until``, without the optional ones named in ``disable``;
    ``after_stage`` is called after each stage that ran."""
    if until not in STAGES:
        raise TensoriumError(f"unknown codegen stage '{until}'; stages are {', '.join(STAGES)}")
    for name in STAGES[: STAGES.index(until) + 1]:
        if name in disable and name in OPTIONAL_STAGES:
            continue
        STAGE_FUNCTIONS[name](state)
        if after_stage is not None:
            after_stage(name, state)
    return state


def lower_and_schedule(module: Operation, target: Target, func: str = "main", schedule: bool = True) -> Operation:
    """``@func`` of ``module`` lowered for ``target``, with the default schedules unless ``schedule`` is
    False: the first codegen stages."""
    lowered = run_codegen(Codegen(module, target, func), until="schedule" if schedule else "lower").lowered
    assert lowered is not None
    return lowered


__all__ = ["OPTIONAL_STAGES", "STAGES", "AfterStage", "Codegen", "lower_and_schedule", "run_codegen"]
