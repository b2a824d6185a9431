"""Random points of the kernels' search spaces: drawn per case, legal, stable per kernel, and a schedule bug
that only non-default points have."""

from __future__ import annotations

import pytest

from tensorium.fuzz.generator import generate_module
from tensorium.fuzz.schedules import random_configs
from tensorium.ir import parse_module
from tensorium.ir.dialects import loop
from tensorium.lowering import reduce
from tensorium.lowering.space import tunable_kernels
from tensorium.targets import parse_target

from .layers import short_run, signatures

TWO_KERNELS = """
module {
  func.func @main(%a: tensor<9x20xf32>, %b: tensor<20x7xf32>) -> (tensor<9x7xf32>, tensor<9xf32>) {
    %0 = graph.matmul %a, %b : (tensor<9x20xf32>, tensor<20x7xf32>) -> tensor<9x7xf32>
    %1 = graph.reduce_sum %a {axes = [1]} : (tensor<9x20xf32>) -> tensor<9xf32>
    func.return %0, %1 : tensor<9x7xf32>, tensor<9xf32>
  }
}
"""


@pytest.mark.parametrize("target", ["cpu", "cpu:x86-64", "cuda:sm_90", "webgpu"])
def test_points_are_legal_and_depend_only_on_the_seed_and_the_kernel(target: str) -> None:
    module = parse_module(TWO_KERNELS)
    kernels = tunable_kernels(module, parse_target(target))
    drawn = [random_configs(module, parse_target(target), seed) for seed in range(12)]
    for configs in drawn:
        assert set(configs) == {k.key for k in kernels}
        for kernel in kernels:
            assert kernel.space.check(configs[kernel.key]) == configs[kernel.key]
    assert drawn[3] == random_configs(module, parse_target(target), 3)
    assert len({str(sorted(d.items())) for d in drawn}) > 6  # different seeds, different points


def test_a_kernel_keeps_its_point_when_other_ops_go() -> None:
    target = parse_target("cpu")
    both = random_configs(parse_module(TWO_KERNELS), target, 5)
    alone = parse_module(TWO_KERNELS.replace("%1 = graph.reduce_sum", "%1 = graph.reduce_max"))
    shared = {k: v for k, v in random_configs(alone, target, 5).items() if k in both}
    assert shared and all(both[k] == v for k, v in shared.items())  # the matmul's point survives a reduction


def test_generated_programs_compile_at_random_points() -> None:
    from tensorium.fuzz.oracle import FuzzCase, check
    from tensorium.ir.printer import print_module

    statuses = []
    for seed in range(6):
        text = print_module(generate_module(seed, 5))
        verdict = check(FuzzCase(text, "canonicalize", seed, ("interp", "cpu"), 1, schedule_seed=seed))
        assert verdict.failure is None, verdict.failure
        statuses.append(verdict.status)
    assert statuses.count("ok") >= 4


def test_a_bug_at_non_default_points_is_found_only_with_random_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORIUM_KERNEL_CACHE", "0")
    original = reduce.accumulate

    def short_with_unrolled_partials(k, t, init, bounds, names, term, combine, lanes=0):  # type: ignore[no-untyped-def]
        if lanes > k.target.lanes() and bounds:  # unroll > 1: never the default point
            with k.prologue():
                bounds = [*bounds[:-1], loop.sub(bounds[-1], k.index(1))]  # the bug: one element short
        return original(k, t, init, bounds, names, term, combine, lanes)

    monkeypatch.setattr(reduce, "accumulate", short_with_unrolled_partials)
    at_defaults = short_run(4, seed=2, backends=("interp", "cpu"), schedule_fraction=0.0)
    assert not at_defaults.failures
    report = short_run(30, seed=2, backends=("interp", "cpu"), schedule_fraction=1.0)
    assert signatures(report) == ["mismatch:cpu"], report.summary()
    assert report.failures[0].case.schedule_seed is not None
