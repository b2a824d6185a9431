"""Autotuning guided by a learned cost model (docs/autotune.md).

:mod:`.measure` times one kernel at one point of its space in a worker process; :mod:`.records` is the
database of trials that ``tensorium.compile`` reads; :mod:`.features` describes candidates for
:mod:`.model`, the cost model (LightGBM lambdarank, a numpy MLP without it); :mod:`.search` is the
evolutionary, model-guided search; :mod:`.tuning` tunes whole models (``tensorium.autotune.tune``).
"""

from __future__ import annotations

from typing import Any

from .records import Record, TuningDB, default_db_path

__all__ = ["Record", "TuningDB", "default_db_path", "tune", "tune_kernels"]


def __getattr__(name: str) -> Any:
    # tune and tune_kernels import tensorium.api, which imports .records: load them on first use only.
    if name in ("tune", "tune_kernels"):
        from . import tuning

        return getattr(tuning, name)
    raise AttributeError(f"module 'tensorium.autotune' has no attribute '{name}'")
