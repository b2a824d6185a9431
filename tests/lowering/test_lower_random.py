"""graph.random lowered to loops: the loop interpreter and LLVM-compiled code draw the interpreter's numbers."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.ir.dialects import graph
from tensorium.ir.types import f32, f64

from .conftest import check_lowered


@pytest.mark.parametrize("distribution", ["uniform", "normal"])
@pytest.mark.parametrize(("shape", "element"), [((), f32), ((5,), f64), ((3, 4, 7), f32)])
def test_random_matches_the_reference(distribution: str, shape: tuple[int, ...], element: object) -> None:
    check_lowered(lambda: graph.random(shape=list(shape), dtype=element, distribution=distribution, seed=11))


@pytest.mark.parametrize("key", [[0, 0], [3, 1], [12345678901, 2**40 + 7]])
@pytest.mark.parametrize("distribution", ["uniform", "normal"])
def test_random_with_a_key_matches_the_reference(key: list[int], distribution: str) -> None:
    check_lowered(
        lambda k: graph.random(k, shape=[4, 6], dtype=f32, distribution=distribution, seed=5),
        np.array(key, np.int64),
    )
