"""Passes over modules: the Pass base and registry, pipeline text, the PassManager and the passes.

Importing this package registers every pass shipped with Tensorium (canonicalize, cse, dce, fold,
fold-batch-norm, layout, fuse-siblings, fuse-attention, pack-weights, fuse, lower-to-loops, quantize, pack-quant,
pack-quant-gpu).
"""

from __future__ import annotations

from . import (  # noqa: F401  (registers the passes)
    canonicalize,
    cse,
    dce,
    fold,
    fold_batch_norm,
    fuse,
    fuse_attention,
    fuse_siblings,
    layout,
    lower_to_loops,
    pack_quant,
    pack_quant_gpu,
    pack_weights,
    quantize,
)
from .base import Pass, get_pass, pass_names, register_pass
from .manager import PassManager
from .pipeline import Pipeline, parse_pipeline

__all__ = ["Pass", "PassManager", "Pipeline", "get_pass", "parse_pipeline", "pass_names", "register_pass"]
