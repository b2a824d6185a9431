"""pack-quant-gpu: constant k-bit matmul weights packed at compile time for the GPU's k-bit kernels.

What ``pack-quant`` does for a CPU, with the rows of a warp side by side: ``quant.matmul(x, Wq, scale, zero)``
with constant operands becomes ``quant.matmul_packed`` over the ``interleaved`` layout of 32 lanes, so that the
32 lanes of a warp, one weight row each, load 32 adjacent words of every block of 32 codes (one coalesced
transaction), with the scales and zero points panel-major the same way (a panel's 32 rows adjacent per group).
Products of at most 8 activation rows run as ``gpu_qgemv`` (decode), products of more, or of rows known only at
run time (prefill with a symbolic sequence length), as ``gpu_qgemm``'s tiled GEMM, both from this layout. Products
the kernels cannot take are left as they are, as ``pack-quant`` leaves them, and so are products whose contraction
length is known only at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.core import Operation
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..targets.cuda import WARP
from .base import Pass, register_pass
from .pack_quant import _pack


@register_pass
@dataclass(frozen=True)
class PackQuantGpu(Pass):
    """Pack constant k-bit matmul weights for the GPU kernel, a warp's 32 rows side by side."""

    name: ClassVar[str] = "pack-quant-gpu"

    def run(self, module: Operation) -> None:
        def pack(op: Operation, rewriter: PatternRewriter) -> bool:
            return _pack(op, rewriter, WARP)

        apply_patterns_greedily(module, [RewritePattern("pack_quantized_weight_for_a_warp", ("quant.matmul",), pack)])
