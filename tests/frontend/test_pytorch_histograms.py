"""histc and histogram against eager PyTorch: ranges from the data or given, a degenerate range, elements on
the edges and outside them, weights and densities, edges given as a tensor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")

sys.path.insert(0, str(Path(__file__).parent))  # the helpers beside this file

from torch_functions import check_against_eager as _check  # noqa: E402

DATA = torch.tensor([1.0, 2.0, 2.5, 7.0, 10.0, -3.0, 4.0, 4.0])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_histc(target: str) -> None:
    _check(
        lambda x: (torch.histc(x, bins=4), torch.histc(x, bins=3, min=0, max=7), torch.histc(x[6:], bins=4)),
        DATA,
        target=target,
    )


def test_histogram_with_a_bin_count() -> None:
    _check(lambda x: torch.histogram(x, bins=5), DATA)
    _check(lambda x: torch.histogram(x, bins=3, range=(0.0, 4.0)), DATA)
    _check(lambda x, w: torch.histogram(x, bins=4, weight=w, density=True), DATA, torch.arange(8.0))


def test_histogram_with_edges() -> None:
    _check(lambda x, e: torch.histogram(x, bins=e), DATA, torch.tensor([-1.0, 2.0, 4.0, 7.0]))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_histogramdd(target: str) -> None:
    points = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.0, 2.0], [-2.0, 1.0, 2.0], [3.0, 1.0, 2.0], [1.5, 0.5, 2.0]])
    weight = torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0])
    edges = (torch.tensor([-3.0, 0.0, 1.5, 3.0]), torch.tensor([-1.0, 1.0]), torch.tensor([0.0, 1.0, 2.0]))

    def fn(x: Any, w: Any, e0: Any, e1: Any, e2: Any) -> Any:
        return (
            torch.histogramdd(x, [2, 3, 1]),  # the third column is constant: its range widens by 0.5
            torch.histogramdd(x, 3, weight=w, density=True),
            torch.histogramdd(x, [2, 2, 2], range=[-1.0, 1.0, -2.0, 2.0, 0.0, 1.0]),  # some points outside
            torch.histogramdd(x, [e0, e1, e2], weight=w),  # points on the last edges count in the last bins
            torch.histogramdd(x[:, :2].reshape(5, 1, 2), (4, 2)),
        )

    _check(fn, points, weight, *edges, target=target)
