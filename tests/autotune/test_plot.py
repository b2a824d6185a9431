"""The tuning plot: per-kernel and whole-model best speed-up against time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorium.autotune.plot import model_curve, speedup_curves, write_svg
from tensorium.autotune.search import KernelResult
from tensorium.lowering.space import Config

GEMM = Config.parse("gemm{mr=6}")


def _result(key: str, default: float, history: list[tuple[float, float]], started: float) -> KernelResult:
    r = KernelResult(key, "gemm", GEMM, default, GEMM, history[-1][1], history=history)
    r.started = started
    return r


def test_curves_follow_the_best_times(tmp_path: Path) -> None:
    a = _result("a" * 20, 4.0, [(0.0, 4.0), (5.0, 2.0)], started=0.0)
    b = _result("b" * 20, 4.0, [(0.0, 4.0), (3.0, 1.0)], started=10.0)
    assert speedup_curves([a, b])[1][1] == [(10.0, 1.0), (13.0, 4.0)]
    whole = model_curve([a, b])
    assert whole[-1] == (13.0, pytest.approx(8.0 / 3.0)) and whole[0][1] == 1.0
    svg = write_svg([a, b], tmp_path / "plot.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") == 2 + 3 and "the model" in svg
