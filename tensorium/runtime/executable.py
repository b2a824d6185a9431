"""The executable protocol: what a compiled module offers the runtime, whatever target it was compiled for.

An executable is a module lowered to kernels and compiled for one :class:`~tensorium.targets.Target`, run
by a host launch plan (:class:`~tensorium.lowering.plan.LaunchPlan`) over buffers placed by a
:class:`~tensorium.runtime.memory.MemoryPlan`. Artifacts, the cache and ``tensorium.compile`` see it only
through :class:`Executable` (an instance) and :class:`ExecutableKind` (its class: ``build`` and
``from_files``). Each target that compiles adds one class implementing both (the CPU's is
:class:`tensorium.backends.cpu.CpuExecutable`) and names it in :mod:`tensorium.runtime.kinds`.

This module and :mod:`~tensorium.runtime.memory` are the runtime's contracts: they sit below the backends,
which implement them; the artifact, the cache and the table of kinds sit above the backends.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from ..errors import TensoriumError
from ..ir.core import Operation
from ..ir.types import TensorType
from ..lowering.plan import Step, View
from ..lowering.space import Config
from ..targets import Target
from ..version import __version__
from .memory import MemoryPlan

T = TypeVar("T")

__all__ = ["Executable", "ExecutableError", "ExecutableKind"]


class ExecutableError(TensoriumError):
    """Stored executable files that cannot be loaded here: missing, malformed, or built for another host."""


def read_plan_file(file: Path, format: str, what: str) -> dict[str, Any]:
    """The JSON object of an executable's plan file whose ``format`` field is ``format``; ExecutableError
    when ``file`` is missing, not JSON, or not ``what`` (``a Tensorium WebGPU executable``)."""
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExecutableError(f"{file}: missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ExecutableError(f"{file}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != format:
        raise ExecutableError(f"{file}: not {what} (format is not '{format}')")
    return meta


def load_stored(
    folder: str | os.PathLike[str],
    plan_file: str,
    format: str,
    version: int,
    what: str,
    load: Callable[[Path, dict[str, Any]], T],
) -> T:
    """``load(folder, plan)`` of an executable stored in ``folder``: its plan file read (:func:`read_plan_file`),
    its format ``version`` and the Tensorium version checked; ExecutableError naming the plan file when those
    differ or ``load`` finds the plan malformed (a missing key, a wrong type or value, a Tensorium error)."""
    root = Path(folder)
    file = root / plan_file
    meta = read_plan_file(file, format, what)
    if meta.get("format_version") != version or meta.get("tensorium_version") != __version__:
        raise ExecutableError(f"{file}: written by another Tensorium or format version; compile the model again")
    try:
        return load(root, meta)
    except (KeyError, TypeError, ValueError, OSError, TensoriumError) as e:
        if isinstance(e, ExecutableError):
            raise
        raise ExecutableError(f"{file}: malformed plan ({type(e).__name__}: {e})") from None


@runtime_checkable
class Executable(Protocol):
    """A compiled module and its launch plan; ``run(arrays)`` gives the outputs."""

    target: Target
    """The machine the kernels were compiled for."""
    buffers: tuple[TensorType, ...]
    """The plan's buffers by number."""
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    steps: tuple[Step, ...]
    """One kernel launch each (with its launch grid on targets that have one)."""
    views: tuple[View, ...]
    memory: MemoryPlan
    last_bindings: dict[str, int] | None
    """The named dims of the most recent run (None before the first)."""

    @property
    def input_types(self) -> list[TensorType]:
        """The types of the plan's inputs, in @main argument order."""
        ...

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """Run the plan on numpy ``inputs`` (in @main argument order); returns new output arrays."""
        ...

    def peak_bytes(self, bindings: dict[str, int] | None = None) -> int:
        """The intermediate memory one run allocates (outputs excluded) for the named dims ``bindings``."""
        ...

    def to_files(self, folder: str | os.PathLike[str]) -> Path:
        """Write what :meth:`ExecutableKind.from_files` loads back without compiling."""
        ...


class ExecutableKind(Protocol):
    """The class side of an executable: build one from a graph module, or load stored files."""

    def build(
        self,
        module: Operation,
        func: str = "main",
        memory_plan: bool = True,
        opt_level: int = 3,
        target: Target | None = None,
        configs: Mapping[str, Config] | None = None,
        disable: Collection[str] = (),
        after_stage: Callable[[str, Any], None] | None = None,
    ) -> Executable:
        """Lower ``@func`` for ``target`` and compile it (``memory_plan=False``: no shared memory slots;
        ``disable``: optional codegen stages left out; ``after_stage(name, state)``: called after each)."""
        ...

    def from_files(self, folder: str | os.PathLike[str]) -> Executable:
        """Load what :meth:`Executable.to_files` wrote; ExecutableError names the file at fault."""
        ...
