"""Misc graph ops: inverse trigonometric functions against numpy, with edge cases and dtype rules."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tensorium.ir import DYN, OpDef, Sym, TensorType, f16, f32, f64, graph, i32
from tensorium.testing import op_error, result_type, run_op


@pytest.mark.parametrize(("op", "fn"), [(graph.asin, np.arcsin), (graph.acos, np.arccos), (graph.atan, np.arctan)])
def test_inverse_trig_values(op: OpDef, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    x = np.array([[-1.0, -0.5, 0.0], [0.25, 0.5, 1.0]], dtype=np.float32)
    np.testing.assert_allclose(run_op(op, x), fn(x), rtol=1e-6)
    x64 = np.array([0.3], dtype=np.float64)
    out = run_op(op, x64)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, fn(x64))


def test_out_of_domain_gives_nan_and_atan_has_limits() -> None:
    x = np.array([2.0, -1.5], dtype=np.float32)
    assert np.isnan(run_op(graph.asin, x)).all()
    assert np.isnan(run_op(graph.acos, x)).all()
    big = np.array([np.inf, -np.inf], dtype=np.float32)
    np.testing.assert_allclose(run_op(graph.atan, big), [np.pi / 2, -np.pi / 2], rtol=1e-6)


def test_empty_and_half_precision() -> None:
    empty = np.zeros((0, 3), dtype=np.float32)
    assert run_op(graph.asin, empty).shape == (0, 3)
    h = np.array([0.5], dtype=np.float16)
    out = run_op(graph.acos, h)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, np.arccos(h), rtol=1e-3)


def test_symbolic_shapes_keep_dims() -> None:
    t = TensorType((Sym("n"), DYN, 1), f32)
    assert result_type(graph.atan, t) == t
    assert result_type(graph.asin, TensorType((2,), f16)) == TensorType((2,), f16)
    assert result_type(graph.acos, TensorType((), f64)) == TensorType((), f64)


def test_integer_operand_is_rejected() -> None:
    assert op_error(graph.asin, TensorType((2,), i32)) == "operand element type must be a float, got i32"
