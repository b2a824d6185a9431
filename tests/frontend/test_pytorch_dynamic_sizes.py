"""PyTorch ops with data-dependent result sizes (nonzero, argwhere, masked_select, unique,
unique_consecutive) through torch.export and ``tensorium.compile``: each becomes a ``graph.compress``
whose run-time dim takes torch's symbol name, so later nodes that use the size line up with it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")

sys.path.insert(0, str(Path(__file__).parent))  # the helpers beside this file

from torch_functions import FunctionModule as _Fn  # noqa: E402

import tensorium  # noqa: E402

TARGETS = ("interp", "cpu")
X = torch.tensor([[0.0, 1.5, 0.0, -2.0], [3.0, 0.0, 0.0, 1.5], [1.5, 1.5, -2.0, 0.0]])


def _same(got: Any, want: Any) -> None:
    got_flat, want_flat = torch.utils._pytree.tree_flatten(got)[0], torch.utils._pytree.tree_flatten(want)[0]
    assert len(got_flat) == len(want_flat)
    for g, w in zip(got_flat, want_flat):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        torch.testing.assert_close(g, w, rtol=0, atol=0)


CASES = {
    "nonzero": (torch.nonzero, (X,)),
    "argwhere": (torch.argwhere, (X,)),
    "masked_select": (torch.masked_select, (X, X > 1.0)),
    "masked_select_broadcast": (torch.masked_select, (X, torch.tensor([True, False, True, True]))),
    "unique": (lambda x: torch.unique(x, sorted=True, return_inverse=True, return_counts=True), (X,)),
    "unique_consecutive": (
        lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True),
        (torch.tensor([1, 1, 2, 2, 2, 3, 1, 1]),),
    ),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_data_dependent_ops_match_eager(case: str, target: str) -> None:
    fn, args = CASES[case]
    module = _Fn(fn).eval()
    _same(tensorium.compile(module, target=target)(*args), module(*args))


@pytest.mark.parametrize("target", TARGETS)
def test_each_call_gets_its_own_size(target: str) -> None:
    module = _Fn(lambda x: torch.masked_select(x, x > 0.5) * 2.0).eval()
    compiled = tensorium.compile(module, target=target)
    for x in (X, torch.zeros(3, 4), torch.ones(3, 4), -X):
        _same(compiled(x), module(x))


@pytest.mark.parametrize("target", TARGETS)
def test_later_nodes_compute_on_the_runtime_sized_result(target: str) -> None:
    def fn(x: Any) -> Any:
        picked = torch.masked_select(x, x != 0)
        return picked.sum(), torch.exp(picked), torch.nonzero(x).float().mean(dim=0)

    module = _Fn(fn).eval()
    compiled = tensorium.compile(module, target=target)
    got, want = compiled(X), module(X)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w)


def test_saved_artifact_keeps_runtime_sizes(tmp_path: Path) -> None:
    module = _Fn(torch.nonzero).eval()
    compiled = tensorium.compile(module, target="cpu")
    expected = compiled(X)
    compiled.save(tmp_path / "nonzero.tsm")
    loaded = tensorium.load(tmp_path / "nonzero.tsm")
    got = loaded(X.numpy())
    np.testing.assert_array_equal(got, expected.numpy())
    np.testing.assert_array_equal(loaded((-X).numpy()), torch.nonzero(-X).numpy())


def test_unique_along_a_dim_is_refused_with_a_reason() -> None:
    module = _Fn(lambda x: torch.unique_consecutive(x, dim=0)).eval()
    with pytest.raises(tensorium.errors.TensoriumError, match="unique_consecutive along a dim is not supported"):
        tensorium.compile(module, target="interp")(X)
