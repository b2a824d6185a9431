"""Corners the generator and mutators reach: special values in inputs and constants, odd-width integer
programs compiled for the CPU, attributes at their corners; and a few seconds of fuzzing with all of it on."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.fuzz.generator import GenConfig, apply_recipe, generate_module
from tensorium.fuzz.mutators import mutate_module, random_pipeline
from tensorium.fuzz.oracle import FuzzCase, case_inputs, check
from tensorium.fuzz.recipes import ODD_WIDTHS
from tensorium.fuzz.special import special_values, sprinkle
from tensorium.ir import InsertionPoint, func_body, make_func, make_module
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation, Value
from tensorium.ir.dialects.builtin import set_results
from tensorium.ir.types import IntegerType, TensorType, bf16, f16, f32, f64, i1, i32, i64


def test_special_values_hold_the_edges_of_each_type() -> None:
    for element in (f16, bf16, f32, f64):
        values = special_values(element).astype(np.float64)
        assert np.isnan(values).any() and np.inf in values and -np.inf in values
        zeros = values[values == 0]
        assert np.signbit(zeros).any() and not np.signbit(zeros).all(), "both signed zeros"
        finite = np.abs(values[np.isfinite(values) & (values != 0)])
        info = np.finfo(np.float16 if element == f16 else np.float64 if element == f64 else np.float32)
        assert finite.min() < float(info.tiny) or element == bf16, "a subnormal"
    assert set(special_values(IntegerType(3))) >= {-4, -1, 0, 1, 3}
    assert set(special_values(IntegerType(5, signed=False))) >= {0, 1, 16, 31}
    assert set(special_values(i32)) >= {-(2**31), 2**31 - 1}
    assert set(special_values(i64)) >= {-(2**63), 2**63 - 1, -(2**31), 2**31 - 1}  # WebGPU holds i64 in 32 bits
    assert set(special_values(i1)) == {False, True}


def test_sprinkle_replaces_a_share_of_the_elements_by_special_values() -> None:
    rng = np.random.default_rng(0)
    ordinary = np.full((40, 40), 0.5, np.float32)
    out = sprinkle(ordinary, f32, rng)
    assert out.dtype == np.float32 and ordinary[0, 0] == 0.5
    changed = out != 0.5
    assert 0.15 < changed.mean() < 0.35
    assert set(np.unique(out[changed & ~np.isnan(out)])) <= set(special_values(f32)[1:])
    assert sprinkle(np.zeros((), np.int8), IntegerType(3), rng).shape == ()
    one = sprinkle(np.full(3, 2, np.int8), IntegerType(3), rng, fraction=0.0)
    assert (one != 2).sum() == 1, "at least one special element"


def _constants(module: Operation) -> list[np.ndarray]:
    return [
        op.attributes["value"].array
        for op in module.walk()
        if op.name == "graph.constant" and isinstance(op.attributes["value"], DenseAttr)
    ]


def test_constants_hold_special_values_when_the_config_asks() -> None:
    def specials(config: GenConfig) -> int:
        found = 0
        for seed in range(20):
            for a in _constants(generate_module(seed, config=config)):
                if a.dtype.kind == "f":
                    found += int((~np.isfinite(a)).any() or (np.signbit(a) & (a == 0)).any())
        return found

    assert specials(GenConfig(num_ops=10)) == 0, "off by default: property tests want finite programs"
    assert specials(GenConfig(num_ops=10, special_probability=0.5)) >= 10


def test_case_inputs_with_specials_are_deterministic_and_special() -> None:
    module = generate_module(4, config=GenConfig(num_inputs=3))
    plain = case_inputs(module, 7)
    special = case_inputs(module, 7, specials=True)
    again = case_inputs(module, 7, specials=True)
    for p, s, a in zip(plain, special, again):
        np.testing.assert_array_equal(s, a)
        assert p.dtype == s.dtype and p.shape == s.shape
    assert any(not np.array_equal(p, s, equal_nan=True) for p, s in zip(plain, special))


def _odd_integer_program(seed: int) -> Operation:
    rng = np.random.default_rng(seed)
    func = make_func("main", [TensorType((3, 4), f32 if seed % 2 else i32)], arg_names=["x"])
    outputs = []
    with InsertionPoint(func_body(func)):
        values: list[Value] = list(func_body(func).args)
        for _ in range(3):
            made = apply_recipe("odd_integers", rng, values)
            values += made
            outputs.append(made[-1])
    set_results(func, outputs)
    module = make_module([func])
    tm.verify(module)
    return module


def test_odd_width_integer_programs_run_on_the_cpu_as_the_interpreter_runs_them() -> None:
    widths: set[tuple[int, bool]] = set()
    for seed in range(8):
        module = _odd_integer_program(seed)
        for op in module.walk():
            for r in op.results:
                if isinstance(r.type, TensorType) and isinstance(r.type.element, IntegerType):
                    widths.add((r.type.element.width, r.type.element.signed))
        text = tm.print_module(module)
        for specials in (False, True):
            verdict = check(FuzzCase(text, "canonicalize", seed, ("interp", "cpu"), 1, specials=specials))
            assert verdict.status == "ok", (seed, specials, verdict, text)
    odd = {(w, s) for w, s in widths if w in ODD_WIDTHS}
    assert len(odd) >= 5 and {s for _, s in odd} == {True, False}, sorted(odd)


def _mutated_attributes(name: str) -> list[Operation]:
    rng = np.random.default_rng(0)
    config = GenConfig(image_probability=0.5)
    ops = []
    for seed in range(40):
        mutant = mutate_module(generate_module(seed, config=config), rng, config, only=["attribute-corners"])
        if mutant is not None:
            ops += [op for op in mutant[0].walk() if op.name == name]
    return ops


@pytest.mark.parametrize(
    ("op", "corner"),
    [
        ("graph.matmul", lambda op: op.attr("transpose_a", False) and op.attr("transpose_b", False)),
        ("graph.conv2d", lambda op: any(len(set(op.attr(k, ()))) > 1 for k in ("strides", "dilations"))),
        ("graph.slice", lambda op: any(abs(b) >= 1000 for b in (*op.attr("starts"), *op.attr("ends")))),
        ("graph.softmax", lambda op: op.attr("axis") < 0),
    ],
)
def test_attribute_corners_reach_what_they_claim(op: str, corner) -> None:  # type: ignore[no-untyped-def]
    assert any(corner(o) for o in _mutated_attributes(op)), f"no {op} at its corner"


def test_a_few_seconds_of_fuzzing_with_every_corner_on_find_nothing() -> None:
    """Special inputs and constants, odd-width integers, near misses and attribute corners on the default
    pipelines and random ones, judged by the oracles with the CPU backend now and then: no false alarm."""
    config = GenConfig(num_ops=8, special_probability=0.3)
    rng = np.random.default_rng(11)
    corners = ["attribute-corners", "near-miss-attention", "near-miss-siblings", "near-miss-transpose"]
    statuses = []
    for seed in range(24):
        module = generate_module(seed, config=config)
        mutant = mutate_module(module, rng, config, only=corners)
        program = mutant[0] if mutant is not None else module
        backends = ("interp", "cpu") if seed % 4 == 0 else ("interp",)
        case = FuzzCase(tm.print_module(program), str(random_pipeline(rng)), seed, backends, 1, specials=True)
        verdict = check(case, program)
        assert verdict.failure is None, (verdict.failure, case.pipeline, case.module)
        statuses.append(verdict.status)
    assert statuses.count("ok") >= 18, statuses
