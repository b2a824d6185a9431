"""A short fuzzing run for the tests of the fuzzer's layers: fresh programs, no coverage tracing, no reduction,
stopping at the first failure (or after ``max_execs`` executions)."""

from __future__ import annotations

from typing import Any

from tensorium.fuzz.fuzzer import FuzzConfig, FuzzReport, fuzz


def short_run(max_execs: int, seed: int = 0, **options: Any) -> FuzzReport:
    """``tensorium fuzz`` for at most ``max_execs`` executions with ``options`` (FuzzConfig fields); by default
    no compiled backend runs and no quant program is generated, so each test turns on the layer it is about."""
    settings: dict[str, Any] = {
        "backends": ("interp",),
        "cpu_fraction": 1.0,
        "gpu_fraction": 1.0,
        "webgpu_fraction": 1.0,
        "schedule_fraction": 0.0,
        "quant_fraction": 0.0,
        "num_ops": 6,
        # the generation of before these two came: the layer tests' seeds and budgets were measured with it
        "op_pass_fraction": 0.0,
        "lowered_fraction": 0.0,
    }
    settings.update(options)
    config = FuzzConfig(
        seconds=600, seed=seed, coverage=False, reduce=False, max_execs=max_execs, max_failures=1, **settings
    )
    return fuzz(config, log=None)


def signatures(report: FuzzReport) -> list[str]:
    """The signatures of the failures a run found."""
    return [found.failure.signature for found in report.failures]
