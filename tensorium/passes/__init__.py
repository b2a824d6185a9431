"""Passes over modules: the Pass base and registry, pipeline text, the PassManager and the passes.

Importing this package registers every pass shipped with Tensorium (canonicalize, cse, dce, fold,
lower-to-loops).
"""

from __future__ import annotations

from . import canonicalize, cse, dce, fold, lower_to_loops, pack_weights  # noqa: F401  (registers the passes)
from .base import Pass, get_pass, pass_names, register_pass
from .manager import PassManager
from .pipeline import Pipeline, parse_pipeline

__all__ = ["Pass", "PassManager", "Pipeline", "get_pass", "parse_pipeline", "pass_names", "register_pass"]
