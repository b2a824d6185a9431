"""MLIR's own Python bindings (shipped in the ``iree-base-compiler`` wheel, the ``mlir`` extra): loading
them with a clear error when the extra is missing, and parsing plus verifying MLIR text with them."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import TensoriumError

INSTALL_HINT = "install the mlir extra: pip install 'tensorium[mlir]'"


class MlirBindingsError(TensoriumError):
    """The MLIR Python bindings are not installed."""


class MlirVerifyError(TensoriumError):
    """MLIR text that MLIR itself rejects: its parser's or verifier's diagnostics, with file:line:column."""


def mlir_ir() -> ModuleType:
    """``iree.compiler.ir``, MLIR's Python API, or MlirBindingsError naming the extra to install."""
    try:
        from iree.compiler import ir
    except ImportError as e:
        raise MlirBindingsError(f"the MLIR Python bindings are missing ({e}); {INSTALL_HINT}") from None
    return ir


def parse(text: str, context: Any, source: str = "<mlir>") -> Any:
    """Parse and verify ``text`` in ``context``; the module, or MlirVerifyError with MLIR's diagnostics."""
    ir = mlir_ir()
    try:
        module = ir.Module.parse(text, context)
    except ir.MLIRError as e:
        raise MlirVerifyError(f"{source}: MLIR rejects the text: {_diagnostics(e)}") from None
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise MlirVerifyError(f"{source}: MLIR's verifier rejects the module: {_diagnostics(e)}") from None
    return module


def verify_text(text: str, source: str = "<mlir>") -> None:
    """Check that MLIR parses and verifies ``text`` (raises MlirVerifyError otherwise)."""
    ir = mlir_ir()
    with ir.Context() as context:
        parse(text, context, source)


def _diagnostics(error: Any) -> str:
    details = [f"{d.location}: {d.message}" for d in getattr(error, "error_diagnostics", [])]
    return "; ".join(details) or str(error)
