"""Frontends: PyTorch (torch.export / TorchDynamo), ONNX, and Tensorium's own tracer, each lowering a
model into the graph IR. Heavy frameworks are imported only when their frontend is used."""

from __future__ import annotations

from .common import ImportedGraph, Unsupported, UnsupportedOpsError

__all__ = ["ImportedGraph", "Unsupported", "UnsupportedOpsError"]
