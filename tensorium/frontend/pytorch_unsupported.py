"""Why an ATen op has no converter, for the ops Tensorium leaves out on purpose.

Matrix decompositions and solvers, FFTs and complex numbers stay unsupported (the graph IR has no op for
them and no complex element type); :func:`missing_reason` gives each of their ATen ops one clear reason for
:class:`~tensorium.frontend.common.UnsupportedOpsError`, naming the decomposition, and ``"no converter"`` for
every other op without a converter.
"""

from __future__ import annotations

__all__ = ["COMPLEX_OPS", "DECOMPOSITIONS", "missing_reason"]

DECOMPOSITIONS = {
    "_linalg_svd": "singular value decomposition (svd)",
    "linalg_svd": "singular value decomposition (svd)",
    "svd": "singular value decomposition (svd)",
    "linalg_qr": "QR decomposition (qr)",
    "geqrf": "QR decomposition (geqrf)",
    "ormqr": "QR decomposition (ormqr)",
    "linalg_householder_product": "QR decomposition (householder_product)",
    "_linalg_eigh": "eigendecomposition (eigh)",
    "linalg_eig": "eigendecomposition (eig)",
    "_linalg_eigvals": "eigendecomposition (eigvals)",
    "linalg_eigvals": "eigendecomposition (eigvals)",
    "cholesky": "Cholesky decomposition (cholesky)",
    "linalg_cholesky_ex": "Cholesky decomposition (cholesky)",
    "cholesky_solve": "Cholesky decomposition (cholesky_solve)",
    "cholesky_inverse": "Cholesky decomposition (cholesky_inverse)",
    "linalg_ldl_factor_ex": "LDL decomposition (ldl_factor)",
    "linalg_ldl_solve": "LDL decomposition (ldl_solve)",
    "linalg_lu": "LU decomposition (lu)",
    "linalg_lu_factor_ex": "LU decomposition (lu_factor)",
    "linalg_lu_solve": "LU decomposition (lu_solve)",
    "_linalg_solve_ex": "linear solve (solve)",
    "linalg_solve_triangular": "triangular solve (solve_triangular)",
    "triangular_solve": "triangular solve (triangular_solve)",
    "linalg_inv_ex": "matrix inverse (inv, by LU decomposition)",
    "_linalg_det": "determinant (det, by LU decomposition)",
    "_linalg_slogdet": "determinant (slogdet, by LU decomposition)",
    "linalg_matrix_exp": "matrix exponential (matrix_exp)",
    "linalg_pinv": "pseudo-inverse (pinv, by SVD or eigendecomposition)",
}
"""ATen packets of the linalg decompositions and solvers, and what each computes."""

COMPLEX_OPS = frozenset(
    {"complex", "polar", "view_as_real", "view_as_complex", "real", "imag", "conj_physical", "_conj", "angle"}
)
"""ATen packets that make or read complex numbers (``angle`` of a real tensor converts)."""


def missing_reason(name: str) -> str:
    """Why the ATen op ``name`` (``aten.linalg_qr.default``) has no converter."""
    packet = name.split(".")[1] if name.startswith("aten.") and name.count(".") == 2 else name
    what = DECOMPOSITIONS.get(packet)
    if what is not None:
        return (
            f"{what} is not supported: the graph IR has no op for matrix decompositions and solvers "
            "(svd, qr, eig, cholesky, lu, solve, inv, det)"
        )
    if packet.startswith(("_fft_", "fft_")):
        return "FFTs are not supported: they compute complex numbers, and Tensorium has no complex element type"
    if packet in COMPLEX_OPS:
        return "complex numbers are not supported: Tensorium has no complex element type"
    return "no converter"
