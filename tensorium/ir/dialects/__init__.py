"""Dialects shipped with Tensorium. Importing this package registers all of their ops."""

from __future__ import annotations

from . import builtin, graph, loop, quant

__all__ = ["builtin", "graph", "loop", "quant"]
