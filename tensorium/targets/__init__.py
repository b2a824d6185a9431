"""Targets: the one description of the hardware that lowering, schedules, emitters and executables read.

``parse_target("cpu")`` is this machine; ``"cpu:NAME"`` any x86 CPU LLVM knows (``cpu:x86-64-v3``,
``cpu:znver4``, ...); ``"interp"`` the reference interpreter. See docs/targets.md.
"""

from __future__ import annotations

from .target import GPU_KINDS, KINDS, Target, TargetError, default_threads, host_target, parse_target

__all__ = ["GPU_KINDS", "KINDS", "Target", "TargetError", "default_threads", "host_target", "parse_target"]
