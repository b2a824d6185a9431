"""The WebGPU executable: a graph module lowered to loop kernels, emitted as WGSL, run through wgpu-py.

:meth:`WebGPUExecutable.build` runs the codegen stages (:mod:`tensorium.lowering.codegen`) with the
WebGPU backend's own scheduling (on a copy of the module whose ops over the storage-buffer or binding-size
limit are split, :mod:`tensorium.lowering.webgpu_split`): ``lower``, ``decompose`` (the math WGSL lacks),
then ``emit``, which binds each kernel to workgroups (:mod:`tensorium.lowering.webgpu_schedule`), runs the
limit passes (:mod:`tensorium.lowering.webgpu_limits`) and writes one WGSL shader per kernel. The CPU's default
schedules (vectors, threads) do not apply; ``disable=("schedule",)`` changes nothing here.

``run`` needs wgpu-py and an adapter (Mesa's lavapipe runs it on a CPU): every buffer of the plan gets a
GPU buffer of its own (kept for the next run: shapes are static), constants are uploaded once, inputs at
each run; a view is copied out of its source right before each kernel that reads it (bindings at
arbitrary offsets would break WebGPU's offset alignment); a concat of contiguous runs of its result is buffer
copies, not a kernel (:attr:`Shader.pieces`); all kernels go in one command buffer.

:meth:`to_files` writes the artifact the JavaScript runtime also runs (``js/tensorium-webgpu.js``):
``plan.json`` (buffers, steps, kernels and their launch data), ``weights.bin`` (the constants, one after
another) and ``kernels/<name>.wgsl``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CompileError, InterpreterError
from ...ir.core import Operation
from ...ir.dialects.builtin import functions
from ...ir.parser import parse_type_text
from ...ir.rewrite import is_trivially_dead
from ...ir.types import IntegerType, Sym, TensorType, dim_size, storage_dtype
from ...lowering import Step, View, plan_of
from ...lowering.codegen import AfterStage, Codegen, run_codegen
from ...lowering.plan import RuntimeDim
from ...lowering.space import Config
from ...lowering.webgpu_int64 import I32_RANGE, dims_within_binding, held_in_i32, storage_itemsize
from ...lowering.webgpu_limits import INDEX_LIMIT, apply_limits, storage_bytes
from ...lowering.webgpu_quant import DEFAULT_LAYOUT, Packing, pack_quantized
from ...lowering.webgpu_schedule import dynamic_grid, evaluate_dispatch, gpu_configs, map_to_workgroups
from ...lowering.webgpu_split import split_for_binding_size, split_for_storage_buffers
from ...passes.dce import DCE
from ...runtime.executable import Executable, ExecutableError, ExecutableKind, load_stored
from ...runtime.memory import MemoryPlan
from ...targets import Target, TargetError, parse_target
from ...version import __version__
from ..interp import check_value
from .device import device_for, wgpu_module
from .emitter import Shader, WGSLEmitter, compile_shaders, storage_type

__all__ = ["EXECUTABLE_FORMAT", "WebGPUExecutable"]

EXECUTABLE_FORMAT = "tensorium-webgpu-executable"
EXECUTABLE_VERSION = 1
PLAN_FILE = "plan.json"
WEIGHTS_FILE = "weights.bin"
KERNEL_FOLDER = "kernels"


def _is_bool(t: TensorType) -> bool:
    return isinstance(t.element, IntegerType) and t.element.is_bool


def _held_dtype(t: TensorType) -> np.dtype[Any]:
    """The numpy dtype of ``t``'s elements in WebGPU storage (``i1`` as ``u32``, ``i64`` as ``i32``)."""
    if _is_bool(t):
        return np.dtype(np.uint32)
    return np.dtype(np.int32) if held_in_i32(t.element) else storage_dtype(t.element)


def narrowed(array: np.ndarray, t: TensorType, what: str, error: type[Exception] = InterpreterError) -> np.ndarray:
    """``array`` of an ``i64`` tensor ``t`` as the ``int32`` WebGPU holds it in; ``error`` naming ``what`` and
    the first value outside the 32-bit range (never a silent narrowing). Other types pass unchanged."""
    if not held_in_i32(t.element) or array.size == 0:
        return array
    low, high = int(array.min()), int(array.max())
    if low < I32_RANGE[0] or high > I32_RANGE[1]:
        bad = low if low < I32_RANGE[0] else high
        raise error(
            f"{what} ({t}) holds {bad}, outside the 32-bit range WebGPU holds i64 in [{I32_RANGE[0]}, {I32_RANGE[1]}]"
        )
    return array.astype(np.int32)


def _to_storage(array: np.ndarray, t: TensorType) -> bytes:
    """The bytes of ``array`` as the shaders read them (``i1`` as ``u32``, ``i64`` already :func:`narrowed`),
    zero-padded to a multiple of 4 (WebGPU copies whole words: an f16 tensor of odd size has two bytes more)."""
    data = np.ascontiguousarray(array, _held_dtype(t)).tobytes()
    return data + bytes(-len(data) % 4)


def _write(device: Any, buffer: Any, data: bytes) -> None:
    """Upload ``data`` to the start of ``buffer``; nothing for an empty tensor (wgpu refuses empty writes)."""
    if data:
        device.queue.write_buffer(buffer, 0, data)


def _itemsize(t: TensorType) -> int:
    """Bytes per element in WebGPU storage (``i1`` as ``u32``, ``i64`` as ``i32``)."""
    return storage_itemsize(t.element)


def _from_storage(data: Any, t: TensorType, shape: tuple[int, ...] | None = None) -> np.ndarray:
    shape = t.static_shape if shape is None else shape
    count = int(np.prod(shape, dtype=np.int64))
    if _is_bool(t):
        return np.frombuffer(data, np.uint32, count=count).reshape(shape) != 0
    held = np.frombuffer(data, _held_dtype(t), count=count).reshape(shape)
    return held.astype(storage_dtype(t.element))  # a copy; i64 widened


@dataclass
class _Launch:
    """One step as ``run`` records it: its pipeline and bind group (None for a concat of buffer copies), its grid
    for the allocated shapes, the views copied before it, its pieces' copies, and its ``dims`` uniform."""

    step: Step
    pipeline: Any
    group: Any
    grid: tuple[int, ...] | None
    views: list[View]
    pieces: list[tuple[int, int, int, int]] | None
    uniform: Any = None
    status: Any = None
    """The 4-byte status buffer of a kernel with run-time checks (see :attr:`Shader.checks`)."""
    run_time_dims: bool = False
    """Whether the step's buffers have a dim computed at run time (its grid and uniform are redone each run)."""


class WebGPUExecutable(Executable):
    """A lowered module's launch plan over WGSL shaders; ``run(arrays)`` gives the outputs.

    The WebGPU target's :class:`~tensorium.runtime.executable.Executable` (and, by its static ``build`` and
    ``from_files``, its :class:`~tensorium.runtime.executable.ExecutableKind`)."""

    def __init__(
        self,
        shaders: dict[str, Shader],
        buffers: tuple[TensorType, ...],
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        constants: tuple[tuple[int, np.ndarray], ...],
        steps: tuple[Step, ...],
        target: Target,
        views: tuple[View, ...] = (),
        packed: Mapping[int, Packing] | None = None,
        dims: tuple[RuntimeDim, ...] = (),
    ) -> None:
        self.shaders = shaders
        self.dims = dims
        """Named dims computed at run time (``graph.compress``'s): their tensors are allocated at the dim's bound;
        after the step that writes a dim's size, ``run`` reads it back and launches the rest with it."""
        self.buffers = buffers
        self.inputs = inputs
        self.outputs = outputs
        self.constants = constants
        self.steps = steps
        self.views = views
        self.target = target
        self.packed = dict(packed or {})
        """k-bit tensors held packed (:mod:`tensorium.lowering.webgpu_quant`), by buffer: ``buffers`` holds
        their words; inputs among them are given as codes and packed at each run."""
        self.memory = MemoryPlan.build(buffers, steps, outputs, views, reuse=False)
        self.last_bindings: dict[str, int] | None = None
        self._view_of = {v.buffer: v for v in views}
        self._lock = threading.Lock()
        self._gpu: dict[str, Any] | None = None
        for view in views:
            itemsize = _itemsize(buffers[view.buffer])
            if (view.offset * itemsize) % 4 or storage_bytes(buffers[view.buffer]) % 4:
                raise CompileError(f"view buffer #{view.buffer} ({buffers[view.buffer]}) is not 4-byte aligned")

    @staticmethod
    def build(
        module: Operation,
        func: str = "main",
        memory_plan: bool = True,
        opt_level: int = 3,
        target: Target | None = None,
        configs: Mapping[str, Config] | None = None,
        disable: Collection[str] = (),
        after_stage: AfterStage | None = None,
        quant_layout: str = DEFAULT_LAYOUT,
    ) -> WebGPUExecutable:
        """Run the codegen stages on ``@func`` for a WebGPU ``target`` (default: ``webgpu``, the spec's minimum
        limits); see the module docstring. ``memory_plan`` and ``opt_level`` do not apply (every buffer has
        its own GPU memory; the driver optimizes WGSL). k-bit tensors are held packed in ``quant_layout``
        (one of :data:`~tensorium.lowering.webgpu_quant.SHADER_LAYOUTS`) and unpacked in the shaders."""
        target = target if target is not None else parse_target("webgpu")
        if target.kind != "webgpu":
            raise TargetError(f"the WebGPU executable compiles for 'webgpu' targets, not '{target}'")

        packed: dict[int, Packing] = {}

        def emit(lowered: Operation, target: Target) -> dict[str, Shader]:
            packed.update(pack_quantized(lowered, quant_layout))
            for kernel in functions(lowered):
                map_to_workgroups(kernel, target)
            apply_limits(lowered, target)
            return compile_shaders(lowered, target)

        if any(is_trivially_dead(op) for op in module.walk()):
            module = module.clone()  # dead constants (a torch import's i64 counters) would be buffers of the plan
            DCE().run(module)
        module = split_for_binding_size(split_for_storage_buffers(module, target, func), target, func)
        state = Codegen(module, target, func, gpu_configs(module, target, func, configs), WGSLEmitter.NATIVE, emit)
        run_codegen(state, {*disable, "schedule"}, after_stage)
        assert state.lowered is not None
        plan = plan_of(state.lowered)
        shaders: dict[str, Shader] = state.compiled
        steps = tuple(Step(s.kernel, s.inputs, s.outputs, shaders[s.kernel].grid) for s in plan.steps)
        constants = tuple(
            (b, narrowed(np.asarray(c.array), plan.buffers[b], f"constant tensor #{b}", CompileError))
            for b, c in plan.constants
        )
        for number, t in enumerate(plan.buffers):
            what = f"tensor #{number} ({t})"
            if any(isinstance(d, Sym) and d.name is None for d in t.shape):
                raise CompileError(f"{what} has an anonymous dynamic dim; the host sizes named dims only ([batch])")
            storage_type(t.element, target, what)
        return WebGPUExecutable(
            shaders, plan.buffers, plan.inputs, plan.outputs, constants, steps, target, plan.views, packed, plan.dims
        )

    @property
    def input_types(self) -> list[TensorType]:
        """The types of the plan's inputs, in @main argument order (k-bit ones as the codes they take)."""
        return [self.packed[b].type if b in self.packed else self.buffers[b] for b in self.inputs]

    def peak_bytes(self, bindings: dict[str, int] | None = None) -> int:
        """The GPU memory of the intermediate buffers (each has its own)."""
        kept = {*self.inputs, *self.outputs, *(b for b, _ in self.constants), *self._view_of}
        return sum(storage_bytes(t) for b, t in enumerate(self.buffers) if b not in kept)

    # --- running ----------------------------------------------------------------------------------
    def shapes(self, bindings: Mapping[str, int]) -> list[tuple[int, ...]]:
        """The shape of every buffer with the named dims ``bindings`` gives (the static ones as they are)."""
        return [tuple(dim_size(d, bindings) for d in t.shape) for t in self.buffers]

    def _bounded(self, bindings: Mapping[str, int]) -> dict[str, int]:
        """``bindings`` with each dim computed at run time at its bound (what its tensors are allocated with)."""
        bounded = dict(bindings)
        for dim in self.dims:
            bounded[dim.name] = dim.bound if isinstance(dim.bound, int) else bounded[dim.bound]
        return bounded

    def _has_run_time_dims(self, step: Step) -> bool:
        """Whether the shapes of ``step``'s buffers hold a dim computed at run time."""
        names = {d.name for d in self.dims}
        return any(
            isinstance(d, Sym) and d.name is not None and bool(names & {d.name, *d.factors[1]})
            for b in (*step.inputs, *step.outputs)
            for d in self.buffers[b].shape
        )

    def _check_sizes(self, shapes: list[tuple[int, ...]]) -> None:
        """At run time, what the compiler proves for static shapes: every tensor's elements fit 32-bit indices
        and its bytes the binding and buffer sizes (an InterpreterError naming the tensor and the limit)."""
        binding = self.target.limit("max_storage_buffer_binding_size")
        largest = self.target.limit("max_buffer_size")
        for number, (t, shape) in enumerate(zip(self.buffers, shapes)):
            if t.is_static:
                continue
            count = int(np.prod(shape, dtype=np.int64))
            size = count * _itemsize(t)
            for name, limit in (("max_storage_buffer_binding_size", binding), ("max_buffer_size", largest)):
                if size > limit:
                    raise InterpreterError(
                        f"tensor #{number} ({t}) of shape {shape} takes {size} bytes, over {name} = {limit}"
                    )
            problem = dims_within_binding(t, shape, binding)
            if problem is not None:
                raise InterpreterError(f"tensor #{number} ({t}) of shape {shape}: {problem}")
            if count >= INDEX_LIMIT:
                raise InterpreterError(
                    f"tensor #{number} ({t}) of shape {shape} has {count} elements; WebGPU indices are 32-bit"
                )

    def _pipelines(self, device: Any) -> list[Any]:
        """One compute pipeline per step (None for a concat that is buffer copies)."""
        pipelines: list[Any] = []
        for step in self.steps:
            shader = self.shaders[step.kernel]
            if shader.pieces is not None:
                pipelines.append(None)
                continue
            module = device.create_shader_module(code=shader.wgsl)
            pipelines.append(
                device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
            )
        return pipelines

    def _allocate(self, device: Any, pipelines: list[Any], shapes: list[tuple[int, ...]]) -> dict[str, Any]:
        """GPU buffers of ``shapes``, the constants uploaded, and each step's bind group, sizes and grid."""
        wgpu = wgpu_module()
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        sizes = [int(np.prod(shape, dtype=np.int64)) * _itemsize(t) for t, shape in zip(self.buffers, shapes)]
        gpu = [device.create_buffer(size=max(4, -(-n // 4) * 4), usage=usage) for n in sizes]
        for b, array in self.constants:
            _write(device, gpu[b], _to_storage(array, self.buffers[b]))
        launches: list[_Launch] = []
        for step, pipeline in zip(self.steps, pipelines):
            shader = self.shaders[step.kernel]
            args = (*step.inputs, *step.outputs)
            views = [self._view_of[b] for b in args if b in self._view_of]
            if pipeline is None:
                (result,) = step.outputs
                pieces = [(b, result, at, sizes[b]) for b, at in zip(step.inputs, shader.pieces or ())]
                launches.append(_Launch(step, None, None, shader.grid, views, pieces))
                continue
            bound = [gpu[args[p]] for p in shader.bindings]
            scratch = list(shader.scratch)
            for n, expression in enumerate(shader.scratch_sizes):
                if expression is not None:
                    scratch[n] = max(4, evaluate_dispatch(json.loads(expression), [shapes[b] for b in args]))
            bound += [device.create_buffer(size=-(-n // 4) * 4, usage=usage) for n in scratch]
            status = device.create_buffer(size=4, usage=usage) if shader.checks else None
            bound += [status] if status is not None else []
            uniform = None
            if shader.dims:
                values = self._dim_values(step, shapes)
                uniform = device.create_buffer(
                    size=values.nbytes, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST
                )
                _write(device, uniform, values.tobytes())
                bound.append(uniform)
            entries = [
                {"binding": n, "resource": {"buffer": b, "offset": 0, "size": b.size}} for n, b in enumerate(bound)
            ]
            group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
            grid = self._grid(step, shapes)
            dynamic = self._has_run_time_dims(step)
            launches.append(_Launch(step, pipeline, group, grid, views, None, uniform, status, dynamic))
        checked = sum(launch.status is not None for launch in launches)
        statuses = device.create_buffer(size=4 * checked, usage=usage) if checked else None
        return {"buffers": gpu, "launches": launches, "shapes": shapes, "sizes": sizes, "statuses": statuses}

    def _dim_values(self, step: Step, shapes: Sequence[tuple[int, ...]]) -> np.ndarray:
        """The ``dims`` uniform of ``step``'s kernel for buffers of ``shapes`` (whole vec4s)."""
        shader = self.shaders[step.kernel]
        args = (*step.inputs, *step.outputs)
        values = np.zeros(-(-len(shader.dims) // 4) * 4, np.int32)
        values[: len(shader.dims)] = [shapes[args[p]][axis] for p, axis in shader.dims]
        return values

    def _grid(self, step: Step, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
        """The workgroups ``step``'s kernel dispatches for buffers of ``shapes``."""
        shader = self.shaders[step.kernel]
        if shader.dispatch is None:
            return shader.grid
        args = (*step.inputs, *step.outputs)
        trips = evaluate_dispatch(json.loads(shader.dispatch), [shapes[b] for b in args])
        per_dimension = self.target.limit("max_compute_workgroups_per_dimension")
        return dynamic_grid(trips, shader.workgroup[0], per_dimension, step.kernel)

    def _run_time_dim(self, device: Any, gpu: list[Any], dim: RuntimeDim, bound: int) -> int:
        """The value of ``dim`` its step wrote (read back), checked against the ``bound`` its tensors have."""
        (value,) = _from_storage(device.queue.read_buffer(gpu[dim.size]), self.buffers[dim.size], (1,))
        if not 0 <= int(value) <= bound:
            raise InterpreterError(f"dim {dim.name} computed at run time is {int(value)}, outside [0, {bound}]")
        return int(value)

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """Run the plan on numpy ``inputs`` (in @main argument order); returns new output arrays. With dynamic
        shapes the inputs bind the named dims; GPU buffers are made again when the shapes change. Dims computed
        at run time (:attr:`dims`) end a submission each: their sizes are read back before what uses them."""
        if len(inputs) != len(self.inputs):
            raise InterpreterError(f"the plan takes {len(self.inputs)} inputs, got {len(inputs)}")
        arrays = []
        bindings: dict[str, int] = {}
        for n, (buffer, t, value) in enumerate(zip(self.inputs, self.input_types, inputs)):
            array = np.asarray(value)
            if array.dtype != storage_dtype(t.element):
                raise InterpreterError(
                    f"input #{n}: expected dtype {storage_dtype(t.element)} for {t}, got {array.dtype}"
                )
            check_value(array, t, f"input #{n}", bindings)
            held = self.packed[buffer].pack(array) if buffer in self.packed else narrowed(array, t, f"input #{n}")
            arrays.append(held)
        bounded = self._bounded(bindings)
        shapes = self.shapes(bounded)
        self._check_sizes(shapes)
        sizes_of = {d.size: d for d in self.dims}
        with self._lock:
            if self._gpu is None:
                device = device_for(self.target)
                self._gpu = {"device": device, "pipelines": self._pipelines(device), "state": None}
            device = self._gpu["device"]
            state = self._gpu["state"]
            if state is None or state["shapes"] != shapes:
                state = self._gpu["state"] = self._allocate(device, self._gpu["pipelines"], shapes)
            gpu = state["buffers"]
            for buffer, array in zip(self.inputs, arrays):
                _write(device, gpu[buffer], _to_storage(array, self.buffers[buffer]))
            for launch in state["launches"]:
                if launch.status is not None:
                    _write(device, launch.status, bytes(4))
            known = dict(bindings)
            encoder = device.create_command_encoder()
            for launch in state["launches"]:
                grid = launch.grid
                if launch.run_time_dims:
                    now = self.shapes({**bounded, **known})
                    grid = self._grid(launch.step, now)
                    if launch.uniform is not None:
                        _write(device, launch.uniform, self._dim_values(launch.step, now).tobytes())
                self._encode(encoder, state, launch, grid)
                for dim in (sizes_of[b] for b in launch.step.outputs if b in sizes_of):
                    device.queue.submit([encoder.finish()])
                    known[dim.name] = self._run_time_dim(device, gpu, dim, bounded[dim.name])
                    encoder = device.create_command_encoder()
            checked = [launch for launch in state["launches"] if launch.status is not None]
            for n, launch in enumerate(checked):
                encoder.copy_buffer_to_buffer(launch.status, 0, state["statuses"], 4 * n, 4)
            device.queue.submit([encoder.finish()])
            self.last_bindings = dict(known)
            if checked:
                self._raise_failed_checks(checked, device.queue.read_buffer(state["statuses"]))
            final = self.shapes({**bounded, **known})
            return [_from_storage(device.queue.read_buffer(gpu[b]), self.buffers[b], final[b]) for b in self.outputs]

    def _raise_failed_checks(self, checked: list[_Launch], statuses: Any) -> None:
        """InterpreterError with the message of the first kernel of ``checked`` (in launch order) whose run-time
        check failed, from ``statuses``: their status words, copied side by side after the run."""
        for launch, failed in zip(checked, np.frombuffer(statuses, np.uint32).tolist()):
            if failed:
                checks = self.shaders[launch.step.kernel].checks
                message = checks[failed - 1] if failed <= len(checks) else f"check #{failed}"
                raise InterpreterError(f"kernel @{launch.step.kernel} failed: {message}")

    def _encode(self, encoder: Any, state: dict[str, Any], launch: _Launch, grid: tuple[int, ...] | None) -> None:
        """Record ``launch``: the copies of its views, then its pieces' copies or its dispatch on ``grid``."""
        gpu = state["buffers"]
        for view in launch.views:
            size = -(-state["sizes"][view.buffer] // 4) * 4  # this run's bytes (dynamic views: a reshape's)
            offset = view.offset * _itemsize(self.buffers[view.buffer])
            if size:
                encoder.copy_buffer_to_buffer(gpu[view.source], offset, gpu[view.buffer], 0, size)
        if launch.pieces is not None:
            for source, result, at, size in launch.pieces:
                encoder.copy_buffer_to_buffer(gpu[source], 0, gpu[result], at, size)
            return
        if grid is None or 0 in grid:
            return  # an empty dynamic dispatch
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(launch.pipeline)
        compute.set_bind_group(0, launch.group)
        compute.dispatch_workgroups(*grid)
        compute.end()

    # --- files ------------------------------------------------------------------------------------
    def to_files(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``plan.json``, ``weights.bin`` and ``kernels/*.wgsl`` (the artifact of the JS runtime too)."""
        root = Path(folder)
        (root / KERNEL_FOLDER).mkdir(parents=True, exist_ok=True)
        weights = bytearray()
        constants = []
        for b, array in self.constants:
            data = _to_storage(np.broadcast_to(array, self.buffers[b].static_shape), self.buffers[b])
            constants.append({"buffer": b, "offset": len(weights), "bytes": len(data)})
            weights += data + bytes(-len(data) % 4)
        (root / WEIGHTS_FILE).write_bytes(bytes(weights))
        kernels = {}
        for name, shader in self.shaders.items():
            file = f"{KERNEL_FOLDER}/{name}.wgsl"
            (root / file).write_text(shader.wgsl, encoding="utf-8")
            kernels[name] = {"file": file, **shader.to_json()}
        plan = {
            "format": EXECUTABLE_FORMAT,
            "format_version": EXECUTABLE_VERSION,
            "tensorium_version": __version__,
            "target": self.target.to_json(),
            "buffers": [_buffer_json(t, self.packed.get(b)) for b, t in enumerate(self.buffers)],
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "constants": constants,
            "weights": WEIGHTS_FILE,
            "views": [[v.buffer, v.source, v.offset] for v in self.views],
            "dims": [list(d.attribute()) for d in self.dims],
            "steps": [
                {
                    "kernel": s.kernel,
                    "args": [*s.inputs, *s.outputs],
                    "inputs": len(s.inputs),
                    "grid": list(s.grid or ()),
                }
                for s in self.steps
            ],
            "kernels": kernels,
        }
        (root / PLAN_FILE).write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
        return root

    @staticmethod
    def from_files(folder: str | os.PathLike[str]) -> WebGPUExecutable:
        """Load what :meth:`to_files` wrote, without compiling; ExecutableError names the file at fault."""
        what = "a Tensorium WebGPU executable"
        return load_stored(folder, PLAN_FILE, EXECUTABLE_FORMAT, EXECUTABLE_VERSION, what, _load)


def _buffer_json(t: TensorType, packing: Packing | None) -> dict[str, object]:
    data: dict[str, object] = {
        "type": str(t),
        "dtype": "bool" if _is_bool(t) else str(storage_dtype(t.element)),
        "shape": [d if isinstance(d, int) else str(d.name) for d in t.shape],
        "bytes": storage_bytes(t) if t.is_static else _itemsize(t),
    }
    if packing is not None:
        data["packed"] = packing.to_json()
    return data


def _load(root: Path, meta: dict[str, Any]) -> WebGPUExecutable:
    target = Target.from_json(meta["target"])
    buffers = []
    packed = {}
    for number, entry in enumerate(meta["buffers"]):
        t = parse_type_text(entry["type"])
        if not isinstance(t, TensorType):
            raise ExecutableError(f"{root / PLAN_FILE}: buffer type {entry['type']} is not a tensor")
        buffers.append(t)
        if "packed" in entry:
            codes = parse_type_text(entry["packed"]["type"])
            if not isinstance(codes, TensorType):
                raise ExecutableError(f"{root / PLAN_FILE}: packed type {entry['packed']['type']} is not a tensor")
            packed[number] = Packing(codes, str(entry["packed"]["layout"]), int(entry["packed"]["lanes"]), t)
    weights = (root / meta["weights"]).read_bytes()
    constants = []
    for entry in meta["constants"]:
        t = buffers[int(entry["buffer"])]
        data = weights[int(entry["offset"]) : int(entry["offset"]) + int(entry["bytes"])]
        constants.append((int(entry["buffer"]), _from_storage(data, t)))
    shaders = {}
    for name, k in meta["kernels"].items():
        wgsl = (root / k["file"]).read_text(encoding="utf-8")
        shaders[name] = Shader(
            name,
            wgsl,
            tuple(int(b) for b in k["bindings"]),
            frozenset(int(b) for b in k["written"]),
            tuple(int(n) for n in k["workgroup"]),  # type: ignore[arg-type]
            tuple(int(n) for n in k["grid"]),  # type: ignore[arg-type]
            tuple(int(n) for n in k.get("scratch", ())),
            tuple(int(n) for n in k["pieces"]) if "pieces" in k else None,
            tuple((int(p), int(a)) for p, a in k.get("dims", ())),
            json.dumps(k["dispatch"]) if "dispatch" in k else None,
            tuple(json.dumps(e) if e is not None else None for e in k.get("scratch_sizes", ())),
            tuple(str(m) for m in k.get("checks", ())),
        )
    steps = []
    for s in meta["steps"]:
        shader = shaders[s["kernel"]]
        args = tuple(int(b) for b in s["args"])
        count = int(s["inputs"])
        if any(not 0 <= b < len(buffers) for b in args) or any(p >= len(args) for p in shader.bindings):
            raise ExecutableError(f"{root / PLAN_FILE}: step '{s['kernel']}' does not match the buffers")
        steps.append(Step(str(s["kernel"]), args[:count], args[count:], tuple(int(n) for n in s["grid"])))
    views = tuple(View(int(b), int(src), int(o)) for b, src, o in meta["views"])
    inputs = tuple(int(b) for b in meta["inputs"])
    outputs = tuple(int(b) for b in meta["outputs"])
    dims = tuple(RuntimeDim.from_attribute(entry) for entry in meta.get("dims", ()))
    if any(not 0 <= d.size < len(buffers) for d in dims):
        raise ExecutableError(f"{root / PLAN_FILE}: a dim computed at run time names no buffer")
    return WebGPUExecutable(
        shaders, tuple(buffers), inputs, outputs, tuple(constants), tuple(steps), target, views, packed, dims
    )


if TYPE_CHECKING:
    _KIND: ExecutableKind = WebGPUExecutable  # the class side of the executable protocol, checked by mypy
