"""Pattern cases and the refusal oracles (tensorium/fuzz/patterns.py, the oracle's missed-rewrite and refusal)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorium.backends import cpu
from tensorium.errors import LoweringError, PassError
from tensorium.fuzz.fuzzer import FuzzConfig, Fuzzer
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.fuzz.patterns import EXACT_FORMS, missed_rewrite, pattern_case, pattern_program
from tensorium.fuzz.reduce import format_case, parse_case, reduce_case
from tensorium.ir.parser import parse_module
from tensorium.ir.printer import print_module
from tensorium.passes import fuse
from tensorium.passes.pipeline import parse_pipeline

NOT_FOLDED = """
module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
    %w = graph.constant {value = dense<0.5> : tensor<2x2x3x3xf32>} : () -> tensor<2x2x3x3xf32>
    %c = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
    %r = graph.relu %c : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %s = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %b = graph.constant {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %n = graph.batch_norm %r, %s, %b, %b, %s {axis = 1} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    func.return %n : tensor<1x2x4x4xf32>
  }
}
"""  # noqa: E501
"""A batch norm after an activation: fold-batch-norm rightly leaves it, so a case expecting the fold fails."""


@pytest.mark.parametrize("name", sorted(EXACT_FORMS))
def test_every_exact_form_is_rewritten_by_its_pass_and_passes_every_oracle(name: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(3):
        module = pattern_program(name, rng)
        assert module is not None, name
        pass_name = EXACT_FORMS[name].pass_name
        optimized = parse_module(print_module(module))
        for p in parse_pipeline(pass_name):
            p.run(optimized)
        assert missed_rewrite(pass_name, pass_name, optimized) is None, print_module(module)
        case = FuzzCase(print_module(module), pass_name, seed=1, backends=("interp",), expect=pass_name)
        assert check(case).status == "ok", check(case)


def test_a_pattern_the_pass_leaves_fails_as_a_missed_rewrite_and_the_case_file_keeps_the_expectation() -> None:
    case = FuzzCase(NOT_FOLDED, "fold-batch-norm", seed=0, backends=("interp",), expect="fold-batch-norm")
    verdict = check(case)
    assert verdict.failure is not None and verdict.failure.kind == "missed-rewrite"
    assert "1 graph.batch_norm left" in verdict.failure.summary
    parsed = parse_case(format_case(case))
    assert (parsed.expect, parsed.pipeline, parsed.backends) == (case.expect, case.pipeline, case.backends)
    assert check(parsed).failure == verdict.failure
    assert check(FuzzCase(NOT_FOLDED, "fold-batch-norm", backends=("interp",))).status == "ok"  # no expectation
    assert check(FuzzCase(NOT_FOLDED, "dce", backends=("interp",), expect="fold-batch-norm")).status == "ok"


def test_a_missed_rewrite_is_not_reduced_away_from_its_pattern() -> None:
    case = FuzzCase(NOT_FOLDED, "dce,fold-batch-norm", seed=0, backends=("interp",), expect="fold-batch-norm")
    verdict = check(case)
    assert verdict.failure is not None
    assert reduce_case(case, verdict.failure, seconds=30) == case  # cutting its constants into inputs would fake it


def test_a_case_file_refuses_an_expectation_no_pass_has() -> None:
    with pytest.raises(Exception, match="'// expect:' must name a pass with a pattern"):
        parse_case(f"// pipeline: dce\n// expect: fuse\n{NOT_FOLDED}")


def test_pattern_cases_cover_every_form_and_the_fuzzer_makes_them() -> None:
    rng = np.random.default_rng(0)
    made = [pattern_case(rng) for _ in range(200)]
    assert all(m is not None for m in made)
    expects = {m[2] for m in made if m is not None}
    assert expects == {"fuse-attention", "fuse-siblings", "fold-batch-norm", "canonicalize"}
    fuzzer = Fuzzer(FuzzConfig(pattern_fraction=1.0, coverage=False, seed=3), log=None)
    for _ in range(3):
        _, pipeline = fuzzer._generate()
        assert fuzzer._expect is not None and fuzzer._expect in [p.name for p in pipeline]


def test_a_pass_that_refuses_its_own_defaults_fails_the_case(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any) -> None:
        raise PassError("max-ops must be at least 1")

    monkeypatch.setattr(fuse.Fuse, "__post_init__", refuse)
    verdict = check(FuzzCase(NOT_FOLDED, "canonicalize,fuse", backends=("interp",)))
    assert verdict.failure is not None and verdict.failure.kind == "refusal"
    assert "pass 'fuse' refuses its own default options" in verdict.failure.summary


def test_an_optimized_program_the_cpu_refuses_while_it_compiles_the_original_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = parse_module(NOT_FOLDED)
    build = cpu.CpuExecutable.build

    def refuse_the_optimized(module: Any, *args: Any, **kwargs: Any) -> Any:
        if module is not original:
            raise LoweringError("no loop lowering is registered for this op")
        return build(module, *args, **kwargs)

    monkeypatch.setattr(cpu.CpuExecutable, "build", staticmethod(refuse_the_optimized))
    case = FuzzCase(NOT_FOLDED, "canonicalize", backends=("interp", "cpu"), opt_level=1)
    verdict = check(case, original)
    assert verdict.failure is not None and verdict.failure.kind == "refusal", verdict
    assert verdict.failure.stage == "cpu build"
    assert "refuses the optimized program but compiles the original" in verdict.failure.summary
    packed = FuzzCase(NOT_FOLDED, "pack-quant-gpu", backends=("interp", "cpu"), opt_level=1)
    assert check(packed, original).status == "refused"  # packed for a GPU: the CPU may refuse it
