"""Linalg decompositions, FFTs and complex numbers stay unsupported: each gives one clear error naming the op."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tensorium.frontend.common import UnsupportedOpsError
from tensorium.frontend.pytorch import TorchExportError, import_module
from tensorium.frontend.pytorch_unsupported import missing_reason

A = torch.eye(4) * 3 + 0.1

DECOMPOSITION = "is not supported: the graph IR has no op for matrix decompositions and solvers"
COMPLEX = "complex numbers are not supported"
CASES: list[tuple[str, Callable[[Any], Any], str, str]] = [
    (
        "svd",
        lambda a: torch.linalg.svd(a)[0],
        "aten._linalg_svd.default",
        f"singular value decomposition (svd) {DECOMPOSITION}",
    ),
    ("qr", lambda a: torch.linalg.qr(a)[0], "aten.linalg_qr.default", f"QR decomposition (qr) {DECOMPOSITION}"),
    (
        "eigh",
        lambda a: torch.linalg.eigh(a)[1],
        "aten._linalg_eigh.default",
        f"eigendecomposition (eigh) {DECOMPOSITION}",
    ),
    (
        "eig",
        lambda a: torch.linalg.eig(a)[0].abs(),
        "aten.linalg_eig.default",
        f"eigendecomposition (eig) {DECOMPOSITION}",
    ),
    (
        "cholesky",
        torch.linalg.cholesky,
        "aten.linalg_cholesky_ex.default",
        f"Cholesky decomposition (cholesky) {DECOMPOSITION}",
    ),
    ("lu", lambda a: torch.linalg.lu(a)[2], "aten.linalg_lu.default", f"LU decomposition (lu) {DECOMPOSITION}"),
    (
        "solve",
        lambda a: torch.linalg.solve(a, a[:, :2]),
        "aten._linalg_solve_ex.default",
        f"linear solve (solve) {DECOMPOSITION}",
    ),
    (
        "inv",
        torch.linalg.inv,
        "aten.linalg_inv_ex.default",
        f"matrix inverse (inv, by LU decomposition) {DECOMPOSITION}",
    ),
    ("det", torch.linalg.det, "aten._linalg_det.default", f"determinant (det, by LU decomposition) {DECOMPOSITION}"),
    (
        "rfft",
        lambda a: torch.fft.rfft(a).abs(),
        "aten._fft_r2c.default",
        "FFTs are not supported: they compute complex numbers",
    ),
    ("complex", lambda a: torch.complex(a, a).abs(), "aten.complex.default", COMPLEX),
]


@pytest.mark.parametrize(("name", "fn", "aten", "reason"), CASES, ids=[c[0] for c in CASES])
def test_unsupported_op_gives_one_clear_error(name: str, fn: Callable[[Any], Any], aten: str, reason: str) -> None:
    with pytest.raises(UnsupportedOpsError) as info:
        import_module(fn, (A,))
    mine = [item for item in info.value.items if item.op == aten]
    assert len(mine) == 1, str(info.value)
    assert reason in mine[0].reason
    assert f"{aten} (node" in str(info.value) and reason in str(info.value)


def test_a_complex_input_is_named() -> None:
    with pytest.raises(TorchExportError, match=r"complex64 has no Tensorium element type \(complex numbers are not"):
        import_module(lambda z: z * 2, (torch.ones(3, dtype=torch.complex64),))


def test_other_missing_ops_say_no_converter() -> None:
    assert missing_reason("aten.special_airy_ai.default") == "no converter"
    assert missing_reason("aten._fft_c2c.default").startswith("FFTs are not supported")
    assert missing_reason("aten.view_as_real.default").startswith(COMPLEX)
