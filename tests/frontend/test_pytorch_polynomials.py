"""torch.special's orthogonal polynomials (one recurrence table, tensorium/frontend/pytorch_polynomial_ops.py)
against eager PyTorch: negative and fractional degrees, degrees up to the table's limit, the Chebyshev closed
forms beyond it, the ends of [-1, 1]."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")

sys.path.insert(0, str(Path(__file__).parent))  # the helpers beside this file

from torch_functions import FunctionModule as _Fn  # noqa: E402

import tensorium  # noqa: E402
from tensorium.frontend.pytorch_polynomial_ops import MAX_DEGREE, POLYNOMIALS  # noqa: E402

X = torch.tensor([-1.0, -0.9, -0.3, 0.0, 0.25, 0.7, 1.0, 1.3, -2.0, 0.5, 0.95, 1.0])
N = torch.tensor([3.0, 7.0, 12.0, 0.0, 1.0, 5.6, 9.0, 4.0, -1.5, 40.0, 30.0, 31.0])


def _degrees(name: str) -> Any:
    """Beyond the table's degrees only the Chebyshev polynomials have values (closed forms)."""
    return N if "chebyshev" in name else N.clamp(max=MAX_DEGREE)


def test_every_polynomial_matches_eager() -> None:
    functions = [(getattr(torch.special, name), _degrees(name)) for name in sorted(POLYNOMIALS)]
    module = _Fn(lambda x: tuple(fn(x, n) for fn, n in functions)).eval()
    got, want = tensorium.compile(module, target="interp")(X), module(X)
    for name, g, w in zip(sorted(POLYNOMIALS), got, want):
        finite = w[torch.isfinite(w)]
        scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5 * scale, equal_nan=True, msg=name)


def test_polynomials_on_the_cpu_with_a_scalar_degree() -> None:
    module = _Fn(lambda x: (torch.special.legendre_polynomial_p(x, 5), torch.special.hermite_polynomial_h(x, 3))).eval()
    x = X[:8]
    for g, w in zip(tensorium.compile(module, target="cpu")(x), module(x)):
        torch.testing.assert_close(g, w)


def test_degrees_beyond_the_table_give_nan_outside_chebyshev() -> None:
    module = _Fn(lambda x: torch.special.legendre_polynomial_p(x, MAX_DEGREE + 1)).eval()
    assert torch.isnan(tensorium.compile(module, target="interp")(X)).all()
