"""The Tensor tracer: every operator, method and nn function against numpy, and its error messages."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy.special import erf

import tensorium as tm
from tensorium import nn
from tensorium.backends.interp import run
from tensorium.errors import VerifyError
from tensorium.frontend.tracer.tensor import Tensor, Trace, TracerError, bind, bind_arguments
from tensorium.ir.dialects.builtin import func_body, make_func
from tensorium.ir.types import Sym, TensorType, f32

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
ROW = RNG.standard_normal((4,)).astype(np.float32)
COL = RNG.standard_normal((3, 1)).astype(np.float32)
I32 = RNG.integers(-5, 6, (3, 4)).astype(np.int32)
J32 = RNG.integers(1, 4, (3, 4)).astype(np.int32)
M1 = RNG.standard_normal((4, 5)).astype(np.float32)


def traced(fn: Callable[..., Any], *arrays: Any, dynamic: Any = None) -> list[np.ndarray]:
    """Run the traced graph of ``fn`` in the interpreter."""
    g = tm.trace(fn, *arrays, dynamic=dynamic)
    return run(g.module, [a for a in arrays if isinstance(a, np.ndarray)])


def check(fn: Callable[..., Any], *arrays: np.ndarray, expected: Any = None, rtol: float = 1e-5) -> None:
    """The traced ``fn`` matches ``expected`` (default: ``fn`` run on the numpy arrays), values and dtype."""
    want = fn(*arrays) if expected is None else expected
    (got,) = traced(fn, *arrays)
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


# --- operators ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a / b,
        lambda a, b: a // b,
        lambda a, b: a % b,
        lambda a, b: abs(a) ** b,
        lambda a, b: -a,
        lambda a, b: +a,
        lambda a, b: abs(a),
        lambda a, b: a < b,
        lambda a, b: a <= b,
        lambda a, b: a > b,
        lambda a, b: a >= b,
        lambda a, b: a == b,
        lambda a, b: a != b,
        lambda a, b: (a < 0) & (b > 0),
        lambda a, b: (a < 0) | (b > 0),
        lambda a, b: (a < 0) ^ (b > 0),
        lambda a, b: ~(a < 0),
    ],
)
def test_float_operators_match_numpy(fn: Callable[..., Any]) -> None:
    check(fn, A, B)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b,
        lambda a, b: a // b,
        lambda a, b: a % b,
        lambda a, b: a / b,
        lambda a, b: a & b,
        lambda a, b: a | b,
        lambda a, b: a ^ b,
        lambda a, b: ~a,
        lambda a, b: a * 3,
        lambda a, b: 7 // b,
        lambda a, b: a + 1.5,
    ],
)
def test_integer_operators_follow_numpy_promotion(fn: Callable[..., Any]) -> None:
    check(fn, I32, J32)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: a + 1,
        lambda a: 2.5 * a,
        lambda a: 1 - a,
        lambda a: 2 / a,
        lambda a: a**2,
        lambda a: 2.0**a,
        lambda a: a > 0.5,
        lambda a: a + np.float64(1.0),
        lambda a: a + np.ones(4, np.float64),
        lambda a: np.ones(4, np.float32) + a,
    ],
)
def test_python_scalars_are_weak_and_arrays_strong(fn: Callable[..., Any]) -> None:
    check(fn, A)


def test_scalar_takes_the_tensor_dtype() -> None:
    g = tm.trace(lambda a: a * 2 + 1, A.astype(np.float16))
    assert "f64" not in tm.print_module(g.module)
    check(lambda a: a * 2 + 1, A.astype(np.float16))


def test_broadcasting_including_size_one_and_empty() -> None:
    check(lambda a, b: a + b, COL, ROW)
    check(lambda a, b: a * b, np.zeros((0, 4), np.float32), ROW)
    check(lambda a, b: a - b, np.ones((1, 1), np.float32), A)


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (A, M1),
        (ROW, M1),
        (A, ROW),
        (ROW, ROW),
        (RNG.standard_normal((2, 3, 4)).astype(np.float32), M1),
        (np.zeros((0, 4), np.float32), M1),
    ],
)
def test_matmul_numpy_semantics(x: np.ndarray, y: np.ndarray) -> None:
    check(lambda a, b: a @ b, x, y)


def test_matmul_with_a_numpy_operand() -> None:
    check(lambda a: a @ M1, A)
    check(lambda a: M1.T @ a.T, A)


# --- methods -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn",
    [
        lambda a: a.reshape(2, 6),
        lambda a: a.reshape((-1, 2)),
        lambda a: a.reshape(12),
        lambda a: a.flatten(),
        lambda a: a.transpose(),
        lambda a: a.T,
        lambda a: a.reshape(2, 3, 2).transpose(2, 0, 1),
        lambda a: a.reshape(1, 3, 1, 4).squeeze(),
        lambda a: a.reshape(1, 3, 1, 4).squeeze(-2),
        lambda a: a.sum(),
        lambda a: a.sum(axis=-1),
        lambda a: a.sum(axis=(0, 1), keepdims=True),
        lambda a: a.mean(axis=0),
        lambda a: a.prod(axis=1),
        lambda a: a.max(),
        lambda a: a.max(axis=0, keepdims=True),
        lambda a: a.min(axis=-1),
        lambda a: a.argmax(),
        lambda a: a.argmax(axis=1),
        lambda a: a.argmin(axis=0, keepdims=True),
        lambda a: a.astype(np.int32),
        lambda a: a.astype("float64"),
    ],
)
def test_methods_match_numpy(fn: Callable[..., Any]) -> None:
    check(fn, A)


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (lambda a: a.reshape(2, 3, 2).permute(1, -1, 0), A.reshape(2, 3, 2).transpose(1, 2, 0)),
        (lambda a: a.expand_dims(0), A[None]),
        (lambda a: a.unsqueeze(-1), A[..., None]),
        (lambda a: a.broadcast_to(2, 3, 4), np.broadcast_to(A, (2, 3, 4))),
    ],
)
def test_torch_style_methods(fn: Callable[..., Any], expected: np.ndarray) -> None:
    check(fn, A, expected=expected)


def test_reductions_promote_like_numpy() -> None:
    check(lambda a: a.sum(), I32)
    check(lambda a: a.mean(axis=0), I32)
    check(lambda a: (a > 0).sum(axis=1), A)
    check(lambda a: a.max(axis=1), I32)


def test_reductions_over_empty_and_size_one_dims() -> None:
    check(lambda a: a.sum(axis=0), np.zeros((0, 3), np.float32))
    check(lambda a: a.max(axis=1), np.ones((3, 1), np.float32))


def test_shape_and_dtype_properties() -> None:
    seen: dict[str, Any] = {}

    def fn(a: Tensor) -> Tensor:
        seen.update(shape=a.shape, dtype=a.dtype, ndim=a.ndim, len=len(a), element=a.element, repr=repr(a))
        return a

    tm.trace(fn, A)
    assert seen == {
        "shape": (3, 4),
        "dtype": np.dtype(np.float32),
        "ndim": 2,
        "len": 3,
        "element": f32,
        "repr": "Tensor(tensor<3x4xf32>)",
    }


def test_iterating_a_tensor_gives_its_rows() -> None:
    check(lambda a: nn.stack(list(a), axis=1), A, expected=np.stack(list(A), axis=1))


# --- indexing ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        1,
        -1,
        (slice(None), 2),
        (slice(1, 3),),
        (slice(None, None, -1),),
        (slice(None), slice(3, 0, -2)),
        (slice(-2, None), slice(None, -1)),
        (slice(2, 2),),
        (Ellipsis, None),
        (None, Ellipsis, slice(None, None, 2)),
        (1, None, slice(1, 3)),
        (Ellipsis, -1),
        (-2, -3),
        (slice(1, -1, 2), -2),
    ],
)
def test_basic_indexing_matches_numpy(key: Any) -> None:
    check(lambda a: a[key], A)


@pytest.mark.parametrize(
    "key",
    [
        [2, 0, 2],
        (slice(None), [0, 3, -1]),
        (slice(None), np.array([[0, 1], [2, 3]])),
        (None, slice(None), [1]),
    ],
)
def test_integer_array_index_is_a_gather(key: Any) -> None:
    check(lambda a: a[key], A)
    assert "graph.gather" in tm.print_module(tm.trace(lambda a: a[key], A).module)


def test_tensor_index() -> None:
    idx = np.array([2, 0, 1, 1], np.int64)
    check(lambda a, i: a[i], A, idx, expected=A[idx])
    check(lambda a, i: a[:, i[:2]], A, idx, expected=A[:, idx[:2]])


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (3, "index 3 is out of bounds for axis 0 with size 3"),
        ((0, 0, 0), "too many indices for tensor<3x4xf32>: 3 given"),
        ((Ellipsis, Ellipsis), r"an index can only have a single ellipsis \('...'\)"),
        (slice(None, None, 0), "slice step cannot be zero"),
        (([0], [1]), "only one integer-array index per subscript is supported"),
        ("a", "unsupported index 'a' of type str"),
    ],
)
def test_bad_indices(key: Any, message: str) -> None:
    with pytest.raises(TracerError, match=f"^{message}$"):
        tm.trace(lambda a: a[key], A)


def test_boolean_mask_index_is_rejected() -> None:
    with pytest.raises(TracerError, match="array indices must be integers, got i1 \\(boolean masks give"):
        tm.trace(lambda a: a[a > 0], A)


# --- nn functions -------------------------------------------------------------------------------------
def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _conv2d(x: np.ndarray, w: np.ndarray, stride: int, pad: int, groups: int = 1) -> np.ndarray:
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(oh):
            for j in range(ow):
                patch = x[:, g * cg : (g + 1) * cg, i * stride : i * stride + kh, j * stride : j * stride + kw]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out.astype(np.float32)


X4 = RNG.standard_normal((2, 4, 6, 6)).astype(np.float32)
W4 = RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)
LN_W = RNG.standard_normal(4).astype(np.float32)
LN_B = RNG.standard_normal(4).astype(np.float32)


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (nn.relu, np.maximum(A, 0)),
        (nn.gelu, 0.5 * A * (1 + erf(A / np.sqrt(2)))),
        (
            lambda a: nn.gelu(a, approximate="tanh"),
            0.5 * A * (1 + np.tanh(np.sqrt(2 / np.pi) * (A + 0.044715 * A**3))),
        ),
        (nn.silu, A / (1 + np.exp(-A))),
        (nn.sigmoid, 1 / (1 + np.exp(-A))),
        (nn.tanh, np.tanh(A)),
        (nn.exp, np.exp(A)),
        (lambda a: nn.log(nn.abs(a)), np.log(np.abs(A))),
        (lambda a: nn.sqrt(nn.abs(a)), np.sqrt(np.abs(A))),
        (lambda a: nn.rsqrt(nn.abs(a)), 1 / np.sqrt(np.abs(A))),
        (nn.erf, erf(A)),
        (nn.sin, np.sin(A)),
        (nn.cos, np.cos(A)),
        (nn.softmax, _softmax(A)),
        (lambda a: nn.softmax(a, axis=0), _softmax(A, 0)),
        (lambda a: nn.log_softmax(a, axis=-1), np.log(_softmax(A))),
        (
            lambda a: nn.layer_norm(a, LN_W, LN_B),
            (A - A.mean(-1, keepdims=True)) / np.sqrt(A.var(-1, keepdims=True) + 1e-5) * LN_W + LN_B,
        ),
        (lambda a: nn.layer_norm(a), (A - A.mean(-1, keepdims=True)) / np.sqrt(A.var(-1, keepdims=True) + 1e-5)),
        (lambda a: nn.rms_norm(a, LN_W), A / np.sqrt((A**2).mean(-1, keepdims=True) + 1e-6) * LN_W),
        (lambda a: nn.linear(a, M1.T, np.ones(5, np.float32)), A @ M1 + 1),
        (lambda a: nn.linear(a[0], M1.T), A[0] @ M1),
        (lambda a: nn.where(a > 0, a, 0.0), np.where(A > 0, A, 0)),
        (lambda a: nn.where(a > 0, 1.0, a), np.where(A > 0, 1, A)),
        (lambda a: nn.concat([a, a[:1]], axis=0), np.concatenate([A, A[:1]])),
        (lambda a: nn.concat([a, a], axis=-1), np.concatenate([A, A], axis=-1)),
        (lambda a: nn.stack([a, a + 1], axis=1), np.stack([A, A + 1], axis=1)),
        (lambda a: nn.split(a, [1, 3], axis=1)[1], A[:, 1:]),
        (lambda a: nn.maximum(a, 0.25), np.maximum(A, np.float32(0.25))),
        (lambda a: nn.minimum(a, ROW), np.minimum(A, ROW)),
        (lambda a: nn.clip(a, -0.5, 0.5), np.clip(A, -0.5, 0.5)),
        (lambda a: nn.cumsum(a, axis=1), np.cumsum(A, axis=1)),
        (nn.triu, np.triu(A)),
        (lambda a: nn.tril(a, k=-1), np.tril(A, -1)),
        (lambda a: nn.einsum("ij,jk->ik", a, M1), A @ M1),
        (lambda a: nn.take(a, np.array([3, 0]), axis=1), A[:, [3, 0]]),
        (lambda a: a + nn.arange(4), A + np.arange(4, dtype=np.float32)),
        (lambda a: a + nn.zeros((3, 4)) + nn.ones((4,)) * 2 + nn.full((1,), 3.0), A + 5),
    ],
)
def test_nn_functions_match_numpy(fn: Callable[..., Any], expected: np.ndarray) -> None:
    check(fn, A, expected=np.asarray(expected).astype(np.float32), rtol=2e-5)


def test_integer_inputs_to_float_functions_compute_in_f64() -> None:
    check(nn.exp, I32, expected=np.exp(I32))


def test_conv2d_and_pooling() -> None:
    bias = np.arange(6, dtype=np.float32)
    got = traced(lambda x: nn.conv2d(x, W4, bias, stride=2, padding=1, groups=2), X4)[0]
    want = _conv2d(X4, W4, 2, 1, groups=2) + bias[:, None, None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    windows = X4.reshape(2, 4, 3, 2, 3, 2)
    np.testing.assert_allclose(traced(lambda x: nn.max_pool2d(x, 2), X4)[0], windows.max(axis=(3, 5)))
    np.testing.assert_allclose(traced(lambda x: nn.avg_pool2d(x, 2), X4)[0], windows.mean(axis=(3, 5)), rtol=1e-6)
    np.testing.assert_allclose(traced(nn.global_avg_pool2d, X4)[0], X4.mean(axis=(2, 3), keepdims=True), rtol=1e-5)


def test_embedding() -> None:
    table = RNG.standard_normal((5, 3)).astype(np.float32)
    ids = np.array([[4, 0], [1, 1]], np.int64)
    check(lambda i: nn.embedding(i, table), ids, expected=table[ids])


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention(causal: bool) -> None:
    q, k, v = (RNG.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(3))
    scores = q @ k.transpose(0, 2, 1) / 2.0
    if causal:
        scores = np.where(np.tril(np.ones((3, 3), bool)), scores, -np.inf)
    want = _softmax(scores) @ v
    got = traced(lambda a, b, c: nn.scaled_dot_product_attention(a, b, c, is_causal=causal), q, k, v)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    mask = np.array([True, True, False])
    got = traced(lambda a, b, c: nn.scaled_dot_product_attention(a, b, c, mask), q, k, v)[0]
    np.testing.assert_allclose(got, _softmax(np.where(mask, q @ k.transpose(0, 2, 1) / 2.0, -np.inf)) @ v, rtol=1e-5)


# --- tracing -----------------------------------------------------------------------------------------
def test_every_op_comes_from_bind() -> None:
    """The one path: each op in the traced body was appended by bind, in order, and nothing else was."""
    func = make_func("main", [TensorType((3, 4), f32)], arg_names=["x"])
    with Trace(func) as tr:
        x = Tensor(func_body(func).args[0])
        y = nn.softmax(nn.layer_norm(x[::-1, None, 1:] * 2.0 + 1, axis=-1), axis=0)
        z = (y.sum(axis=-1) @ np.ones((1, 3), np.float32)).argmax() + (x[[0, 2]] > 0).astype("f32").mean()
        del z
    body = func_body(func).ops
    assert len(body) > 10
    assert [id(op) for op in body] == [id(op) for op in tr.ops]


def test_trace_records_outputs_and_pytree() -> None:
    g = tm.trace(lambda a, b: {"sum": a + b, "pair": (a, [b * 2, None])}, A, B)
    assert g.input_names == ["a", "b"]
    assert g.output_names == ["output0", "output1", "output2"]
    assert g.output_tree == {
        "type": "dict",
        "keys": ["sum", "pair"],
        "children": [
            {"type": "leaf"},
            {
                "type": "tuple",
                "children": [{"type": "leaf"}, {"type": "list", "children": [{"type": "leaf"}, {"type": "none"}]}],
            },
        ],
    }
    outs = run(g.module, [A, B])
    np.testing.assert_allclose(outs[0], A + B)
    np.testing.assert_allclose(outs[2], B * 2)


def test_dynamic_dims_stay_symbolic() -> None:
    g = tm.trace(lambda x: nn.softmax(x @ M1, axis=-1).reshape(x.shape[0], 5), A, dynamic={"x": {0: "batch"}})
    main = func_body(g.module.regions[0].block.ops[0])
    assert main.args[0].type == TensorType((Sym("batch"), 4), f32)
    assert "tensor<[batch]x5xf32>" in tm.print_module(g.module)
    for n in (1, 7, 0):
        x = RNG.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(run(g.module, [x])[0], _softmax(x @ M1), rtol=1e-5, atol=1e-7)


def test_static_python_arguments_are_baked_in() -> None:
    g = tm.trace(lambda x, scale, flag: x * scale if flag else x, A, 3.0, True)
    assert g.input_names == ["x"]
    assert g.metadata["static_arguments"] == {"scale": 3.0, "flag": True}
    np.testing.assert_allclose(run(g.module, [A])[0], A * 3)


def test_python_control_flow_on_tensor_values_is_an_error() -> None:
    def fn(x: Tensor) -> Tensor:
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(TracerError, match=r"cannot drive Python control flow .* use tensorium.nn.where instead"):
        tm.trace(fn, A)


def test_shape_errors_point_at_the_user_line() -> None:
    with pytest.raises(VerifyError, match=r"test_tracer.py:\d+:\d+: error: 'graph.add' op shapes \[3, 4\] and \[5\]"):
        tm.trace(lambda a, b: a + b, A, np.ones(5, np.float32))


def test_ops_outside_a_trace_are_rejected() -> None:
    with pytest.raises(TracerError, match="tensorium ops need an active trace"):
        nn.zeros((2,))
    from tensorium.ir.dialects import graph

    with pytest.raises(TracerError, match="tensorium ops need an active trace"):
        bind(graph.relu)


@pytest.mark.parametrize(
    ("fn", "args", "message"),
    [
        (lambda x: x, ([1, 2],), "argument 'x' is a list; traced functions take numpy arrays"),
        (lambda x: x, (np.array(["a"]),), "argument 'x' has dtype <U1, which Tensorium does not support"),
        (lambda x, y: x, (A,), "cannot bind the arguments of '<lambda>': missing a required argument: 'y'"),
        (lambda x: x + "s", (A,), "cannot use a str as a Tensor operand"),
        (lambda x: x.astype("complex64"), (A,), "'complex64' is not a Tensorium element type"),
        (lambda x: x.astype(np.int8) + 300, (A,), "Python integer 300 is out of bounds for i8"),
        (lambda x: nn.layer_norm(x, None, LN_B), (A,), "layer_norm takes a bias only together with a weight"),
        (lambda x: x[0] @ x[0, 0], (A,), "matmul operands must have at least one dimension"),
    ],
)
def test_tracer_errors(fn: Callable[..., Any], args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(TracerError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}"):
        tm.trace(fn, *args)


@pytest.mark.parametrize(
    ("dynamic", "message"),
    [
        ({"y": {0: "n"}}, r"dynamic= names 'y', which is not an array argument \(arguments: \['x'\]\)"),
        ({"x": {2: "n"}}, "dynamic= axis 2 of 'x' is out of range for rank 2"),
    ],
)
def test_bad_dynamic_specs(dynamic: Any, message: str) -> None:
    with pytest.raises(TracerError, match=message):
        tm.trace(lambda x: x, A, dynamic=dynamic)


def test_sqrt_of_pi_constant_is_exact() -> None:
    check(lambda a: a * math.pi, A)


def test_arguments_bind_by_name_in_signature_order() -> None:
    def two(a: Any, b: Any = 2) -> None: ...

    def rest(a: Any, *more: Any, **named: Any) -> None: ...

    def keyword_only(a: Any, *, b: Any) -> None: ...

    def star(a: Any, b: Any, *more: Any) -> None: ...

    assert bind_arguments(star, (1, 2), {}) == [("a", 1), ("b", 2)]
    assert bind_arguments(star, (1, 2, 3, 4), {}) == [("a", 1), ("b", 2), ("more_0", 3), ("more_1", 4)]
    with pytest.raises(TracerError, match="cannot bind the arguments of 'star': missing a required argument: 'b'"):
        bind_arguments(star, (1,), {})
    assert bind_arguments(two, (1, 5), {}) == [("a", 1), ("b", 5)]
    assert bind_arguments(two, (1,), {}) == [("a", 1)]  # a default is no argument of the call
    assert bind_arguments(two, (), {"b": 3, "a": 4}) == [("a", 4), ("b", 3)]
    assert bind_arguments(rest, (1, 2, 3), {"k": 4}) == [("a", 1), ("more_0", 2), ("more_1", 3), ("k", 4)]
    assert bind_arguments(keyword_only, (1,), {"b": 2}) == [("a", 1), ("b", 2)]
    with pytest.raises(TracerError, match="cannot bind the arguments of 'two': too many positional arguments"):
        bind_arguments(two, (1, 2, 3), {})
    with pytest.raises(TracerError, match="cannot bind the arguments of 'keyword_only'"):
        bind_arguments(keyword_only, (1, 2), {})
