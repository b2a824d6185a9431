"""Interop with upstream MLIR: export of the graph dialect to ``func``/``linalg``/``tensor``/``arith``/``math``
text that MLIR's own Python bindings parse and verify, import of that subset back into the graph dialect,
and IREE (an MLIR compiler) as a second reference (docs/mlir_interop.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..frontend.common import ImportedGraph
from ..ir.core import Operation
from ..ir.dialects.builtin import func_body, pick_function
from .bindings import MlirBindingsError, MlirVerifyError, verify_text
from .export import ExportError, export_text
from .importer import ImportError_, import_text

__all__ = ["ExportError", "ImportError_", "MlirBindingsError", "MlirVerifyError", "export_mlir", "import_mlir"]


def export_mlir(model: Any, *example_inputs: Any) -> str:
    """Upstream-MLIR text of a graph module, an imported graph, an ``.onnx`` path, or a torch module called
    on ``example_inputs``; verified by MLIR's bindings before it is returned."""
    if isinstance(model, ImportedGraph):
        model = model.module
    elif isinstance(model, (str, os.PathLike)) and str(model).endswith(".onnx"):
        from ..frontend.onnx_import import import_onnx

        model = import_onnx(str(model)).module
    elif not isinstance(model, Operation):
        from ..frontend.pytorch import import_module

        model = import_module(model, tuple(example_inputs)).module
    text = export_text(model)
    verify_text(text, "the exported module")
    return text


def import_mlir(source: str | os.PathLike[str]) -> Operation:
    """The graph module of upstream-MLIR text, or of the ``.mlir`` file at ``source``."""
    if isinstance(source, os.PathLike) or (str(source).endswith(".mlir") and "\n" not in str(source)):
        path = Path(source)
        return import_text(path.read_text(encoding="utf-8"), str(path))
    return import_text(str(source))


def imported_graph(path: str) -> ImportedGraph:
    """An upstream ``.mlir`` file as an imported graph whose inputs are ``@main``'s arguments."""
    module = import_mlir(Path(path))
    args = func_body(pick_function(module)).args
    outputs = pick_function(module).regions[0].block.ops[-1].operands
    return ImportedGraph(
        module,
        [f"arg{i}" for i in range(len(args))],
        [f"out{i}" for i in range(len(outputs))],
        None,
        {"frontend": "mlir"},
    )
