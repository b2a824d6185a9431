"""Random points of the kernels' search spaces, so that a schedule wrong at only some point of its space shows.

Every kernel family declares a space (:mod:`tensorium.lowering.space`: GEMM and convolution tiles, the
matrix-vector knobs, the qgemv knobs, unroll, vector width, parallel split, GPU threads) and every legal
point must compute the same result. The fuzzer's compiled backends build a share of their cases with each
kernel at a point drawn from the case's ``schedule_seed`` instead of the target's default, and compare with
the interpreter as usual.
"""

from __future__ import annotations

import hashlib
import random

from ..ir.core import Operation
from ..lowering.space import Config, tunable_kernels
from ..targets import Target


def random_configs(module: Operation, target: Target, seed: int, func: str = "main") -> dict[str, Config]:
    """A random legal point of the space of each tunable kernel of ``@func`` on ``target``, by kernel key.

    Each kernel's point depends only on ``seed`` and its key, so a kernel keeps its point while a reducer
    removes the ops around it."""
    configs = {}
    for kernel in tunable_kernels(module, target, func):
        digest = hashlib.sha256(f"{seed}:{kernel.key}".encode()).digest()
        configs[kernel.key] = kernel.space.sample(random.Random(int.from_bytes(digest[:8], "little")))
    return configs


__all__ = ["random_configs"]
