"""Property tests: printing and parsing are exact inverses on random programs, types and attributes."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorium as tm
from tensorium.backends.interp import run
from tensorium.fuzz.generator import generate_module, random_inputs
from tensorium.ir.attributes import DenseAttr, attr_equal
from tensorium.ir.core import Operation
from tensorium.ir.parser import parse_type
from tensorium.ir.printer import format_attr
from tensorium.ir.types import DYN, FloatType, IntegerType, QuantizedType, Sym, TensorType, storage_dtype


def structurally_equal(a: Operation, b: Operation) -> bool:
    """Same ops, attributes, types and use-def structure (values matched by position)."""
    ids_a: dict[int, int] = {}
    ids_b: dict[int, int] = {}

    def number(op: Operation, ids: dict[int, int]) -> list[tuple]:
        out = []
        for o in op.walk():
            for region in o.regions:
                for block in region.blocks:
                    for arg in block.args:
                        ids[id(arg)] = len(ids)
            operands = tuple(ids.get(id(v), -1) for v in o.operands)
            for r in o.results:
                ids[id(r)] = len(ids)
            out.append((o.name, operands, tuple(map(str, o.result_types)), o.attributes))
        return out

    la, lb = number(a, ids_a), number(b, ids_b)
    if len(la) != len(lb):
        return False
    for (na, oa, ta, aa), (nb, ob, tb, ab) in zip(la, lb):
        if (na, oa, ta) != (nb, ob, tb) or aa.keys() != ab.keys():
            return False
        if not all(attr_equal(aa[k], ab[k]) for k in aa):
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), num_ops=st.integers(1, 24))
def test_random_programs_round_trip(seed: int, num_ops: int) -> None:
    module = generate_module(seed, num_ops)
    text = tm.print_module(module)
    parsed = tm.parse_module(text)
    assert tm.print_module(parsed) == text
    assert structurally_equal(module, parsed)
    inputs = random_inputs(module, seed)
    for x, y in zip(run(module, inputs), run(parsed, inputs)):
        np.testing.assert_array_equal(x, y)


scalar_types = st.one_of(
    st.sampled_from([FloatType(n) for n in ("f16", "bf16", "f32", "f64")]),
    st.builds(IntegerType, st.integers(1, 64), st.booleans()),
)
dims = st.one_of(st.integers(0, 64), st.just(DYN), st.sampled_from([Sym("n"), Sym("batch_1"), Sym("S")]))
tensor_types = st.builds(TensorType, st.lists(dims, max_size=4).map(tuple), scalar_types)
quant_types = st.one_of(
    st.builds(QuantizedType, st.integers(1, 8), st.booleans(), st.sampled_from([FloatType("f32"), FloatType("f16")])),
    st.builds(
        lambda b, s, a: QuantizedType(b, s, FloatType("f32"), "per_channel", a),
        st.integers(1, 8),
        st.booleans(),
        st.integers(-3, 3),
    ),
    st.builds(
        lambda b, a, g: QuantizedType(b, False, FloatType("bf16"), "per_group", a, g),
        st.integers(1, 8),
        st.integers(0, 3),
        st.integers(1, 256),
    ),
)


@settings(max_examples=200, deadline=None)
@given(t=st.one_of(scalar_types, tensor_types, quant_types, st.builds(TensorType, st.just((4, 8)), quant_types)))
def test_types_round_trip(t: object) -> None:
    assert parse_type(str(t)) == t
    assert hash(parse_type(str(t))) == hash(t)


def _dense(draw: st.DrawFn) -> DenseAttr:
    element = draw(scalar_types.filter(lambda t: not isinstance(t, IntegerType) or t.width <= 64))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    if draw(st.booleans()):
        shape = (draw(st.integers(65, 80)),)  # large: printed as hex
    dtype = storage_dtype(element)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if dtype.kind == "f":
        data = rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 30)
        if data.size and draw(st.booleans()):
            data.reshape(-1)[0] = draw(st.sampled_from([math.inf, -math.inf, math.nan, -0.0]))
    elif dtype == np.bool_:
        data = rng.random(shape) < 0.5
    else:
        assert isinstance(element, IntegerType)
        wide = np.uint64 if dtype.kind == "u" else np.int64
        data = rng.integers(element.min_value, element.max_value, size=shape, endpoint=True, dtype=wide)
    with np.errstate(over="ignore"):  # huge random floats become inf in f16, which is fine here
        return DenseAttr(np.asarray(data).astype(dtype), TensorType(shape, element))


attr_leaves = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    scalar_types,
    tensor_types,
    st.composite(_dense)(),
)
attr_values = st.recursive(attr_leaves, lambda inner: st.lists(inner, max_size=4).map(tuple), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(value=attr_values)
def test_attributes_round_trip(value: object) -> None:
    text = f"func.func @f() attributes {{a = {format_attr(value)}}} {{\n  func.return\n}}\n"  # type: ignore[arg-type]
    module = tm.parse_module(text)
    (func,) = tm.ir.functions(module)
    assert attr_equal(func.attributes["a"], value)  # type: ignore[arg-type]
    assert tm.print_module(tm.parse_module(tm.print_module(module))) == tm.print_module(module)


def test_large_hex_constant_parses_in_linear_memory() -> None:
    """A string regex with a group per character once took gigabytes to lex a few MB of hex data."""
    import tracemalloc

    data = np.arange(1 << 18, dtype=np.float32)  # 1 MiB, printed as 2 MiB of hex
    text = (
        "func.func @main() -> tensor<262144xf32> {\n"
        f"  %0 = graph.constant {{value = {format_attr(DenseAttr.of(data))}}} : () -> tensor<262144xf32>\n"
        "  func.return %0 : tensor<262144xf32>\n}\n"
    )
    tracemalloc.start()
    try:
        module = tm.parse_module(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(run(module, [])[0], data)
    assert peak < 64 * 2**20, f"parsing 2 MiB of text peaked at {peak / 2**20:.0f} MiB"
