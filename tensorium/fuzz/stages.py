"""Which stages of an execution the coverage tracer watches: tracing only where new code may still show up.

On Python 3.11 every tracer built on ``sys.settrace`` (the C tracer too) sends every frame through the
interpreter's slower tracing path while it is set, which about doubles what an execution costs; most of
that is spent in stages that stopped showing new edges early in a run: the CPU backend's LLVM emitter, the
round trip through the printer and the parser, the second run of the pipeline. :class:`StageSampler` is the
``watch`` the fuzzer gives the oracle (:func:`~tensorium.fuzz.oracle.check`): around each watched stage it

- commits the edges the execution reached so far (they belong to the stages before);
- never traces the determinism oracle's second run of the pipeline: it runs the code the first run ran, so
  it can show no edge of its own (:data:`NEVER_TRACED`);
- traces any other stage while it is productive, and once ``saturated_after`` traced runs of it in a row
  showed no new edge, on one run in ``sampling`` only (drawn from its own random stream, so the cases a
  seed makes stay the same); a new edge puts it back on every run.

A compiled backend is watched by its kind (``cpu``, ``cuda``, ``webgpu``), since ``cpu:x86-64`` and ``cpu``
run the same Python code. The edges a stage reaches count for the execution as always: :meth:`take` hands
the new edges committed inside the watch to the fuzzer, which adds them to its own commit's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .coverage import CoverageTracer

NEVER_TRACED = frozenset({"determinism"})
"""Stages that run only code an earlier stage of the same execution ran."""
SATURATED_AFTER = 6
"""Traced runs of a stage in a row without a new edge after which it is sampled."""
SAMPLING = 8
"""A saturated stage is traced on one run in this many."""


class StageSampler:
    """The fuzzer's ``watch``: pauses ``tracer`` in stages that have stopped showing new code."""

    def __init__(
        self,
        tracer: CoverageTracer,
        seed: int = 0,
        saturated_after: int = SATURATED_AFTER,
        sampling: int = SAMPLING,
    ) -> None:
        self.tracer = tracer
        self.rng = np.random.default_rng([seed, 19])
        self.saturated_after = saturated_after
        self.sampling = sampling
        self.dry: Counter[str] = Counter()
        """Per stage: traced runs in a row that showed no new edge."""
        self.traced: Counter[str] = Counter()
        self.paused: Counter[str] = Counter()
        self._new = 0

    def wants(self, stage: str) -> bool:
        """Whether the next run of ``stage`` is traced (draws from the sampler's stream when saturated)."""
        if stage in NEVER_TRACED:
            return False
        if self.dry[stage] < self.saturated_after:
            return True
        return bool(self.rng.random() < 1.0 / self.sampling)

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        key = stage.split(":")[0]
        tracer = self.tracer
        if not tracer.running:  # not inside a traced execution (an import of another worker's seed, say)
            yield
            return
        self._new += tracer.commit()
        traced = self.wants(key)
        if not traced:
            self.paused[key] += 1
            tracer.stop()
            try:
                yield
            finally:
                tracer.start()
            return
        self.traced[key] += 1
        try:
            yield
        finally:
            new = tracer.commit()
            self._new += new
            self.dry[key] = 0 if new else self.dry[key] + 1

    def take(self) -> int:
        """The new edges committed inside watched stages since the last call (the fuzzer adds them to its own)."""
        new, self._new = self._new, 0
        return new

    def summary(self) -> str:
        """Per stage, the runs traced and paused."""
        stages = sorted(set(self.traced) | set(self.paused))
        return ", ".join(f"{s} {self.traced[s]}/{self.traced[s] + self.paused[s]}" for s in stages)
