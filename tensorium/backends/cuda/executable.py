"""The CUDA executable: a graph module lowered to GPU-scheduled loop kernels, compiled to PTX, run through the
CUDA driver API.

:meth:`CudaExecutable.build` runs the codegen stages for a CUDA target (lower; the GPU schedules of
:mod:`tensorium.lowering.gpu_schedule`; decompose the math a GPU lacks; emit PTX through LLVM's NVPTX
target) and, where ptxas is installed, assembles the PTX to cubin for the target's ``sm_XX`` (so invalid PTX
is caught when compiling, with or without a GPU). Compiling needs no GPU; ``run`` does: it loads the PTX
into GPU 0 (:mod:`.driver`), places the intermediate buffers in device memory by the memory plan (a slot
per group of buffers whose lifetimes do not overlap), copies the inputs and constants in, launches each
kernel with its grid and block sizes and copies the outputs back. Without a GPU, a driver or cuda-bindings,
``run`` raises :class:`~tensorium.backends.cuda.driver.CudaUnavailable` saying so, and ``to_files`` (what
``CompiledModel.save`` writes) still works: ``kernels.ptx``, ``kernels.cubin`` when ptxas ran, ``plan.json``
and the loop IR.
"""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CompileError, InterpreterError
from ...ir.core import Operation
from ...ir.parser import parse_type_text
from ...ir.printer import print_module
from ...ir.types import Sym, TensorType, dim_size, storage_dtype
from ...lowering import Step, View, plan_of
from ...lowering.codegen import AfterStage, Codegen, run_codegen
from ...lowering.space import Config
from ...runtime.executable import Executable, ExecutableError, load_stored
from ...runtime.memory import MemoryPlan, nbytes
from ...targets import Target, TargetError, parse_target
from ...targets.cuda import device_arch
from ...version import __version__
from ..interp import check_value
from .driver import CudaUnavailable, Device
from .emitter import Launch
from .ptx import NATIVE, PtxModule, assemble, compile_ptx, ptxas_path

EXECUTABLE_FORMAT = "tensorium-cuda-executable"
EXECUTABLE_VERSION = 1
PLAN_FILE = "plan.json"
PTX_FILE = "kernels.ptx"
CUBIN_FILE = "kernels.cubin"
ALIGNMENT = 16
"""Bytes every buffer a kernel gets is aligned to (device allocations are; views inside them are made so)."""
LOOP_IR_FILE = "kernels.mlir"


class CudaExecutable(Executable):
    """A lowered module's launch plan over PTX kernels; ``run(arrays)`` runs it on GPU 0.

    The CUDA target's :class:`~tensorium.runtime.executable.Executable` and, by its static ``build`` and
    ``from_files``, its :class:`~tensorium.runtime.executable.ExecutableKind`."""

    def __init__(
        self,
        ptx: PtxModule,
        plan_buffers: tuple[TensorType, ...],
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        constants: tuple[tuple[int, np.ndarray], ...],
        steps: tuple[Step, ...],
        loop_ir: str,
        target: Target,
        views: tuple[View, ...] = (),
        memory_plan: bool = True,
        cubin: bytes | None = None,
    ) -> None:
        self.ptx = ptx
        self.buffers = plan_buffers
        self.inputs = inputs
        self.outputs = outputs
        self.constants = constants
        self.steps = steps
        self.views = views
        self.loop_ir = loop_ir
        self.target = target
        self.memory_plan = memory_plan
        self.cubin = cubin
        self.memory = MemoryPlan.build(plan_buffers, steps, outputs, views, reuse=memory_plan)
        self.last_bindings: dict[str, int] | None = None
        self._device: Device | None = None

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
    ) -> CudaExecutable:
        """Run the codegen stages on ``@func`` for a CUDA ``target`` (default: ``cuda``, the device's
        architecture or sm_80) and assemble the PTX with ptxas where it is installed (CompileError with
        ptxas's messages when it rejects the PTX)."""
        target = target if target is not None else parse_target("cuda")
        if target.kind != "cuda":
            raise TargetError(f"the CUDA backend cannot compile for target '{target}'")

        def emit(lowered: Operation, target: Target) -> PtxModule:
            return compile_ptx(lowered, target, opt_level)

        state = Codegen(module, target, func, configs or {}, NATIVE, emit)
        run_codegen(state, disable, after_stage)
        assert state.lowered is not None
        compiled: PtxModule = state.compiled
        cubin = assemble(compiled.ptx, target.cpu) if ptxas_path() is not None else None
        plan = plan_of(state.lowered)
        if plan.dims:
            names = ", ".join(f"[{d.name}]" for d in plan.dims)
            raise CompileError(f"the CUDA backend does not run ops whose sizes are computed at run time ({names})")
        steps = tuple(Step(s.kernel, s.inputs, s.outputs, compiled.launches[s.kernel].grid) for s in plan.steps)
        constants = tuple((b, np.ascontiguousarray(c.array)) for b, c in plan.constants)
        return CudaExecutable(
            compiled,
            plan.buffers,
            plan.inputs,
            plan.outputs,
            constants,
            steps,
            print_module(state.lowered),
            target,
            plan.views,
            memory_plan,
            cubin,
        )

    @property
    def input_types(self) -> list[TensorType]:
        """The types of the plan's inputs, in @main argument order."""
        return [self.buffers[b] for b in self.inputs]

    def peak_bytes(self, bindings: dict[str, int] | None = None) -> int:
        """The intermediate device memory one run allocates (outputs excluded) for the named dims ``bindings``."""
        return sum(self.memory.slot_bytes(self.buffers, bindings or {}))

    def device(self) -> Device:
        """GPU 0 with this executable's PTX loaded (CudaUnavailable, saying what is missing, without one)."""
        if self._device is None:
            self._check_architecture()
            self._device = Device(self.ptx.ptx, list(self.ptx.launches))
        return self._device

    def _check_architecture(self) -> None:
        """CudaUnavailable, naming both, when GPU 0 is older than this executable's architecture (PTX runs on
        its own architecture and later ones)."""
        here = device_arch()
        if here is not None and _arch_number(here) < _arch_number(self.target.cpu):
            raise CudaUnavailable(
                f"this executable was compiled for {self.target.cpu}, but GPU 0 is {here}; compile for 'cuda' "
                f"(the device's architecture) or 'cuda:{here}'"
            )

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """Run the plan on GPU 0 with numpy ``inputs`` (in @main argument order); returns new output arrays."""
        arrays, bindings = self._bind(inputs)
        gpu = self.device()
        owned: list[int] = []
        try:
            pointers = self._upload(gpu, arrays, bindings, owned)
            self._launches(gpu, pointers, bindings)()
            results = [
                np.empty(_shape(self.buffers[b], bindings), storage_dtype(self.buffers[b].element))
                for b in self.outputs
            ]
            for b, out in zip(self.outputs, results):
                gpu.download(out, pointers[b])
            gpu.synchronize()
        finally:
            for pointer in owned:
                gpu.free(pointer)
        return results

    def time_kernels(self, inputs: Sequence[Any], repeat: int = 10) -> float:
        """Seconds one run of the plan's kernels takes on the GPU, inputs already in device memory (the best
        of ``repeat`` runs, timed with CUDA events after one warm-up run): what benchmarks compare."""
        arrays, bindings = self._bind(inputs)
        gpu = self.device()
        owned: list[int] = []
        try:
            once = self._launches(gpu, self._upload(gpu, arrays, bindings, owned), bindings)
            gpu.elapsed(once)
            return min(gpu.elapsed(once) for _ in range(max(1, repeat)))
        finally:
            gpu.synchronize()
            for pointer in owned:
                gpu.free(pointer)

    def _bind(self, inputs: Sequence[Any]) -> tuple[dict[int, np.ndarray], dict[str, int]]:
        """The host arrays of the inputs and constants by buffer, and the named dims the inputs bind."""
        if len(inputs) != len(self.inputs):
            raise InterpreterError(f"the plan takes {len(self.inputs)} inputs, got {len(inputs)}")
        bindings: dict[str, int] = {}
        arrays: dict[int, np.ndarray] = dict(self.constants)
        for n, (buffer, value) in enumerate(zip(self.inputs, inputs)):
            t = self.buffers[buffer]
            array = np.asarray(value)
            if array.dtype != storage_dtype(t.element):
                raise InterpreterError(
                    f"input #{n}: expected dtype {storage_dtype(t.element)} for {t}, got {array.dtype}"
                )
            check_value(array, t, f"input #{n}", bindings)
            arrays[buffer] = array
        self.last_bindings = bindings
        return arrays, bindings

    def _upload(
        self, gpu: Device, arrays: dict[int, np.ndarray], bindings: dict[str, int], owned: list[int]
    ) -> dict[int, int]:
        """Every buffer placed in device memory (:meth:`_place`) with ``arrays`` copied in; their addresses."""
        pointers = self._place(gpu, arrays, bindings, owned)
        for b, array in arrays.items():
            gpu.upload(pointers[b], array)
        return pointers

    def _launches(self, gpu: Device, pointers: dict[int, int], bindings: dict[str, int]) -> Callable[[], None]:
        """A function that enqueues every step's kernel on the stream."""
        launches = [
            (step.kernel, self.ptx.launches[step.kernel], self._arguments(step, pointers, bindings))
            for step in self.steps
        ]
        misaligned = {v.buffer: v for v in self.misaligned_views()}
        copies = [
            [
                (pointers[b], pointers[misaligned[b].source] + self._view_bytes(misaligned[b]), nbytes(t, bindings))
                for b in dict.fromkeys(step.inputs)
                if b in misaligned
                for t in (self.buffers[b],)
            ]
            for step in self.steps
        ]

        def once() -> None:
            for (name, launch, args), before in zip(launches, copies):
                for destination, source, size in before:
                    gpu.copy(destination, source, size)
                gpu.launch(name, launch.grid, launch.block, args)

        return once

    def _place(
        self, gpu: Device, arrays: dict[int, np.ndarray], bindings: dict[str, int], owned: list[int]
    ) -> dict[int, int]:
        """Device addresses of every buffer: the memory plan's slots, fresh memory for the rest (inputs, constants
        and outputs), views inside their source."""
        slots = [gpu.alloc(n) for n in self.memory.slot_bytes(self.buffers, bindings)]
        owned += slots
        pointers: dict[int, int] = {}
        viewed = {v.buffer for v in self.views}
        for b, t in enumerate(self.buffers):
            if b in viewed:
                continue
            slot = self.memory.slots[b] if b < len(self.memory.slots) else None
            if slot is not None and b not in arrays and b not in self.outputs:
                pointers[b] = slots[slot]
            else:
                pointers[b] = gpu.alloc(nbytes(t, bindings))
                owned.append(pointers[b])
        misaligned = {v.buffer for v in self.misaligned_views()}
        for view in self.views:
            if view.buffer in misaligned:  # its own memory, copied from the source before each step reading it
                pointers[view.buffer] = gpu.alloc(nbytes(self.buffers[view.buffer], bindings))
                owned.append(pointers[view.buffer])
            else:
                pointers[view.buffer] = pointers[view.source] + self._view_bytes(view)
        return pointers

    def _view_bytes(self, view: View) -> int:
        return view.offset * storage_dtype(self.buffers[view.buffer].element).itemsize

    def misaligned_views(self) -> list[View]:
        """The views that would start at an address that is not a multiple of :data:`ALIGNMENT` bytes: each gets
        memory of its own, copied from its source before every step that reads it (kernels rely on buffers
        starting so aligned: the NVPTX emitter's vector loads)."""
        return [v for v in self.views if self._view_bytes(v) % ALIGNMENT]

    def _arguments(self, step: Step, pointers: dict[int, int], bindings: dict[str, int]) -> list[ctypes._SimpleCData]:
        """A kernel's parameters: each buffer's address then the sizes of its symbolic dims."""
        args: list[ctypes._SimpleCData] = []
        for b in (*step.inputs, *step.outputs):
            args.append(ctypes.c_uint64(pointers[b]))
            args += [
                ctypes.c_int64(n)
                for n, d in zip(_shape(self.buffers[b], bindings), self.buffers[b].shape)
                if isinstance(d, Sym)
            ]
        return args

    # --- files -------------------------------------------------------------------------------------
    def to_files(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``kernels.ptx``, ``kernels.cubin`` (when ptxas ran), ``plan.json`` and ``kernels.mlir``."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        (root / PTX_FILE).write_text(self.ptx.ptx, encoding="utf-8")
        if self.cubin is not None:
            (root / CUBIN_FILE).write_bytes(self.cubin)
        (root / LOOP_IR_FILE).write_text(self.loop_ir, encoding="utf-8")
        plan = {
            "format": EXECUTABLE_FORMAT,
            "format_version": EXECUTABLE_VERSION,
            "tensorium_version": __version__,
            "target": self.target.to_json(),
            "ptx": PTX_FILE,
            "cubin": CUBIN_FILE if self.cubin is not None else None,
            "loop_ir": LOOP_IR_FILE,
            "buffers": [str(t) for t in self.buffers],
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "constants": [[b, str(a.dtype), list(a.shape), a.tobytes().hex()] for b, a in self.constants],
            "steps": [s.attribute() for s in self.steps],
            "views": [[v.buffer, v.source, v.offset] for v in self.views],
            "memory_plan": self.memory_plan,
            "launches": {name: launch.to_json() for name, launch in self.ptx.launches.items()},
        }
        (root / PLAN_FILE).write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
        return root

    @staticmethod
    def from_files(folder: str | os.PathLike[str]) -> CudaExecutable:
        """Load what :meth:`to_files` wrote, without compiling; ExecutableError names the file at fault."""
        return load_stored(
            folder, PLAN_FILE, EXECUTABLE_FORMAT, EXECUTABLE_VERSION, "a Tensorium CUDA executable", _load
        )


def _arch_number(arch: str) -> int:
    return int(arch.removeprefix("sm_"))


def _shape(t: TensorType, bindings: dict[str, int]) -> tuple[int, ...]:
    return tuple(dim_size(d, bindings) for d in t.shape)


def _host_array(t: TensorType, bindings: dict[str, int]) -> np.ndarray:
    return np.empty(_shape(t, bindings), storage_dtype(t.element))


def _tensor(text: str) -> TensorType:
    t = parse_type_text(text)
    if not isinstance(t, TensorType):
        raise ExecutableError(f"buffer type {text} is not a tensor")
    return t


def _inside(root: Path, name: str) -> Path:
    path = root / name
    if path.resolve().parent != root.resolve():
        raise ExecutableError(f"{root / PLAN_FILE}: file '{name}' must lie in {root}")
    return path


def _load(root: Path, meta: dict[str, Any]) -> CudaExecutable:
    target = Target.from_json(meta["target"])
    if target.kind != "cuda":
        raise ExecutableError(f"{root / PLAN_FILE}: compiled for '{target}', not a CUDA target")
    launches = {name: Launch.from_json(data) for name, data in meta["launches"].items()}
    ptx = PtxModule(_inside(root, meta["ptx"]).read_text(encoding="utf-8"), target.cpu, launches=launches)
    cubin = _inside(root, meta["cubin"]).read_bytes() if meta.get("cubin") else None
    buffers = tuple(_tensor(t) for t in meta["buffers"])
    constants = tuple(
        (int(b), np.frombuffer(bytes.fromhex(data), np.dtype(dtype)).reshape(shape).copy())
        for b, dtype, shape, data in meta["constants"]
    )
    steps = tuple(Step.from_attribute(s) for s in meta["steps"])
    missing = [s.kernel for s in steps if s.kernel not in launches]
    if missing:
        raise CompileError(f"{root / PLAN_FILE}: no launch sizes for kernel '{missing[0]}'")
    return CudaExecutable(
        ptx,
        buffers,
        tuple(int(b) for b in meta["inputs"]),
        tuple(int(b) for b in meta["outputs"]),
        constants,
        steps,
        _inside(root, meta["loop_ir"]).read_text(encoding="utf-8"),
        target,
        tuple(View(int(b), int(s), int(o)) for b, s, o in meta["views"]),
        bool(meta["memory_plan"]),
        cubin,
    )
