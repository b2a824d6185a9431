"""histc and histogram against eager PyTorch: ranges from the data or given, a degenerate range, elements on
the edges and outside them, weights and densities, edges given as a tensor."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")

import tensorium  # noqa: E402

DATA = torch.tensor([1.0, 2.0, 2.5, 7.0, 10.0, -3.0, 4.0, 4.0])


class _Fn(torch.nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _check(fn: Any, *args: Any, target: str = "interp") -> None:
    module = _Fn(fn).eval()
    got = torch.utils._pytree.tree_leaves(tensorium.compile(module, target=target)(*args))
    want = torch.utils._pytree.tree_leaves(module(*args))
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)


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
