"""Tuning a whole model: its tunable kernels searched within one time budget, records kept in a database.

import tensorium, tensorium.autotune
results = tensorium.autotune.tune(model, x, budget=60)      # records into the default database
fast = tensorium.compile(model)                               # applies the best records
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ..api import check_target
from ..api import compile as compile_model
from ..errors import TensoriumError
from ..lowering.space import TunableKernel
from .measure import Measurer, Measures
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


def tune(
    model: Any,
    *example_inputs: Any,
    budget: float = 60.0,
    target: str | Any = "cpu",
    db: TuningDB | str | os.PathLike[str] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    measurer: Measures | None = None,
) -> list[KernelResult]:
    """Compile ``model`` (as :func:`tensorium.compile` does) for ``example_inputs`` and tune its kernels for
    ``budget`` seconds; later compiles with the same database apply the best points found. Progress lines go
    to stderr unless ``progress`` says otherwise; ``measurer`` defaults to a local worker process."""
    compiled = compile_model(model, target=target, tuning_db=False)
    compiled(*example_inputs)
    report = progress if progress is not None else (lambda line: print(line, file=sys.stderr, flush=True))
    options = SearchOptions(seed=seed)
    return tune_kernels(compiled.tunable_kernels(), compiled.target, budget, db, options, report, measurer)
