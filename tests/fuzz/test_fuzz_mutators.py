"""IR and pipeline mutators: every one of them changes programs, and what comes out is valid."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.interp import run
from tensorium.errors import TensoriumError
from tensorium.fuzz.generator import generate_module
from tensorium.fuzz.mutators import IR_MUTATORS, TERMINAL_PASSES, mutate_module, mutate_pipeline, random_pipeline
from tensorium.fuzz.oracle import case_inputs
from tensorium.ir.dialects.builtin import lookup_func
from tensorium.ir.verifier import verify
from tensorium.passes.pipeline import parse_pipeline

SEEDS = range(12)


@pytest.mark.parametrize("name", sorted(IR_MUTATORS))
def test_each_ir_mutator_makes_valid_programs_and_leaves_its_input_alone(name: str) -> None:
    rng = np.random.default_rng(7)
    changed = 0
    for seed in SEEDS:
        module = generate_module(seed, 10)
        before = tm.print_module(module)
        mutant = mutate_module(module, rng, only=[name])
        assert tm.print_module(module) == before, f"{name} changed the module it was given"
        if mutant is None:
            continue
        result, used = mutant
        assert used == name
        verify(result)
        text = tm.print_module(result)
        assert tm.print_module(tm.parse_module(text)) == text
        if text != before:
            changed += 1
        try:
            run(result, case_inputs(result, seed))
        except TensoriumError:
            pass  # a mutant may be refused by the interpreter (the oracle calls it invalid), never crash it
    assert changed >= 2, f"mutator {name} changed only {changed} of {len(SEEDS)} programs"


def test_mutants_mostly_keep_results_finite() -> None:
    rng = np.random.default_rng(1)
    finite = total = 0
    for seed in range(40):
        mutant = mutate_module(generate_module(seed, 8), rng)
        if mutant is None:
            continue
        total += 1
        try:
            outputs = run(mutant[0], case_inputs(mutant[0], seed))
        except TensoriumError:
            continue
        finite += all(np.all(np.isfinite(o)) for o in outputs if o.dtype.kind == "f")
    assert total >= 35 and finite >= 0.85 * total, (finite, total)


def test_pipeline_mutators_make_pipelines_that_read_back() -> None:
    rng = np.random.default_rng(0)
    pipeline = random_pipeline(rng)
    kinds: Counter[str] = Counter()
    for _ in range(300):
        pipeline, kind = mutate_pipeline(pipeline, rng)
        kinds[kind] += 1
        text = str(pipeline)
        assert str(parse_pipeline(text)) == text
        names = [p.name for p in pipeline]
        assert 1 <= len(names) <= 9
        assert all(n not in TERMINAL_PASSES for n in names[:-1]), text
    assert set(kinds) == {"insert", "delete", "swap", "repeat", "options", "fresh", "terminal"}


def test_pipelines_leave_out_passes_that_change_results_by_design() -> None:
    """quantize is lossy on purpose: in a random pipeline every oracle would call it a mismatch (as the
    one-hour campaign of issue 19 did, twice)."""
    rng = np.random.default_rng(1)
    pipeline = random_pipeline(rng)
    seen: set[str] = set()
    for _ in range(400):
        pipeline, _kind = mutate_pipeline(pipeline, rng)
        seen |= {p.name for p in pipeline}
    assert "quantize" not in seen
    assert {"fold", "cse", "fuse"} <= seen


def test_a_pattern_brings_the_pass_that_looks_for_it_into_the_pipeline() -> None:
    from tensorium.fuzz.mutators import PATTERN_PASSES, with_pass_for

    rng = np.random.default_rng(0)
    base = parse_pipeline("lower-to-loops")
    for name, targets in PATTERN_PASSES.items():
        assert name in IR_MUTATORS
        added = [p.name for p in with_pass_for(base, name, rng)]
        assert added[-1] == "lower-to-loops" and len(added) == 2 and added[0] in targets, (name, added)
    kept = parse_pipeline("cse,fold")
    assert with_pass_for(kept, "commuted-twin", rng) is kept
    assert with_pass_for(kept, "insert", rng) is kept


def test_generated_programs_meet_the_passes_for_their_ops() -> None:
    """with_pass_for_ops puts one of the passes of OP_PASSES for a program's ops into its pipeline (before a
    terminal pass), keeps a pipeline that has one, and leaves alone programs without such ops."""
    from tensorium.fuzz.mutators import OP_PASSES, with_pass_for_ops
    from tensorium.ir.opdef import lookup
    from tensorium.passes.base import pass_names

    assert all(lookup(op) is not None for op in OP_PASSES)
    assert {p for passes in OP_PASSES.values() for p in passes} <= set(pass_names())
    conv = tm.parse_module(
        "module {\n  func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {\n"
        "    %y = graph.conv2d %x, %w : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>\n"
        "    func.return %y : tensor<1x3x3x3xf32>\n  }\n}\n"
    )
    rng = np.random.default_rng(0)
    chosen = Counter()
    for _ in range(60):
        pipeline = with_pass_for_ops(parse_pipeline("cse,lower-to-loops"), conv, rng)
        names = [p.name for p in pipeline]
        assert names[-1] == "lower-to-loops" and len(names) == 3
        (added,) = [n for n in names if n not in ("cse", "lower-to-loops")]
        chosen[added] += 1
    assert set(chosen) == set(OP_PASSES["graph.conv2d"])
    kept = parse_pipeline("layout,cse")
    assert with_pass_for_ops(kept, conv, rng) is kept
    plain = tm.parse_module(
        "module {\n  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "    %y = graph.tanh %x : (tensor<4xf32>) -> tensor<4xf32>\n    func.return %y : tensor<4xf32>\n  }\n}\n"
    )
    assert with_pass_for_ops(parse_pipeline("cse"), plain, rng) == parse_pipeline("cse")


def test_dynamic_dims_keep_the_program_and_its_inputs() -> None:
    rng = np.random.default_rng(3)
    made = 0
    for seed in range(20):
        module = generate_module(seed, 8)
        mutant = mutate_module(module, rng, only=["dynamic-dims"])
        if mutant is None:
            continue
        dynamic = mutant[0]
        signature = str(lookup_func(dynamic, "main").attributes["function_type"])  # type: ignore[union-attr]
        sizes = {int(n) for n in re.findall(r"\[s(\d+)\]", signature)}
        assert len(sizes) == 1, signature  # one size made dynamic, named for it
        inputs = case_inputs(dynamic, seed)
        assert [a.shape for a in inputs] == [a.shape for a in case_inputs(module, seed)]
        for got, want in zip(run(dynamic, inputs), run(module, inputs)):
            np.testing.assert_array_equal(got, want)
        made += 1
    assert made >= 15
