"""Measuring kernels in a worker process: real timings, illegal points rejected, crashes and hangs survived."""

from __future__ import annotations

import pytest

import tensorium
from tensorium.autotune.measure import Job, Measurer, build_job
from tensorium.errors import ScheduleError
from tensorium.lowering.space import Config, TunableKernel

CRASH = """module {
  func.func @crash(%out: buffer<4xf32, global>) {
    %i = loop.const {value = 1000000000000, dtype = index} : () -> index
    %x = loop.const {value = 1.0, dtype = f32} : () -> f32
    loop.store %x, %out, %i : (f32, buffer<4xf32, global>, index) -> ()
    func.return
  }
}
"""

HANG = """module {
  func.func @hang(%out: buffer<1xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %n = loop.const {value = 1000000000000000000, dtype = index} : () -> index
    %one = loop.const {value = 1.5, dtype = f32} : () -> f32
    loop.for %c0, %n, %c1 (
      {
      ^bb0(%i: index):
        %v = loop.load %out, %c0 : (buffer<1xf32, global>, index) -> f32
        %s = loop.mul %v, %one : (f32, f32) -> f32
        loop.store %s, %out, %c0 : (f32, buffer<1xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) : (index, index, index) -> ()
    func.return
  }
}
"""


def test_illegal_points_are_rejected_before_measuring(gemm_kernel: TunableKernel, target: tensorium.Target) -> None:
    bad = gemm_kernel.default.replace(mr=1000)
    with pytest.raises(ScheduleError, match="mr=1000 is not one of"):
        build_job(gemm_kernel.op, target, bad)


def test_a_crash_costs_one_trial_and_the_worker_comes_back(
    gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    with Measurer(repeats=2) as measurer:
        crashed = measurer.measure(Job("crash", "gemm{}", CRASH, target))
        assert not crashed.ok and crashed.error is not None and "crashed (signal" in crashed.error
        job = build_job(gemm_kernel.op, target, gemm_kernel.default)
        assert Config.parse(job.config) == gemm_kernel.default
        result = measurer.measure(job)
        assert result.ok, result.error
        assert result.seconds is not None and result.seconds > 0 and len(result.runs) == 2
        assert measurer.failures == 1 and measurer.starts == 2


def test_a_hang_times_out_and_is_recorded_as_such(target: tensorium.Target) -> None:
    with Measurer(timeout=4.0) as measurer:
        hung = measurer.measure(Job("hang", "gemm{}", HANG, target))
    assert not hung.ok and hung.error is not None and hung.error.startswith("timed out after 4 s")


def test_a_kernel_that_fails_to_build_is_an_error_not_a_crash(target: tensorium.Target) -> None:
    with Measurer() as measurer:
        result = measurer.measure(Job("bad", "gemm{}", "module { func.func @f( }", target))
    assert not result.ok and result.error is not None and result.error.startswith("ParseError")
    assert measurer.starts == 1


def test_the_cpu_clock_measures_and_a_bad_clock_is_a_clear_error(
    gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    job = build_job(gemm_kernel.op, target, gemm_kernel.default)
    with Measurer(repeats=2, clock="cpu") as measurer:
        result = measurer.measure(job)
    assert result.ok, result.error
    assert result.seconds is not None and result.seconds > 0 and len(result.runs) == 2
    with Measurer(clock="sundial") as measurer:
        bad = measurer.measure(job)
    assert not bad.ok and bad.error is not None and "clock must be one of wall, cpu" in bad.error


def test_measured_arguments_give_dim_expressions_the_product_of_their_names() -> None:
    """A kernel reading ``[b*s]x8`` and writing ``[b]x[s]x8`` (a reshape back to named dims) is measured with
    buffers that agree: each name at the sample size, a product at the product (a flat 64 for every symbolic
    dim would make the copy read 64*64*8 elements of a 64x8 buffer)."""
    import numpy as np

    from tensorium.autotune.features import SYMBOLIC_SIZE
    from tensorium.autotune.measure import random_arguments
    from tensorium.ir.parser import parse_module

    text = """module {
  func.func @k(%x: buffer<[b*s]x8xf32, global>, %y: buffer<[b]x[s]x8xf32, global>, %z: buffer<?x[4*b]xf32, global>) {
    func.return
  }
}"""
    kernel = parse_module(text).regions[0].block.ops[0]
    shapes = [a.shape for a in random_arguments(kernel, np.random.default_rng(0))]
    n = SYMBOLIC_SIZE
    assert shapes == [(n * n, 8), (n, n, 8), (n, 4 * n)]
