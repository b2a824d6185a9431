"""The WebGPU backend: loop kernels as WGSL compute shaders (:mod:`.emitter`), run through wgpu-py
(:mod:`.executable`, :mod:`.device`) or by the JavaScript runtime in ``js/`` (docs/webgpu_backend.md)."""

from __future__ import annotations

from .device import WebGPUUnavailable
from .emitter import Shader, WGSLEmitter, compile_shaders
from .executable import WebGPUExecutable

__all__ = ["Shader", "WGSLEmitter", "WebGPUExecutable", "WebGPUUnavailable", "compile_shaders"]
