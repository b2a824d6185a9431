"""Rows by whole workgroups on WebGPU: the ``gpu_rows`` family of :mod:`tensorium.lowering.gpu_rows`, within
WebGPU's limits.

The kernel is the CUDA backend's: one workgroup per row of a reduction, softmax or norm over trailing axes,
its invocations folding strided elements and then halving through a tree in workgroup memory between
barriers. Only the space differs: the ``threads`` values (powers of two from 32) are those within the
Target's ``max_compute_invocations_per_workgroup``, ``max_compute_workgroup_size_x`` and (one f32 each)
``max_compute_workgroup_storage_size``, for rows of at least :data:`MIN_ROW` elements that fit
``max_compute_workgroups_per_dimension`` (one workgroup each along x); other ops keep their general family.
"""

from __future__ import annotations

from ..ir.core import Operation
from ..targets import Target
from .gpu_rows import NORMS, REDUCTIONS, SOFTMAX, THREADS, lower_gpu_rows, row_split
from .kernel import register_target_lowering
from .space import Config, Family, Knob, Space, register_target_family

FAMILY = "gpu_rows"
MIN_ROW = 64
"""Shorter rows stay with one invocation each: a workgroup would mostly wait at barriers."""


def workgroup_sizes(target: Target) -> tuple[int, ...]:
    """The ``threads`` values ``target`` allows: within its invocations per workgroup and its workgroup storage."""
    cap = min(target.limit("max_compute_invocations_per_workgroup"), target.limit("max_compute_workgroup_size_x"))
    storage = target.limit("max_compute_workgroup_storage_size") // 4
    return tuple(t for t in THREADS if t <= cap and t <= storage)


def webgpu_rows_space(op: Operation, target: Target) -> Space | None:
    """``gpu_rows``' knob on a WebGPU ``target``; None when the family does not build ``op`` here."""
    split = row_split(op)
    sizes = workgroup_sizes(target)
    if (
        split is None
        or not sizes
        or split[1] < MIN_ROW
        or split[0] > target.limit("max_compute_workgroups_per_dimension")
    ):
        return None
    return Space(FAMILY, (Knob("threads", sizes, "invocations per workgroup, one workgroup per row"),))


def webgpu_rows_default(op: Operation, target: Target, space: Space) -> Config:
    """The fewest invocations the space holds (32 where the limits allow), whatever the row's length: on the
    software adapters this project runs, the more invocations fold a row, the more ``log2 W`` barrier steps each
    pass pays, and no longer row paid for more. Measured on lavapipe (2026-11-29, Zen 4, ms per run with the input
    uploaded and the output read back, at 32 / 64 / 128 / 256 invocations): softmax over [4, 512, 512] 9.6 / 11.7
    / 16.0 / 25.5, over [4, 64, 4096] 9.0 / 10.3 / 10.9 / 10.9, over [1, 64, 32000] 24.8 / 27.0 / 25.7 / 24.8;
    layer norm over [1, 512, 64] 1.4 / 1.9 / 3.4 / 6.7, over [8, 512, 256] 11.1 / 15.9 / 25.1 / 44.0. CUDA's rule (a
    warp per 32 elements of a row, up to 256) took the 64 of the first layer norm and 256 elsewhere. One invocation
    per row (the general family) ran the two layer norms in 0.65 and 5.8 ms and the first softmax in 6.7 ms here,
    but reads a row per invocation, which a hardware GPU cannot coalesce: rows of :data:`MIN_ROW` elements or more
    keep a workgroup each, and the search space holds the larger workgroups a hardware GPU may want."""
    return Config(FAMILY, (("threads", min(space.knobs[0].values)),))


OPS = (*REDUCTIONS, *SOFTMAX, *NORMS)
register_target_family("webgpu", Family(FAMILY, OPS, webgpu_rows_space, webgpu_rows_default))
for _name in OPS:
    register_target_lowering("webgpu", _name, lower_gpu_rows)
