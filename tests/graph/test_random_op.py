"""graph.random: Tensorium's counter-based generator, checked by shape, dtype and distribution."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.ir.dialects import graph
from tensorium.ir.types import TensorType, f32, f64, i32, i64
from tensorium.testing import build_module, op_error


def draw(shape: list[int], distribution: str = "uniform", seed: int = 0, dtype: object = f32) -> np.ndarray:
    module = build_module([], lambda: graph.random(shape=shape, dtype=dtype, distribution=distribution, seed=seed))
    (out,) = interp.run(module, [])
    return out


def test_uniform_draws_cover_the_unit_interval_evenly() -> None:
    u = draw([200, 100], seed=3)
    assert u.shape == (200, 100) and u.dtype == np.float32
    assert 0 < u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert counts.min() > 0.9 * u.size / 10 and counts.max() < 1.1 * u.size / 10
    assert abs(np.corrcoef(u.ravel()[:-1], u.ravel()[1:])[0, 1]) < 0.02  # neighbours are not correlated


def test_normal_draws_have_mean_zero_and_variance_one() -> None:
    z = draw([20000], "normal", seed=5, dtype=f64)
    assert z.dtype == np.float64
    assert abs(z.mean()) < 0.03 and abs(z.var() - 1) < 0.05
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.02


def test_the_seed_decides_the_numbers() -> None:
    np.testing.assert_array_equal(draw([64], seed=7), draw([64], seed=7))
    assert not np.array_equal(draw([64], seed=7), draw([64], seed=8))
    assert draw([], seed=1).shape == ()


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"shape": [2], "dtype": i32}, "random element type must be"),
        ({"shape": [-1], "dtype": f32}, "negative dim"),
        ({"shape": [2], "dtype": f32, "seed": -1}, "seed must be >= 0"),
    ],
)
def test_bad_attributes_are_named(attrs: dict[str, object], message: str) -> None:
    assert message in op_error(graph.random, **attrs)


def keyed(key: list[int], seed: int = 0) -> np.ndarray:
    module = build_module(
        [TensorType((2,), i64)], lambda k: graph.random(k, shape=[64], dtype=f32, distribution="uniform", seed=seed)
    )
    (out,) = interp.run(module, [np.array(key, np.int64)])
    return out


def test_the_key_gives_each_seed_and_call_its_own_numbers() -> None:
    draws = [keyed([s, c], seed) for s in range(3) for c in range(3) for seed in range(2)]
    np.testing.assert_array_equal(keyed([1, 2], 1), keyed([1, 2], 1))  # the same key draws the same numbers
    assert len({d.tobytes() for d in draws}) == len(draws)
    assert not np.array_equal(keyed([0, 0]), draw([64]))  # a key is not the keyless stream
    u = np.concatenate([keyed([7, c]) for c in range(200)])
    assert abs(u.mean() - 0.5) < 0.02 and abs(np.corrcoef(u[:-64], u[64:])[0, 1]) < 0.05  # calls uncorrelated


def test_a_key_must_be_two_int64_words() -> None:
    assert "random key must be tensor<2xi64>" in op_error(graph.random, TensorType((3,), i64), shape=[2], dtype=f32)
