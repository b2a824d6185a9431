"""Near misses: every miss of every pattern builds a valid program that its pass leaves unfused (the pattern
with one element changed is not the pattern), that computes what the original computes, and that the
fuzzer's mutators write into programs."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.fuzz.near_miss import NEAR_MISSES, Materials
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.ir import InsertionPoint, func_body, make_func, make_module
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import set_results
from tensorium.ir.types import IntegerType, ScalarType, TensorType, f32
from tensorium.passes import PassManager

SHAPES = {
    "attention": (2, 3, 4),
    "siblings": (3, 4),
    "batch-norm": (1, 3, 5, 4),
    "transpose": (2, 3, 4),
    "float-identity": (2, 3, 4),
    "splat-identity": (2, 3, 4),
}
MISSES = [(pattern, miss) for pattern, p in NEAR_MISSES.items() for miss in p.misses]


def _near_miss_module(pattern: str, miss: str, shape: tuple[int, ...], element: ScalarType = f32) -> Operation:
    """@main(x) returning what ``miss`` (or the exact pattern, for ``miss == "exact"``) builds around x."""
    func = make_func("main", [TensorType(shape, element)], arg_names=["x"])
    (x,) = func_body(func).args
    chosen = NEAR_MISSES[pattern]
    build = chosen.exact if miss == "exact" else chosen.misses[miss]
    with InsertionPoint(func_body(func)):
        stand_in, extras = build(Materials(np.random.default_rng(0)), x)
    outputs = ([stand_in] if stand_in is not None else []) + extras
    assert outputs, f"{pattern}/{miss} built nothing for {shape}"
    set_results(func, outputs)
    module = make_module([func])
    tm.verify(module)
    return module


# What each pass makes of its pattern: none of it may appear in a near miss after the pass.
FUSED = {
    "fuse-attention": lambda op: op.name == "graph.attention",
    "fuse-siblings": lambda op: op.name == "graph.matmul" and op.operands[1].type.rank == 3,
    "fold-batch-norm": lambda op: False,
}


def _optimized(module: Operation, pass_name: str) -> list[Operation]:
    optimized = tm.parse_module(tm.print_module(module))
    PassManager.parse(pass_name).run(optimized)
    return list(optimized.walk())


@pytest.mark.parametrize("pattern", sorted(NEAR_MISSES))
def test_each_pass_takes_the_exact_pattern(pattern: str) -> None:
    pass_name = NEAR_MISSES[pattern].pass_name
    ops = _optimized(_near_miss_module(pattern, "exact", SHAPES[pattern]), pass_name)
    names = [op.name for op in ops]
    if pass_name == "fold-batch-norm":
        assert "graph.batch_norm" not in names
    elif pass_name == "canonicalize":
        returned = next(op for op in ops if op.name == "func.return")
        assert all(v.defining_op() is None for v in returned.operands), names
    else:
        assert any(FUSED[pass_name](op) for op in ops), names


@pytest.mark.parametrize(("pattern", "miss"), MISSES)
def test_each_near_miss_is_refused_by_its_pass_and_kept_sound(pattern: str, miss: str) -> None:
    shape = SHAPES[pattern]
    if miss == "transpose-a-on-one":
        shape = (4, 4)
    module = _near_miss_module(pattern, miss, shape)
    pass_name = NEAR_MISSES[pattern].pass_name
    before = tm.print_module(module)
    ops = _optimized(module, pass_name)
    assert not any(FUSED.get(pass_name, lambda op: False)(op) for op in ops), f"{pass_name} took {miss}"
    if pass_name == "fold-batch-norm":
        assert any(op.name == "graph.batch_norm" for op in ops), f"{miss}: the batch norm was folded"
    if pass_name == "canonicalize":
        returned = next(op for op in ops if op.name == "func.return")
        assert all(v.defining_op() is not None for v in returned.operands), f"{miss}: canonicalized to the input"
    for specials in (False, True):
        verdict = check(FuzzCase(before, pass_name, seed=1, backends=("interp",), specials=specials))
        assert verdict.status == "ok", (miss, specials, verdict)


@pytest.mark.parametrize("pattern", sorted(NEAR_MISSES))
def test_the_near_miss_mutators_write_their_misses_into_programs(pattern: str) -> None:
    from tensorium.fuzz.generator import GenConfig, generate_module
    from tensorium.fuzz.mutators import PATTERN_PASSES, mutate_module

    name = f"near-miss-{pattern}"
    assert PATTERN_PASSES[name] == (NEAR_MISSES[pattern].pass_name,)
    rng = np.random.default_rng(3)
    config = GenConfig(image_probability=0.6 if pattern == "batch-norm" else 0.15)
    made = 0
    for seed in range(12):
        module = generate_module(seed, config=config)
        mutant = mutate_module(module, rng, config, only=[name])
        if mutant is None:
            continue
        made += 1
        assert len(list(mutant[0].walk())) > len(list(module.walk()))
    assert made >= 4, f"{name} mutated only {made} of 12 programs"


INTEGERS = [IntegerType(8), IntegerType(5, False), IntegerType(2), IntegerType(64)]


@pytest.mark.parametrize("element", INTEGERS, ids=str)
@pytest.mark.parametrize("miss", ["exact", *sorted(NEAR_MISSES["splat-identity"].misses)])
def test_the_splat_identities_of_integers_fold_only_when_exact(miss: str, element: IntegerType) -> None:
    """x + 0 of any integer width folds to x; 1 + x, x * -1 (the maximum of an unsigned type), x * 2 (-2 of
    i2), x / -1 (INT_MIN / -1 among the special inputs), ... keep an op, and compute what they did."""
    module = _near_miss_module("splat-identity", miss, (3, 5), element)
    before = tm.print_module(module)
    returned = next(op for op in _optimized(module, "canonicalize") if op.name == "func.return")
    assert (returned.operands[0].defining_op() is None) == (miss == "exact"), miss
    for specials in (False, True):
        verdict = check(FuzzCase(before, "canonicalize", seed=2, backends=("interp", "cpu"), specials=specials))
        assert verdict.status == "ok", (miss, specials, verdict)


def test_a_float_value_takes_an_integer_detour_through_the_identities_half_the_time() -> None:
    """x * -1 of a float x is often written on x cast to an integer type and cast back: the integer identities
    (x * 0 folds to zeros for integers only) need integer values, which generated programs rarely have."""
    detours = 0
    for seed in range(8):
        func = make_func("main", [TensorType((2, 3), f32)], arg_names=["x"])
        (x,) = func_body(func).args
        with InsertionPoint(func_body(func)):
            stand_in, _ = NEAR_MISSES["splat-identity"].misses["x-times-minus-one"](
                Materials(np.random.default_rng(seed)), x
            )
        assert stand_in is not None and stand_in.type == x.type
        set_results(func, [stand_in])
        module = make_module([func])
        tm.verify(module)
        names = [op.name for op in module.walk()]
        detours += "graph.cast" in names
        returned = next(op for op in _optimized(module, "canonicalize") if op.name == "func.return")
        assert returned.operands[0].defining_op() is not None
        verdict = check(FuzzCase(tm.print_module(module), "canonicalize", seed=seed, backends=("interp",)))
        assert verdict.status == "ok", verdict
    assert 1 <= detours <= 7
