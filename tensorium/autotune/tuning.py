"""Tuning a whole model: its tunable kernels searched within one time budget, records kept in a database.

import tensorium, tensorium.autotune
tuning = tensorium.autotune.tune(model, x, budget=60)       # records into the default database
print(tuning.check.describe())                                # tuned model against the default one
fast = tensorium.compile(model)                               # applies the best records
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..api import check_target
from ..api import compile as compile_model
from ..errors import TensoriumError
from ..lowering.space import TunableKernel
from .measure import Measurer, Measures
from .model_check import ModelCheck, check_model
from .records import TuningDB, open_db
from .search import KernelResult, Progress, SearchOptions, Tuner


def tune_kernels(
    kernels: Sequence[TunableKernel],
    target: str | Any = "cpu",
    budget: float = 60.0,
    db: TuningDB | str | os.PathLike[str] | None = None,
    options: SearchOptions | None = None,
    progress: Progress | None = None,
    measurer: Measures | None = None,
) -> list[KernelResult]:
    """Search ``kernels`` on ``target`` for ``budget`` seconds in all, recording every trial in ``db`` (a
    TuningDB or a path; default :func:`~tensorium.autotune.records.default_db_path`)."""
    parsed = check_target(target)
    if parsed.kind != "cpu":
        raise TensoriumError(f"tuning measures kernels on CPU targets only, not '{parsed}'")
    if measurer is None and not parsed.runs_here():
        raise TensoriumError(f"cannot measure kernels for '{parsed}' here: this machine lacks its CPU features")
    records = open_db(db if db is not None else True)
    assert records is not None
    own = measurer is None
    active = measurer if measurer is not None else Measurer()
    try:
        return Tuner(parsed, records, active, options, progress).tune(list(kernels), budget)
    finally:
        if own:
            assert isinstance(active, Measurer)
            active.close()


@dataclass
class ModelTuning:
    """What tuning a model found: each kernel's result (in the model's order; iterating a ModelTuning goes
    over them) and the whole-model check (None when it was not asked for)."""

    kernels: list[KernelResult]
    check: ModelCheck | None = None

    def __iter__(self) -> Iterator[KernelResult]:
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)


def tune(
    model: Any,
    *example_inputs: Any,
    budget: float = 60.0,
    target: str | Any = "cpu",
    db: TuningDB | str | os.PathLike[str] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    measurer: Measures | None = None,
    check: bool = True,
) -> ModelTuning:
    """Compile ``model`` (as :func:`tensorium.compile` does) for ``example_inputs`` and tune its kernels for
    ``budget`` seconds; later compiles with the same database apply the best points found. Progress lines go
    to stderr unless ``progress`` says otherwise; ``measurer`` defaults to a local worker process. With
    ``check`` (the default), the model built with the tuned points then runs against the model built with
    the defaults on ``example_inputs`` (:func:`~tensorium.autotune.model_check.check_model`, after the
    budget): unless it gives the same outputs and is not slower, its points are set aside in the records."""
    compiled = compile_model(model, target=target, tuning_db=False)
    compiled(*example_inputs)
    inputs = recorded_inputs(compiled, *example_inputs)
    report = progress if progress is not None else (lambda line: print(line, file=sys.stderr, flush=True))
    options = SearchOptions(seed=seed)
    records = open_db(db if db is not None else True)
    assert records is not None
    results = tune_kernels(compiled.tunable_kernels(), compiled.target, budget, records, options, report, measurer)
    if not check:
        return ModelTuning(results)
    verdict = check_model(compiled.artifact, records, inputs, progress=report)
    report(verdict.describe())
    return ModelTuning(results, verdict)


def recorded_inputs(compiled: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """The arrays a compiled model's artifact runs on when the model is called with ``args`` and ``kwargs``
    (after the frontend's conversions: torch tensors to arrays, static arguments left out, lifted
    parameters added), recorded by calling it once more (it must have run on them once, so that it has an
    artifact): the inputs :func:`check_model` needs."""
    artifact = compiled.artifact
    seen: list[list[Any]] = []
    run = artifact.run

    def recording(arrays: Sequence[Any], *rest: Any, **kw: Any) -> Any:
        seen.append([a.copy() if hasattr(a, "copy") else a for a in arrays])
        return run(arrays, *rest, **kw)

    artifact.run = recording
    try:
        compiled(*args, **kwargs)
    finally:
        del artifact.run
    if not seen:
        raise TensoriumError("the compiled model did not run its artifact; cannot check the tuned model")
    return seen[-1]
