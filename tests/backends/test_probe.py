"""The machine-limit probes: FMA throughput per target and the busy clock."""

from __future__ import annotations

import pytest

from tensorium.backends.llvm.probe import _fma_kernel_ir, measure_clock_ghz, measure_fma_peak
from tensorium.targets import host_target, parse_target


def test_fma_kernel_has_independent_chains_of_the_targets_width() -> None:
    text = _fma_kernel_ir(8, 12, "x86_64-unknown-linux-gnu")
    assert text.count("call <8 x float> @llvm.fma.v8f32") == 12
    # each chain starts from its own value, so none can be merged with another
    assert len({line.split("=")[1] for line in text.splitlines() if "%init" in line and "fadd" in line}) == 12


def test_peak_is_positive_and_scales_with_the_vector_width() -> None:
    host = host_target()
    wide = measure_fma_peak(host, threads=1, seconds=0.005, repeats=2)
    assert wide.gflops > 0 and wide.lanes == host.lanes() and wide.threads == 1
    assert "FMA chains" in wide.describe()
    scalar = parse_target("cpu:x86-64")
    narrow = measure_fma_peak(scalar, threads=1, seconds=0.005, repeats=2)
    assert narrow.lanes == 4 < wide.lanes or host.lanes() == 4


def test_clock_is_a_plausible_frequency() -> None:
    ghz = measure_clock_ghz(host_target(), repeats=2)
    assert 0.2 < ghz < 10.0


def test_a_target_that_is_not_a_cpu_is_refused() -> None:
    with pytest.raises(Exception, match="cannot compile"):
        measure_fma_peak(parse_target("interp"))
