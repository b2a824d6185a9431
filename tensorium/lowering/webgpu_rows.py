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
from .gpu_rows import NORMS, REDUCTIONS, SOFTMAX, THREADS, gpu_rows_default, lower_gpu_rows, row_split
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
    """CUDA's default (a warp per 32 elements of a row, up to 256) where it is legal here, else the most."""
    config = gpu_rows_default(op, target, space)
    sizes = space.knobs[0].values
    return config if config["threads"] in sizes else Config(FAMILY, (("threads", max(sizes)),))


OPS = (*REDUCTIONS, *SOFTMAX, *NORMS)
register_target_family("webgpu", Family(FAMILY, OPS, webgpu_rows_space, webgpu_rows_default))
for _name in OPS:
    register_target_lowering("webgpu", _name, lower_gpu_rows)
