"""Each graph op lowered to a kernel computes what the graph interpreter computes, on odd shapes and dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.ir import graph
from tensorium.ir.opdef import registered_ops
from tensorium.ir.storage import round_to_bf16
from tensorium.ir.types import Sym, TensorType, bf16, f32
from tensorium.lowering import LOWERINGS, LoweringError, lower_op
from tensorium.testing import build_module

from .conftest import check_lowered, graph_op, run_lowered

RNG = np.random.default_rng(3)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-9 if np.dtype(dtype).kind == "i" else 0, 10, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


UNARY = ["neg", "abs", "exp", "sin", "cos", "tanh", "erf", "floor", "ceil", "round", "sigmoid", "relu", "silu", "sign"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_float(name: str) -> None:
    x = rand(2, 7) * 3
    x[0, :4] = [0.5, -2.5, 1.5, np.nan]
    check_lowered(lambda a: getattr(graph, name)(a), x)


@pytest.mark.parametrize("name", ["log", "sqrt", "rsqrt", "reciprocal"])
def test_unary_positive(name: str) -> None:
    check_lowered(lambda a: getattr(graph, name)(a), np.abs(rand(3, 5)) + 0.1)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate: str) -> None:
    check_lowered(lambda a: graph.gelu(a, approximate=approximate), rand(13))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.bool_])
def test_not_on_integers_and_bool(dtype: Any) -> None:
    x = rand(11, dtype=np.int8).astype(dtype) if dtype != np.uint8 else rand(11, dtype=np.uint8)
    check_lowered(lambda a: graph.not_(a), x)


@pytest.mark.parametrize("name", ["neg", "abs", "relu", "sign"])
def test_unary_integers(name: str) -> None:
    check_lowered(lambda a: getattr(graph, name)(a), rand(3, 4, dtype=np.int32))


BINARY = ["add", "sub", "mul", "div", "max", "min", "mod", "pow", "eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_float_broadcasting(name: str) -> None:
    a, b = rand(3, 1, 5), rand(2, 1)
    if name == "pow":
        a = np.abs(a)
    check_lowered(lambda x, y: getattr(graph, name)(x, y), a, b)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "mod", "max", "pow", "and", "or", "xor", "lt"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_binary_integers(name: str, dtype: Any) -> None:
    a, b = rand(4, 3, dtype=dtype), rand(3, dtype=dtype)
    b[0] = 0
    if name == "pow":
        b = np.abs(b) % 4
    check_lowered(lambda x, y: getattr(graph, name)(x, y), a, b)


def test_binary_bool() -> None:
    a, b = rand(5) > 0, rand(2, 1) > 0
    check_lowered(lambda x, y: graph.xor(x, y), a, b)


def test_mod_signs_match_numpy() -> None:
    a = np.array([5.5, -5.5, 5.5, -5.5, 0.0, 3.0], np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 2.0, 0.0], np.float32)
    got, _ = run_lowered(lambda x, y: graph.mod(x, y), a, b)
    np.testing.assert_array_equal(got, [1.5, 0.5, -0.5, -1.5, 0.0, np.nan])


def test_round_half_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.6, -2.6, 1e9], np.float32)
    got, _ = run_lowered(lambda a: graph.round(a), x)
    np.testing.assert_array_equal(got, np.round(x))


def test_where_broadcasts_three_operands() -> None:
    check_lowered(lambda c, x, y: graph.where(c, x, y), rand(3, 1) > 0, rand(1, 4), rand(4))


@pytest.mark.parametrize(
    ("src", "dst"), [(np.float32, "i8"), (np.float32, "u8"), (np.int32, "f32"), (np.float32, "i1")]
)
def test_cast(src: Any, dst: str) -> None:
    x = (rand(7) * 200).astype(src)
    x[0] = 0
    check_lowered(lambda a: graph.cast(a, dtype=tm.ir.types.parse_scalar_type(dst)), x)


@pytest.mark.parametrize(("lo", "hi"), [(-0.5, 0.5), (None, 0.25), (-1.0, None)])
def test_clamp_float(lo: float | None, hi: float | None) -> None:
    check_lowered(lambda a: graph.clamp(a, min=lo, max=hi), rand(9))


def test_clamp_integers_rounds_bounds_inwards() -> None:
    check_lowered(lambda a: graph.clamp(a, min=-2.5, max=3.5), rand(9, dtype=np.int8))


def test_f16_and_bf16_elementwise() -> None:
    check_lowered(lambda x, y: graph.add(x, y), rand(5).astype(np.float16), rand(5).astype(np.float16))
    a, b = round_to_bf16(rand(5)), round_to_bf16(rand(5))
    check_lowered(lambda x, y: graph.mul(x, y), a, b, elements=(bf16, bf16))


def test_size_one_and_empty_and_rank0() -> None:
    check_lowered(lambda x, y: graph.add(x, y), rand(1, 1), rand(3))
    check_lowered(lambda x, y: graph.add(x, y), rand(0, 3), rand(3))
    check_lowered(lambda x, y: graph.mul(x, y), np.array(2.0, np.float32), rand(2, 3))


def test_symbolic_dims_broadcast_at_run_time() -> None:
    """A `?` dim may be 1 at run time: the kernel reads it with min(i, size - 1)."""
    types = (TensorType((Sym(), 3), f32), TensorType((Sym("n"), 1), f32))
    check_lowered(lambda x, y: graph.add(x, y), rand(1, 3), rand(4, 1), types=types)
    check_lowered(lambda x, y: graph.add(x, y), rand(4, 3), rand(4, 1), types=types)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize(("axes", "keepdims"), [((1,), False), ((0, -1), True), ((-2,), True), ((), False)])
def test_reductions(name: str, axes: tuple[int, ...], keepdims: bool) -> None:
    check_lowered(lambda x: getattr(graph, name)(x, axes=axes, keepdims=keepdims), rand(3, 5, 2))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min"])
def test_integer_reductions(name: str) -> None:
    check_lowered(lambda x: getattr(graph, name)(x, axes=(0,)), rand(7, 3, dtype=np.int8) * 5)


def test_reductions_over_empty_dims_and_f16() -> None:
    check_lowered(lambda x: graph.reduce_sum(x, axes=(0,)), rand(0, 3))
    check_lowered(lambda x: graph.reduce_mean(x, axes=(0,)), rand(0, 3))
    check_lowered(lambda x: graph.reduce_prod(x, axes=(0,)), rand(0, 3, dtype=np.int32))
    check_lowered(lambda x: graph.reduce_sum(x, axes=(1,)), rand(2, 9).astype(np.float16), rtol=1e-3)
    check_lowered(lambda x: graph.reduce_max(x, axes=(0,)), rand(4, 3) > 0)


def test_reduction_nan_propagates() -> None:
    x = rand(2, 3)
    x[1, 1] = np.nan
    check_lowered(lambda a: graph.reduce_max(a, axes=(1,)), x)
    check_lowered(lambda a: graph.reduce_min(a, axes=(1,)), x)


@pytest.mark.parametrize(
    ("sa", "sb", "ta", "tb"),
    [
        ((3, 5), (5, 7), False, False),
        ((5, 3), (7, 5), True, True),
        ((2, 1, 3, 2), (4, 2, 5), False, False),
        ((1, 1), (1, 1), False, True),
    ],
)
def test_matmul(sa: tuple[int, ...], sb: tuple[int, ...], ta: bool, tb: bool) -> None:
    check_lowered(lambda a, b: graph.matmul(a, b, transpose_a=ta, transpose_b=tb), rand(*sa), rand(*sb))


def test_matmul_integers_wrap_and_f16() -> None:
    check_lowered(lambda a, b: graph.matmul(a, b), rand(3, 4, dtype=np.int8) * 9, rand(4, 2, dtype=np.int8) * 9)
    check_lowered(lambda a, b: graph.matmul(a, b), rand(3, 4).astype(np.float16), rand(4, 2).astype(np.float16))
    check_lowered(lambda a, b: graph.matmul(a, b), rand(2, 0), rand(0, 3))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(name: str, axis: int) -> None:
    x = rand(3, 5, 2) * 4
    check_lowered(lambda a: getattr(graph, name)(a, axis=axis), x)


def test_softmax_edges() -> None:
    check_lowered(lambda a: graph.softmax(a), rand(4, 1))
    check_lowered(lambda a: graph.softmax(a), rand(0, 3))
    check_lowered(lambda a: graph.log_softmax(a), rand(2, 3).astype(np.float16), rtol=1e-3)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(axis: int) -> None:
    x = rand(2, 3, 4)
    shape = x.shape[axis % 3 :]
    check_lowered(lambda a, w, b: graph.layer_norm(a, w, b, axis=axis, eps=1e-3), x, rand(*shape), rand(*shape))
    check_lowered(lambda a: graph.layer_norm(a, axis=axis), x)


def test_rms_norm() -> None:
    check_lowered(lambda a, w: graph.rms_norm(a, w), rand(3, 7), rand(7))
    check_lowered(lambda a: graph.rms_norm(a, axis=0), rand(2, 3))


def test_transpose_reshape_squeeze_unsqueeze() -> None:
    check_lowered(lambda a: graph.transpose(a, perm=(2, 0, 1)), rand(2, 3, 5))
    check_lowered(lambda a: graph.reshape(a, shape=(5, -1)), rand(2, 3, 5))
    check_lowered(lambda a: graph.reshape(a, shape=()), rand(1, 1))
    check_lowered(lambda a: graph.reshape(a, shape=(2, 0, 3), allowzero=True), rand(0, 6))
    check_lowered(lambda a: graph.squeeze(a, axes=(1,)), rand(3, 1, 2))
    check_lowered(lambda a: graph.unsqueeze(a, axes=(0, -1)), rand(3, 2))


def test_broadcast_to() -> None:
    check_lowered(lambda a: graph.broadcast_to(a, shape=(2, 3, 5)), rand(3, 1))
    check_lowered(lambda a: graph.broadcast_to(a, shape=(4, -1)), rand(3))


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps"),
    [((1,), (4,), (), ()), ((-1, 0), (-100, 2**63 - 1), (1, 0), (-2, 3)), ((5,), (9,), (0,), ())],
)
def test_slice(starts: tuple[int, ...], ends: tuple[int, ...], axes: tuple[int, ...], steps: tuple[int, ...]) -> None:
    check_lowered(lambda a: graph.slice(a, starts=starts, ends=ends, axes=axes, steps=steps), rand(5, 7))


def test_slice_keeps_a_full_symbolic_dim() -> None:
    types = (TensorType((Sym("n"), 6), f32),)
    check_lowered(lambda a: graph.slice(a, starts=(1,), ends=(5,), axes=(1,)), rand(3, 6), types=types)


def test_concat() -> None:
    check_lowered(lambda a, b, c: graph.concat(a, b, c, axis=-1), rand(2, 3), rand(2, 0), rand(2, 1))
    check_lowered(lambda a, b: graph.concat(a, b, axis=0), rand(1, 3, dtype=np.int8), rand(2, 3, dtype=np.int8))


def test_constant_kernels() -> None:
    dense = tm.ir.attributes.DenseAttr
    for value in (np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 2), 3, np.int8), np.array([True, False])):
        module = build_module([], lambda v=value: graph.constant(value=dense.of(v)))
        got, want = _run_constant(module)
        np.testing.assert_array_equal(got, want)


def _run_constant(module: tm.ir.Operation) -> tuple[np.ndarray, np.ndarray]:
    from tensorium.backends import interp, loop_interp
    from tensorium.ir.dialects.builtin import make_module

    (want,) = interp.run(module, [])
    out = np.zeros_like(want)
    loop_interp.run(make_module([lower_op(graph_op(module))]), [out])
    return out, want


def test_kernel_signature_and_symbolic_dims_read_at_run_time() -> None:
    module = build_module([TensorType((Sym("n"), 4), f32)], lambda x: graph.exp(x))
    text = tm.print_module(tm.ir.dialects.builtin.make_module([lower_op(graph_op(module), "exp_kernel")]))
    assert "func.func @exp_kernel(%in0: buffer<[n]x4xf32, global>, %out0: buffer<[n]x4xf32, global>)" in text
    assert "loop.dim %out0 {axis = 0}" in text


def test_unsupported_op_names_op_and_location(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(LOWERINGS, "graph.asin")
    module = tm.parse_module(
        "module {\n  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
        "    %y = graph.asin %x : (tensor<3xf32>) -> tensor<3xf32>\n    func.return %y : tensor<3xf32>\n  }\n}\n"
    )
    with pytest.raises(LoweringError, match=r"^<input>:3:10: cannot lower 'graph.asin' to loops: no loop lowering"):
        lower_op(graph_op(module))


def test_symbolic_slice_is_refused() -> None:
    module = build_module([TensorType((Sym("n"),), f32)], lambda x: graph.slice(x, starts=(1,), ends=(3,)))
    with pytest.raises(LoweringError, match=r"slicing symbolic dimension 0 of tensor<\[n\]xf32> needs static bounds"):
        lower_op(graph_op(module))


def test_every_promised_op_family_has_a_lowering() -> None:
    promised = ["where", "cast", "clamp", "constant", "matmul", "softmax", "log_softmax", "layer_norm", "rms_norm"]
    promised += ["transpose", "reshape", "broadcast_to", "slice", "concat", "reduce_sum", "reduce_mean", "reduce_prod"]
    promised += [op.name.split(".")[1] for op in registered_ops("graph") if op.has_trait("elementwise")]
    missing = sorted(f"graph.{n}" for n in promised if f"graph.{n}" not in LOWERINGS)
    assert missing == []
