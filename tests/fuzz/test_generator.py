"""The random program generator: it covers the graph dialect, its programs are valid and deterministic, and
each recipe run alone in the middle of an existing function (the fuzzer's "insert an op") keeps it valid."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.interp import run
from tensorium.fuzz.builder import ProgramBuilder
from tensorium.fuzz.generator import (
    PASS_PRODUCED_OPS,
    RECIPE_NAMES,
    RECIPE_WEIGHTS,
    GenConfig,
    apply_random_recipe,
    apply_recipe,
    generate_module,
    random_array,
    random_inputs,
)
from tensorium.ir import InsertionPoint, func_body, make_func, make_module
from tensorium.ir.core import Operation, Value
from tensorium.ir.dialects.builtin import func_return, functions, set_results
from tensorium.ir.opdef import registered_ops
from tensorium.ir.parser import parse_module, parse_type_text
from tensorium.ir.printer import print_module
from tensorium.ir.types import QuantizedType, TensorType

SEEDS = range(60)
COVERAGE_SEEDS = range(200)  # every op shows up in 10 or more of these programs: room for recipe changes
NUM_OPS = 20


def _finite(arrays: list[np.ndarray]) -> bool:
    return all(np.isfinite(a).all() for a in arrays if a.dtype.kind == "f")


def test_every_graph_op_but_the_pass_produced_ones_is_generated() -> None:
    graph_ops = {op.name for op in registered_ops("graph")}
    assert PASS_PRODUCED_OPS <= graph_ops, f"not graph ops: {sorted(PASS_PRODUCED_OPS - graph_ops)}"
    seen: set[str] = set()
    for seed in COVERAGE_SEEDS:
        seen |= {op.name for op in generate_module(seed, NUM_OPS).walk()}
    missing = sorted(graph_ops - PASS_PRODUCED_OPS - seen)
    assert not missing, f"no recipe of tensorium/fuzz/generator.py generates {missing}"
    assert not seen & PASS_PRODUCED_OPS


@pytest.mark.parametrize("chunk", range(3))
def test_generated_programs_verify_round_trip_and_run_finite(chunk: int) -> None:
    for seed in SEEDS[chunk::3]:
        module = generate_module(seed, NUM_OPS)
        tm.verify(module)
        text = tm.print_module(module)
        assert tm.print_module(tm.parse_module(text)) == text, seed
        outputs = run(module, random_inputs(module, seed))
        assert _finite(outputs), f"seed {seed} computes NaN or inf:\n{text}"


def test_same_seed_same_program() -> None:
    config = GenConfig(num_ops=16, image_probability=0.5, f64_probability=0.2, f16_probability=0.2)
    for seed in (0, 7, 123456789):
        assert tm.print_module(generate_module(seed, 16)) == tm.print_module(generate_module(seed, 16))
        assert tm.print_module(generate_module(seed, config=config)) == tm.print_module(
            generate_module(seed, config=config)
        )
    assert tm.print_module(generate_module(1, 16)) != tm.print_module(generate_module(2, 16))


def _insert_in_the_middle(name: str | None, seed: int) -> tuple[Operation, list[Value]]:
    """A generated program with recipe ``name`` (a random one when None) run before an op in the middle of
    @main, reading only the values defined above that op; the program and the values the recipe made."""
    module = generate_module(seed, 10)
    block = func_body(functions(module)[0])
    ops = block.ops[:-1]
    anchor = ops[len(ops) // 2] if ops else block.ops[-1]
    values = list(block.args) + [r for op in ops[: block.index_of(anchor)] for r in op.results]
    rng = np.random.default_rng(seed)
    with InsertionPoint.before_op(anchor):
        new = apply_recipe(name, rng, values) if name is not None else apply_random_recipe(rng, values)
    assert not {id(v) for v in new} & {id(v) for v in values}
    return module, new


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_each_recipe_inserted_mid_function_keeps_the_program_valid(name: str) -> None:
    emitted = False
    for seed in range(4):
        module, new = _insert_in_the_middle(name, seed)
        func = functions(module)[0]
        body = func_body(func)
        for v in new:
            op = v.defining_op()
            assert op is not None and op.parent is body, "recipes insert at the insertion point only"
        emitted |= bool(new)
        tm.verify(module)  # dominance: inserted ops read only values above the insertion point
        set_results(func, [*func_return(func).operands, *new])
        tm.verify(module)
        text = tm.print_module(module)
        assert tm.print_module(tm.parse_module(text)) == text
        outputs = run(module, random_inputs(module, seed))
        assert _finite(outputs), f"recipe {name} computes NaN or inf:\n{text}"
    assert emitted, f"recipe {name} never emitted anything"


@pytest.mark.parametrize("name", RECIPE_NAMES)
def test_each_recipe_copes_with_no_values(name: str) -> None:
    func = make_func("main", [])
    module = make_module([func])
    with InsertionPoint(func_body(func)):
        new = apply_recipe(name, np.random.default_rng(0), [])
    set_results(func, new)
    tm.verify(module)
    assert _finite(run(module, []))


def test_the_public_api() -> None:
    assert set(RECIPE_WEIGHTS) == set(RECIPE_NAMES) and all(w > 0 for w in RECIPE_WEIGHTS.values())
    with pytest.raises(RuntimeError, match="InsertionPoint"):
        apply_random_recipe(np.random.default_rng(0), [])
    first = tm.print_module(_insert_in_the_middle(None, 5)[0])
    assert tm.print_module(_insert_in_the_middle(None, 5)[0]) == first, "same rng, same insertion"


@pytest.mark.parametrize(
    "element", ["i2", "u1", "u2", "i3", "!quant<i1:f32, per_tensor>", "!quant<u2:f32, per_tensor>"]
)
def test_integer_constants_stay_in_their_types_range(element: str) -> None:
    """A narrow integer's or a k-bit code's constant holds values of its type only: mutators' new constants of a
    quant type once held -4..4 in a 1-bit type, whose text the parser refuses (the reducer then raised, and two
    fuzzing runs died)."""
    scalar = parse_type_text(element)
    lowest, highest = scalar.code_range if isinstance(scalar, QuantizedType) else (scalar.min_value, scalar.max_value)
    func = make_func("main", [], [])
    with InsertionPoint(func_body(func)):
        builder = ProgramBuilder(np.random.default_rng(0), GenConfig(special_probability=0.0))
        value = builder.constant(TensorType((64,), scalar))
    set_results(func, [value])
    array = value.defining_op().attributes["value"].array
    assert lowest <= array.min() and array.max() <= highest and len(np.unique(array)) > 1
    parse_module(print_module(make_module([func])))  # the program's text parses again
    # The mutators' new constants and the inputs come from random_array: it missed the range until stop 34, so a
    # mutated program held codes -4..4 of a u1 type (a roundtrip "failure" of the fuzzer's own making).
    drawn = random_array(TensorType((64,), scalar), np.random.default_rng(1))
    assert lowest <= drawn.min() and drawn.max() <= highest and len(np.unique(drawn)) > 1
