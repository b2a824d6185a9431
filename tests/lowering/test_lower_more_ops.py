"""The NN, indexing and remaining graph ops lowered to kernels compute what the graph interpreter computes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp, loop_interp
from tensorium.backends.llvm import compile_module
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import InterpreterError
from tensorium.ir import graph
from tensorium.ir.dialects.builtin import make_module
from tensorium.ir.opdef import registered_ops
from tensorium.ir.types import Sym, TensorType, f32, scalar_type_of, storage_dtype
from tensorium.lowering import LOWERINGS, apply_schedule, default_schedule, lower_function, lower_op
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.targets import host_target
from tensorium.testing import build_module

from .conftest import check_lowered, graph_op

RNG = np.random.default_rng(11)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-9 if np.dtype(dtype).kind == "i" else 0, 10, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _module(body: Any, arrays: tuple[np.ndarray, ...], types: tuple[TensorType, ...]) -> tm.ir.Operation:
    operand_types = types or tuple(TensorType(a.shape, scalar_type_of(a.dtype)) for a in arrays)
    return build_module(list(operand_types), body)


def _result_types(op: tm.ir.Operation) -> list[TensorType]:
    types = [r.type for r in op.results]
    assert all(isinstance(t, TensorType) for t in types)
    return types  # type: ignore[return-value]


def run_both(body: Any, *arrays: np.ndarray, types: tuple[TensorType, ...] = ()) -> tuple[list[np.ndarray], list]:
    """(the kernel's results, the graph interpreter's) for a body with any number of results."""
    module = _module(body, arrays, types)
    want = interp.run(module, list(arrays))
    op = graph_op(module)
    kernel = make_module([lower_op(op)])
    tm.ir.verify(kernel)
    outs = [np.full(w.shape, 7, storage_dtype(t.element)) for w, t in zip(want, _result_types(op))]
    loop_interp.run(kernel, list(arrays) + outs)
    return outs, want


def kernel_error(body: Any, *arrays: np.ndarray, types: tuple[TensorType, ...] = ()) -> str:
    """The InterpreterError message of the lowered kernel on ``arrays`` (the graph interpreter must fail too).

    The results must have static shapes.
    """
    module = _module(body, arrays, types)
    with pytest.raises(InterpreterError):
        interp.run(module, list(arrays))
    op = graph_op(module)
    shapes = [[d for d in t.shape if isinstance(d, int)] for t in _result_types(op)]
    assert [len(s) for s in shapes] == [t.rank for t in _result_types(op)]
    outs = [np.zeros(shape, storage_dtype(t.element)) for shape, t in zip(shapes, _result_types(op))]
    with pytest.raises(InterpreterError) as info:
        loop_interp.run(make_module([lower_op(op)]), list(arrays) + outs)
    return str(info.value)


def compiled_error(body: Any, *arrays: np.ndarray, types: tuple[TensorType, ...] = ()) -> str:
    """The InterpreterError message of the op's kernel, for operands of ``types`` (default: the arrays' own;
    symbolic dims allowed), compiled for this CPU with its default schedule and run on ``arrays`` on 2
    threads; the results must have static shapes."""
    module = _module(body, arrays, types)
    op = graph_op(module)
    kernel = lower_op(op)
    apply_schedule(kernel, default_schedule(kernel))
    kernels = compile_module(make_module([kernel]))
    outs = [np.zeros([d for d in t.shape if isinstance(d, int)], storage_dtype(t.element)) for t in _result_types(op)]
    with pytest.raises(InterpreterError) as info:
        kernels.run(kernels.names[0], *arrays, *outs, num_threads=2)
    return str(info.value)


def nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


# convolutions -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "weight", "attrs"),
    [
        ((1, 3, 5, 4), (2, 3, 3, 2), {}),
        ((2, 4, 5, 5), (4, 2, 3, 3), {"strides": (2, 1), "padding": (1, 2, 0, 1), "groups": 2}),
        ((1, 2, 6, 5), (3, 2, 2, 2), {"dilations": (2, 1), "padding": (1, 0, 1, 1), "strides": (1, 2)}),
        ((1, 1, 1, 1), (1, 1, 1, 1), {}),
    ],
)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d(shape: tuple[int, ...], weight: tuple[int, ...], attrs: dict, layout: str) -> None:
    x, w, b = rand(*shape), rand(*weight), rand(weight[0])
    if layout == "NHWC":
        x = nhwc(x)
    check_lowered(lambda a, f, c: graph.conv2d(a, f, c, layout=layout, **attrs), x, w, b)


@pytest.mark.parametrize(("kernel_layout", "perm"), [("HWIO", (2, 3, 1, 0)), ("OHWI", (0, 2, 3, 1))])
def test_conv2d_kernel_layouts_without_bias(kernel_layout: str, perm: tuple[int, ...]) -> None:
    x, w = rand(1, 4, 3, 4), rand(6, 2, 3, 2)
    check_lowered(
        lambda a, f: graph.conv2d(a, f, layout="NHWC", kernel_layout=kernel_layout, groups=2, padding=(1, 1, 1, 1)),
        x,
        np.ascontiguousarray(w.transpose(perm)),
    )


def test_conv2d_f16_and_symbolic_batch() -> None:
    check_lowered(
        lambda a, f: graph.conv2d(a, f),
        rand(1, 2, 4, 4, dtype=np.float16),
        rand(2, 2, 3, 3, dtype=np.float16),
        rtol=2e-3,
    )
    types = (TensorType((Sym("n"), 2, 4, 4), f32), TensorType((3, 2, 3, 3), f32))
    check_lowered(
        lambda a, f: graph.conv2d(a, f, padding=(1, 1, 1, 1)), rand(2, 2, 4, 4), rand(3, 2, 3, 3), types=types
    )


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"strides": (2, 3), "padding": (1, 0, 0, 1), "output_padding": (1, 2)},
        {"dilations": (2, 1), "groups": 2, "strides": (2, 1), "padding": (1, 1, 1, 1)},
    ],
)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv_transpose2d(attrs: dict, layout: str) -> None:
    x, w, b = rand(1, 4, 3, 2), rand(4, 3, 2, 3), rand(3 * attrs.get("groups", 1))
    if layout == "NHWC":
        x = nhwc(x)
    check_lowered(lambda a, f, c: graph.conv_transpose2d(a, f, c, layout=layout, **attrs), x, w, b)


# pooling and normalization ------------------------------------------------------------------------
POOLS = [
    {"kernel": (2, 2)},
    {"kernel": (3, 2), "strides": (2, 2), "padding": (1, 1, 1, 0), "ceil_mode": True},
    {"kernel": (3, 3), "strides": (2, 1), "padding": (1, 0, 0, 1)},
    {"kernel": (1, 1), "strides": (3, 3), "ceil_mode": True},
]


@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool2d(attrs: dict, layout: str) -> None:
    x = rand(1, 2, 5, 4)
    x[0, 0, 1, 1] = np.nan
    check_lowered(lambda a: graph.max_pool2d(a, layout=layout, **attrs), nhwc(x) if layout == "NHWC" else x)


def test_max_pool2d_dilation_and_integers() -> None:
    check_lowered(
        lambda a: graph.max_pool2d(a, kernel=(2, 2), dilations=(2, 2), padding=(1, 1, 1, 1)), rand(1, 1, 5, 6)
    )
    check_lowered(lambda a: graph.max_pool2d(a, kernel=(2, 2), padding=(1, 1, 0, 0)), rand(1, 2, 3, 3, dtype=np.int8))


@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool2d(attrs: dict, count_include_pad: bool) -> None:
    check_lowered(lambda a: graph.avg_pool2d(a, count_include_pad=count_include_pad, **attrs), rand(2, 1, 5, 4))


def test_avg_pool2d_nhwc_f16() -> None:
    x = rand(1, 3, 5, 2, dtype=np.float16)
    check_lowered(lambda a: graph.avg_pool2d(a, kernel=(2, 2), padding=(1, 1, 1, 1), layout="NHWC"), x, rtol=1e-3)


@pytest.mark.parametrize("name", ["global_avg_pool2d", "global_max_pool2d"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_pools(name: str, layout: str) -> None:
    check_lowered(lambda a: getattr(graph, name)(a, layout=layout), rand(2, 3, 1, 5))


def test_global_max_pool_of_a_run_time_empty_input_is_an_error() -> None:
    types = (TensorType((1, 2, Sym("h"), 3), f32),)
    expected = "'graph.global_max_pool2d' of an input whose spatial dimensions are empty at run time"
    assert kernel_error(lambda a: graph.global_max_pool2d(a), rand(1, 2, 0, 3), types=types) == expected
    assert compiled_error(lambda a: graph.global_max_pool2d(a), rand(1, 2, 0, 3), types=types) == expected


@pytest.mark.parametrize("axis", [1, -1])
def test_batch_norm(axis: int) -> None:
    x = rand(2, 3, 1, 3)
    c = x.shape[axis]
    params = [rand(c), rand(c), rand(c), np.abs(rand(c)) + 0.5]
    check_lowered(lambda a, s, b, m, v: graph.batch_norm(a, s, b, m, v, axis=axis, eps=1e-3), x, *params)


# resize -------------------------------------------------------------------------------------------
COORDINATES = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"]


@pytest.mark.parametrize("coordinate_mode", COORDINATES)
@pytest.mark.parametrize("nearest_mode", ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil"])
@pytest.mark.parametrize("size", [(5, 7), (1, 2)])
def test_resize_nearest(coordinate_mode: str, nearest_mode: str, size: tuple[int, int]) -> None:
    x = rand(1, 2, 3, 4, dtype=np.int32)
    check_lowered(lambda a: graph.resize(a, size=size, coordinate_mode=coordinate_mode, nearest_mode=nearest_mode), x)


@pytest.mark.parametrize("coordinate_mode", COORDINATES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("size", [(7, 3), (1, 1)])
def test_resize_bilinear(coordinate_mode: str, layout: str, size: tuple[int, int]) -> None:
    x = rand(1, 3, 4, 2)
    check_lowered(
        lambda a: graph.resize(a, size=size, mode="bilinear", coordinate_mode=coordinate_mode, layout=layout), x
    )


# gathers and scatters -----------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_with_negative_indices(axis: int) -> None:
    x = rand(3, 4, 2)
    size = x.shape[axis]
    indices = np.array([[0, -1], [size - 1, -size], [1, 0]], np.int32)
    check_lowered(lambda a, i: graph.gather(a, i, axis=axis), x, indices)


def test_gather_scalar_and_unsigned_indices() -> None:
    check_lowered(lambda a, i: graph.gather(a, i, axis=1), rand(2, 5), np.array(3, np.int64))
    check_lowered(lambda a, i: graph.gather(a, i), rand(4, 2), np.array([3, 0, 3], np.uint8))


def test_out_of_range_gather_index_is_a_run_time_error_naming_the_op_and_dimension() -> None:
    def gather(a: Any, i: Any) -> Any:
        return graph.gather(a, i, axis=1)

    x, bad = rand(2, 5), np.array([1, 5], np.int32)
    expected = "'graph.gather': an index is out of range for dimension 1 of size 5 (allowed: -5 to 4)"
    assert kernel_error(gather, x, bad) == expected
    assert compiled_error(gather, x, bad) == expected
    message = kernel_error(lambda a, i: graph.gather(a, i), rand(4), np.array([-5], np.int32))
    assert message == "'graph.gather': an index is out of range for dimension 0 of size 4 (allowed: -4 to 3)"


def test_compiled_gathers_check_every_lane_of_a_vector_of_indices() -> None:
    """Along the last axis the indices differ from lane to lane: one bad index among 43 (in the vector body
    or the scalar remainder of any vector width up to 16) fails the kernel instead of reading outside the
    buffer."""
    x = rand(3, 50)
    for bad_at in (5, 42):
        indices = RNG.integers(0, 50, 43).astype(np.int64)
        indices[bad_at] = 50 + 1000 * bad_at
        message = compiled_error(lambda a, i: graph.gather(a, i, axis=1), x, indices)
        assert message.startswith("'graph.gather': an index is out of range for dimension 1 of size 50")
    good = RNG.integers(-50, 50, 43).astype(np.int64)
    check_lowered(lambda a, i: graph.gather(a, i, axis=1), x, good)


def test_out_of_range_gather_nd_and_gather_elements_indices_are_errors() -> None:
    nd = lambda a, i: graph.gather_nd(a, i)  # noqa: E731
    message = compiled_error(nd, rand(3, 4), np.array([[1, 4]], np.int64))
    assert message == "'graph.gather_nd': an index is out of range for dimension 1 of size 4 (allowed: -4 to 3)"
    elements = lambda a, i: graph.gather_elements(a, i, axis=0)  # noqa: E731
    message = compiled_error(elements, rand(3, 4), np.array([[0, 3, 1, 2]], np.int64))
    assert message == "'graph.gather_elements': an index is out of range for dimension 0 of size 3 (allowed: -3 to 2)"


@pytest.mark.parametrize("axis", [0, -1])
def test_gather_elements(axis: int) -> None:
    x = rand(3, 4)
    indices = RNG.integers(-3, 3, (2, 3)).astype(np.int64)
    check_lowered(lambda a, i: graph.gather_elements(a, i, axis=axis), x, indices)


def test_embedding_and_its_negative_index_error() -> None:
    table = rand(5, 3)
    check_lowered(lambda w, i: graph.embedding(w, i), table, np.array([[4, 0], [2, 2]], np.int32))
    expected = "'graph.embedding': an index is out of range for dimension 0 of size 5 (allowed: 0 to 4)"
    for bad in ([1, -1], [5, 0], [2**40, 1]):
        indices = np.array(bad, np.int64)
        assert kernel_error(lambda w, i: graph.embedding(w, i), table, indices) == expected
        assert compiled_error(lambda w, i: graph.embedding(w, i), table, indices) == expected


@pytest.mark.parametrize(
    ("data", "indices", "batch_dims"),
    [((3, 4, 2), [[0, -1], [2, 1]], 0), ((3, 4), [[1], [-1], [0]], 0), ((2, 3, 4), [[[1], [2]], [[0], [-3]]], 1)],
)
def test_gather_nd(data: tuple[int, ...], indices: list, batch_dims: int) -> None:
    check_lowered(lambda a, i: graph.gather_nd(a, i, batch_dims=batch_dims), rand(*data), np.array(indices, np.int64))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements_duplicates_in_order(reduction: str, axis: int) -> None:
    data = rand(3, 4)
    indices = np.array([[1, 1, -1], [0, 1, 1]], np.int32)
    if axis == 0:
        indices = np.array([[1, -2, 2, 0], [1, 0, 0, 0]], np.int32)
    updates = rand(*indices.shape)
    check_lowered(
        lambda d, i, u: graph.scatter_elements(d, i, u, axis=axis, reduction=reduction), data, indices, updates
    )


def test_scatter_last_duplicate_wins() -> None:
    got, _ = run_both(
        lambda d, i, u: graph.scatter_elements(d, i, u),
        np.zeros(3, np.float32),
        np.array([2, 0, 2, 2], np.int32),
        np.array([1, 2, 3, 4], np.float32),
    )
    np.testing.assert_array_equal(got[0], [2, 0, 4])


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd(reduction: str) -> None:
    data = rand(4, 3, dtype=np.int32)
    indices = np.array([[1], [-1], [1]], np.int64)
    check_lowered(
        lambda d, i, u: graph.scatter_nd(d, i, u, reduction=reduction), data, indices, rand(3, 3, dtype=np.int32)
    )
    full = np.array([[0, 1], [2, -1], [0, 1]], np.int64)
    check_lowered(lambda d, i, u: graph.scatter_nd(d, i, u, reduction=reduction), rand(3, 2), full, rand(3))


def test_scatter_bool_max_and_out_of_range_error() -> None:
    data = np.array([False, True, False])
    check_lowered(
        lambda d, i, u: graph.scatter_elements(d, i, u, reduction="max"),
        data,
        np.array([0, 0], np.int32),
        np.array([True, False]),
    )
    scatter = lambda d, i, u: graph.scatter_nd(d, i, u)  # noqa: E731
    expected = "'graph.scatter_nd': an index is out of range for dimension 0 of size 3 (allowed: -3 to 2)"
    assert kernel_error(scatter, rand(3), np.array([[3]], np.int32), rand(1)) == expected
    assert compiled_error(scatter, rand(3), np.array([[-4]], np.int32), rand(1)) == expected


# arg reductions, cumsum, reductions over run-time empty dims -----------------------------------
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize(("axis", "keepdims"), [(0, False), (-1, True)])
def test_arg_reductions_ties_and_nan(name: str, last: bool, axis: int, keepdims: bool) -> None:
    x = np.array([[1, 3, 3, 0], [2, 2, np.nan, np.nan], [1, 0, 0, 5]], np.float32)
    check_lowered(lambda a: getattr(graph, name)(a, axis=axis, keepdims=keepdims, select_last_index=last), x)
    ints = np.array([[4, 1, 4], [1, 1, 0]], np.int8)
    check_lowered(lambda a: getattr(graph, name)(a, axis=axis, keepdims=keepdims, select_last_index=last), ints)


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "argmax", "argmin"])
def test_no_identity_reductions_over_a_run_time_empty_dim_are_errors(name: str) -> None:
    """The kernel starts from the first element, so it checks first that a reduced dim of a run-time size is
    not empty, on the interpreter and compiled (where the first load would read outside the buffer)."""
    types = (TensorType((2, Sym("n")), f32),)
    attrs: dict[str, Any] = {"axes": (1,)} if name.startswith("reduce") else {"axis": 1}
    body = lambda a: getattr(graph, name)(a, **attrs)  # noqa: E731
    expected = f"'graph.{name}' reduces a dimension that is empty at run time"
    assert kernel_error(body, rand(2, 0), types=types) == expected
    assert compiled_error(body, rand(2, 0), types=types) == expected


def test_reduce_max_over_a_symbolic_dim_that_is_not_empty() -> None:
    types = (TensorType((Sym("n"), 3), f32),)
    check_lowered(lambda a: graph.reduce_max(a, axes=(0, 1)), rand(4, 3), types=types)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumsum(exclusive: bool, reverse: bool, axis: int) -> None:
    check_lowered(lambda a: graph.cumsum(a, axis=axis, exclusive=exclusive, reverse=reverse), rand(3, 4))
    ints = rand(5, 2, dtype=np.int8) * 14
    check_lowered(lambda a: graph.cumsum(a, axis=axis, exclusive=exclusive, reverse=reverse), ints)


def test_cumsum_f16_and_empty() -> None:
    check_lowered(lambda a: graph.cumsum(a, axis=1), rand(2, 9, dtype=np.float16), rtol=1e-3)
    check_lowered(lambda a: graph.cumsum(a, axis=0), rand(0, 2))


# shape ops ----------------------------------------------------------------------------------------
def test_split_writes_every_result() -> None:
    x = rand(3, 7)
    got, want = run_both(lambda a: graph.split(a, axis=-1, sizes=(2, 0, 4, 1)), x)
    assert len(got) == 4
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    got, want = run_both(lambda a: graph.split(a, axis=0, sizes=(1, 2)), x)
    np.testing.assert_array_equal(got[1], x[1:])


@pytest.mark.parametrize(
    ("mode", "pads", "value"),
    [
        ("constant", (1, 0, 2, 3), 2.5),
        ("constant", (-1, 2, 0, -2), 0.0),
        ("reflect", (2, 1, 1, 3), 0.0),
        ("reflect", (-1, 1, 1, -1), 0.0),
        ("edge", (3, 0, 1, 2), 0.0),
        ("edge", (0, -2, 2, 1), 0.0),
    ],
)
def test_pad(mode: str, pads: tuple[int, ...], value: float) -> None:
    check_lowered(lambda a: graph.pad(a, pads=pads, mode=mode, value=value), rand(4, 5))


def test_pad_integers_and_symbolic_unpadded_dim() -> None:
    check_lowered(lambda a: graph.pad(a, pads=(1, 2), value=-3.0), rand(3, dtype=np.int8))
    types = (TensorType((Sym("n"), 3), f32),)
    check_lowered(lambda a: graph.pad(a, pads=(0, 1, 0, 1), mode="reflect"), rand(2, 3), types=types)


def test_tile() -> None:
    check_lowered(lambda a: graph.tile(a, repeats=(2, 1, 3)), rand(2, 3, 1))
    check_lowered(lambda a: graph.tile(a, repeats=(0, 2)), rand(2, 2, dtype=np.int32))


@pytest.mark.parametrize(
    ("start", "limit", "step", "dtype"),
    [
        (0.0, 5.0, 1.0, "f32"),
        (1.5, -2.0, -0.7, "f64"),
        (3.0, 20.0, 4.0, "i8"),
        (2.0, 1.0, 1.0, "i32"),
        (0.1, 1.0, 0.3, "f16"),
        (16777215.0, 16777300.0, 3.0, "f32"),  # integral start and step: computed in i64, rounded to f32 once
        (2147483000.0, 2147484500.0, 97.0, "i32"),  # past the i32 range: wraps as the f64 value's cast does
        (-5.0, 40.0, 7.0, "i64"),
        (65000.0, 66000.0, 300.0, "f16"),  # past f16's largest: inf
    ],
)
def test_arange(start: float, limit: float, step: float, dtype: str) -> None:
    t = tm.ir.types.parse_scalar_type(dtype)
    module = build_module([], lambda: graph.arange(start=start, limit=limit, step=step, dtype=t))
    (want,) = interp.run(module, [])
    out = np.zeros_like(want)
    loop_interp.run(make_module([lower_op(graph_op(module))]), [out])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("name", ["triu", "tril"])
@pytest.mark.parametrize("k", [0, 2, -1])
def test_triangles(name: str, k: int) -> None:
    check_lowered(lambda a: getattr(graph, name)(a, k=k), rand(2, 3, 4))
    check_lowered(lambda a: getattr(graph, name)(a, k=k), rand(4, 1) > 0)


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(2, 3), (3, 4)]),
        ("bij,bjk->bik", [(2, 1, 3), (2, 3, 2)]),
        ("ii->i", [(3, 3)]),
        ("ij->", [(2, 3)]),
        ("i,j->ij", [(3,), (2,)]),
        ("ijk,k,j->i", [(2, 3, 4), (4,), (3,)]),
        ("ij->ji", [(1, 3)]),
    ],
)
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    check_lowered(lambda *xs: graph.einsum(*xs, equation=equation), *[rand(*s) for s in shapes])


def test_einsum_integers_wrap_and_bool() -> None:
    a, b = rand(3, 5, dtype=np.int8) * 14, rand(5, 2, dtype=np.int8) * 14
    check_lowered(lambda x, y: graph.einsum(x, y, equation="ij,jk->ik"), a, b)
    check_lowered(lambda x, y: graph.einsum(x, y, equation="ij,jk->ik"), rand(2, 3) > 0, rand(3, 2) > 1)


@pytest.mark.parametrize("name", ["asin", "acos", "atan"])
def test_inverse_trigonometry(name: str) -> None:
    x = np.array([-1.5, -1.0, -0.3, 0.0, 0.7, 1.0, 2.0, np.nan], np.float32)
    check_lowered(lambda a: getattr(graph, name)(a), x)


# whole functions ----------------------------------------------------------------------------------
def test_a_small_cnn_runs_through_the_plan_with_default_schedules() -> None:
    def body(x: Any, w: Any, s: Any, b: Any, m: Any, v: Any) -> Any:
        y = graph.conv2d(x, w, padding=(1, 1, 1, 1))
        y = graph.batch_norm(y, s, b, m, v)
        y = graph.max_pool2d(graph.relu(y), kernel=(2, 2), strides=(2, 2))
        return graph.argmax(graph.reduce_sum(graph.global_avg_pool2d(y), axes=(2, 3)), axis=1)

    arrays = [rand(2, 2, 5, 5), rand(3, 2, 3, 3), rand(3), rand(3), rand(3), np.abs(rand(3)) + 0.5]
    module = build_module([TensorType(a.shape, f32) for a in arrays], body)
    (want,) = interp.run(module, arrays)
    (got,) = run_plan(lower_and_schedule(module, host_target()), arrays)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_every_graph_op_has_a_lowering() -> None:
    missing = [op.name for op in registered_ops("graph") if op.name not in LOWERINGS and not op.has_trait("terminator")]
    assert missing == []


def test_symbolic_dims_are_read_at_run_time() -> None:
    n = Sym("n")
    check_lowered(
        lambda a, i: graph.gather(a, i, axis=1),
        rand(2, 5),
        np.array([-1, 2], np.int32),
        types=(TensorType((2, n), f32), TensorType((2,), tm.ir.types.i32)),
    )
    check_lowered(lambda a: graph.cumsum(a, axis=0, reverse=True), rand(4, 2), types=(TensorType((n, 2), f32),))
    check_lowered(
        lambda a: graph.resize(a, size=(3, 5), mode="bilinear", coordinate_mode="half_pixel"),
        rand(1, 1, 2, 3),
        types=(TensorType((1, 1, n, Sym("m")), f32),),
    )
    check_lowered(
        lambda a: graph.avg_pool2d(a, kernel=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True),
        rand(1, 1, 3, 4),
        types=(TensorType((1, 1, 3, 4), f32),),
    )


def test_out_of_range_index_in_a_plan_names_the_graph_op_location() -> None:
    module = tm.parse_module(
        "module {\n  func.func @main(%x: tensor<4xf32>, %i: tensor<2xi32>) -> tensor<2xf32> {\n"
        "    %y = graph.gather %x, %i : (tensor<4xf32>, tensor<2xi32>) -> tensor<2xf32>\n"
        "    func.return %y : tensor<2xf32>\n  }\n}\n"
    )
    with pytest.raises(
        InterpreterError,
        match=r"^<input>:3:10: 'graph.gather': an index is out of range for dimension 0 of size 4 "
        r"\(allowed: -4 to 3\)$",
    ):
        run_plan(lower_function(module), [rand(4), np.array([0, 4], np.int32)])


def test_split_results_feed_later_kernels_in_a_plan() -> None:
    def body(x: Any) -> Any:
        a, b = graph.split(x, axis=1, sizes=(2, 2))
        return graph.mul(a, b), b

    x = rand(3, 4)
    module = build_module([TensorType((3, 4), f32)], body)
    got = run_plan(lower_and_schedule(module, host_target()), [x])
    np.testing.assert_array_equal(got[0], x[:, :2] * x[:, 2:])
    np.testing.assert_array_equal(got[1], x[:, 2:])
