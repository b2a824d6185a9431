"""The limits and features a WebGPU target compiles for: the data behind ``webgpu`` target strings.

``webgpu`` is the WebGPU specification's minimum limits (what every adapter offers); options after the
colon raise or lower single limits or add features, so tests and small devices can be described:
``webgpu:shader-f16,max_storage_buffers_per_shader_stage=4``. The compiler's limit passes
(:mod:`tensorium.lowering.webgpu_limits`) and GPU schedules read them from the Target.
"""

from __future__ import annotations

DEFAULT_LIMITS: dict[str, int] = {
    "max_storage_buffers_per_shader_stage": 8,
    "max_storage_buffer_binding_size": 128 << 20,
    "max_buffer_size": 256 << 20,
    "max_compute_invocations_per_workgroup": 256,
    "max_compute_workgroup_size_x": 256,
    "max_compute_workgroup_storage_size": 16 << 10,
    "max_compute_workgroups_per_dimension": 65535,
}
"""The WebGPU specification's minimum limits (each adapter offers at least these), by the spec's names in
snake case."""

FEATURES = ("shader-f16",)
"""The optional adapter features the compiler uses (``shader-f16``: f16 arithmetic and storage)."""


class WebGPUOptionError(ValueError):
    """A ``webgpu:...`` option that names no known limit or feature, or a limit that is not a positive int."""


def parse_options(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """The features and limits (all of them, defaults filled in, sorted) that ``webgpu:`` options ``text`` name."""
    features: set[str] = set()
    limits = dict(DEFAULT_LIMITS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        if not eq:
            if name not in FEATURES:
                raise WebGPUOptionError(f"unknown WebGPU feature '{name}' (known: {', '.join(FEATURES)})")
            features.add(name)
            continue
        if name not in DEFAULT_LIMITS:
            raise WebGPUOptionError(f"unknown WebGPU limit '{name}' (known: {', '.join(DEFAULT_LIMITS)})")
        if not value.isdigit() or int(value) < 1:
            raise WebGPUOptionError(f"WebGPU limit {name} must be a positive integer, got '{value}'")
        limits[name] = int(value)
    return tuple(sorted(features)), tuple(sorted(limits.items()))


def options_text(features: tuple[str, ...], limits: tuple[tuple[str, int], ...]) -> str:
    """The ``webgpu:`` options that give ``features`` and ``limits`` back: the features, then the limits that
    differ from the defaults."""
    changed = [f"{k}={v}" for k, v in limits if DEFAULT_LIMITS.get(k) != v]
    return ",".join([*features, *changed])
