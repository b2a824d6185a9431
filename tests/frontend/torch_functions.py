"""Helpers of the PyTorch frontend tests: a function as an eval-mode module, and its compiled results
checked against eager PyTorch. Import after ``pytest.importorskip("torch")``."""

from __future__ import annotations

from typing import Any

import torch

import tensorium


class FunctionModule(torch.nn.Module):
    """``fn`` as a module (eval mode: plain functions would export in training mode)."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn
        self.eval()

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def check_against_eager(fn: Any, *args: Any, target: str = "interp", rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Compile ``fn`` for ``target`` and compare every result with eager PyTorch: shapes and dtypes exactly,
    values within ``rtol``, or ``atol`` times the largest finite magnitude of the result (at least 1)."""
    module = FunctionModule(fn)
    got = torch.utils._pytree.tree_leaves(tensorium.compile(module, target=target)(*args))
    want = torch.utils._pytree.tree_leaves(module(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        finite = w[torch.isfinite(w)] if w.is_floating_point() else w[:0]
        scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol * scale, equal_nan=True)
