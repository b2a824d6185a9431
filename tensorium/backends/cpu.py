"""The CPU executable: a graph module lowered to loop kernels, compiled by LLVM, run by a host launch plan.

:meth:`CpuExecutable.build` runs the codegen stages (:mod:`tensorium.lowering.codegen`: lower ``@main``
to loop kernels, apply the default schedules, decompose math LLVM lacks, compile every kernel once with
:mod:`tensorium.backends.llvm`) and plans the memory of the intermediate
buffers: a buffer takes a slot freed by a buffer whose last use came before it, so buffers whose
lifetimes do not overlap share memory; a view (a reshape, say) has no memory of its own and keeps its
source alive. ``run`` binds inputs and constants without copying, allocates the slots and the outputs
with numpy (sizes from the named dims of the inputs) and calls the kernels in order; the slots' memory is
kept for the next run with the same dims. A plan whose steps compute no dims runs through a launch worked
out on its first run with the inputs' shapes (every pointer but the inputs' and the new outputs' known,
inputs of the same dtypes and shapes checked in a few comparisons), its kernels in one foreign call
(:mod:`tensorium.backends.llvm.launcher`), so a call costs little Python beyond its kernels.
:meth:`CpuExecutable.to_files` keeps the object code, the plan (JSON) and the loop IR;
:meth:`CpuExecutable.from_files` loads that object code into the JIT, with no LLVM code generation, after
checking that it was built by this Tensorium version for a CPU with features this host has.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from llvmlite import binding as llvm

from ..errors import CompileError, InterpreterError, TensoriumError
from ..ir.core import Operation
from ..ir.parser import parse_type_text
from ..ir.printer import print_module
from ..ir.storage import aligned, aligned_buffer, aligned_empty
from ..ir.types import BufferType, Sym, TensorType, Type, dim_known, dim_size, storage_dtype
from ..lowering import Step, View, plan_of
from ..lowering.codegen import AfterStage, Codegen, run_codegen
from ..lowering.plan import LaunchPlan, RuntimeDim, run_steps
from ..lowering.space import Config
from ..runtime.executable import Executable, ExecutableError, ExecutableKind, read_plan_file
from ..runtime.memory import MemoryPlan, nbytes
from ..targets import Target, TargetError, host_target
from ..version import __version__
from .interp import check_value
from .llvm import CompiledKernels, KernelInfo, LLVMEmitter, compile_module, host_target_machine
from .llvm.jit import DEFAULT_OPT_LEVEL
from .llvm.launcher import decode_failure, program_runner
from .llvm.objects import load_objects
from .llvm.runtime import register_runtime, thread_count

__all__ = ["EXECUTABLE_FORMAT", "CpuExecutable", "ExecutableError", "MemoryPlan"]

EXECUTABLE_FORMAT = "tensorium-cpu-executable"
EXECUTABLE_VERSION = 3
PLAN_FILE = "plan.json"
OBJECT_FILE = "kernels.o"
LOOP_IR_FILE = "kernels.mlir"


# --- the executable --------------------------------------------------------------------------------
class CpuExecutable(Executable):
    """A lowered module's launch plan over LLVM-compiled kernels; ``run(arrays)`` gives the outputs.

    The CPU's :class:`~tensorium.runtime.executable.Executable` (and, by its static ``build`` and
    ``from_files``, its :class:`~tensorium.runtime.executable.ExecutableKind`)."""

    def __init__(
        self,
        kernels: CompiledKernels,
        buffers: tuple[TensorType, ...],
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        constants: tuple[tuple[int, np.ndarray], ...],
        steps: tuple[Step, ...],
        loop_ir: str | Operation,
        target: Target,
        views: tuple[View, ...] = (),
        memory_plan: bool = True,
        dims: tuple[RuntimeDim, ...] = (),
    ) -> None:
        self.kernels = kernels
        self.buffers = buffers
        self.inputs = inputs
        self.outputs = outputs
        self.constants = constants
        self.steps = steps
        self.views = views
        self.dims = dims
        self._loop_ir = loop_ir
        self.target = target
        self.memory_plan = memory_plan
        inplace = [kernels.kernels[s.kernel].inplace for s in steps]
        self.memory = MemoryPlan.build(
            buffers, steps, outputs, views, reuse=memory_plan, inplace=inplace, runtime=[d.name for d in dims]
        )
        self.last_bindings: dict[str, int] | None = None
        """The named dims of the most recent run (None before the first)."""
        self.poison = False
        """Fill every fresh buffer with a poison pattern before each run (NaN floats, all-ones integers), so
        elements no kernel writes show in the outputs instead of passing for results left by an earlier
        run. The fuzzer's oracle sets it; it costs one pass over the memory per run."""
        self.kernel_by_kernel = False
        """Run each kernel as a foreign call of its own through ``kernels.run`` (by name), not the whole plan in
        one native call: slower per run, but a profiler can time each kernel by wrapping ``kernels.run``."""
        _check_sizable(buffers, inputs, steps, views, dims)
        self._static = all(t.is_static for t in buffers)
        self._arena_lock = threading.Lock()
        self._arena_key: tuple[tuple[str, int], ...] | None = None
        self._arena_pool: list[_Arenas] = []
        self._calls: list[_Call] | None = None
        self._launch: _Launch | None = None
        self._launches: dict[tuple[tuple[int, ...], ...], _Launch] = {}

    @staticmethod
    def build(
        module: Operation,
        func: str = "main",
        memory_plan: bool = True,
        opt_level: int = DEFAULT_OPT_LEVEL,
        target: Target | None = None,
        configs: Mapping[str, Config] | None = None,
        disable: Collection[str] = (),
        after_stage: AfterStage | None = None,
    ) -> CpuExecutable:
        """Run the codegen stages (:mod:`tensorium.lowering.codegen`: lower, schedule, decompose, emit) on
        ``@func`` for a CPU ``target`` (default: this machine), kernels at the points ``configs`` gives by
        kernel key (else the target's defaults).

        ``memory_plan=False`` gives every intermediate buffer its own memory; ``opt_level`` is LLVM's (0..3, default
        2; the fuzzer compiles at 1 for speed); ``disable`` leaves the optional stages ``schedule`` and
        ``decompose`` out; ``after_stage(name, state)`` sees each stage's result. Raises LoweringError
        (naming the op and its location) for an op the lowering refuses.
        """
        target = target if target is not None else host_target()

        def emit(lowered: Operation, target: Target) -> CompiledKernels:
            return compile_module(lowered, opt_level, target)

        state = Codegen(module, target, func, configs or {}, LLVMEmitter.NATIVE, emit)
        run_codegen(state, disable, after_stage)
        assert state.lowered is not None
        return CpuExecutable._of(state.lowered, state.compiled, memory_plan, target)

    @staticmethod
    def from_lowered(
        lowered: Operation, memory_plan: bool = True, opt_level: int = DEFAULT_OPT_LEVEL, target: Target | None = None
    ) -> CpuExecutable:
        """Compile a module already lowered to loop kernels with its launch plan (what ``lower-to-loops``
        leaves), with whatever schedules its kernels carry (the ``emit`` stage alone). The executable keeps
        ``lowered`` for its ``loop_ir``: do not change it afterwards."""
        target = target if target is not None else host_target()
        return CpuExecutable._of(lowered, compile_module(lowered, opt_level, target), memory_plan, target)

    @staticmethod
    def _of(lowered: Operation, kernels: CompiledKernels, memory_plan: bool, target: Target) -> CpuExecutable:
        plan = plan_of(lowered)
        constants = tuple((b, aligned(c.array)) for b, c in plan.constants)
        return CpuExecutable(
            kernels,
            plan.buffers,
            plan.inputs,
            plan.outputs,
            constants,
            plan.steps,
            lowered,
            target,
            plan.views,
            memory_plan,
            plan.dims,
        )

    @property
    def loop_ir(self) -> str:
        """The kernels' loop-level IR as text (printed when first asked for: most runs never need it)."""
        if not isinstance(self._loop_ir, str):
            self._loop_ir = print_module(self._loop_ir)
        return self._loop_ir

    @property
    def input_types(self) -> list[TensorType]:
        """The types of the plan's inputs, in @main argument order."""
        return [self.buffers[b] for b in self.inputs]

    def peak_bytes(self, bindings: dict[str, int] | None = None) -> int:
        """The intermediate memory one run allocates (outputs excluded) for the named dims ``bindings``."""
        return sum(self.memory.slot_bytes(self.buffers, bindings or {}))

    def run(self, inputs: Sequence[Any], num_threads: int | None = None) -> list[np.ndarray]:
        """Run the plan on numpy ``inputs`` (in @main argument order); returns new output arrays."""
        if len(inputs) != len(self.inputs):
            raise InterpreterError(f"the plan takes {len(self.inputs)} inputs, got {len(inputs)}")
        if not self.dims and not self.kernel_by_kernel:
            return self._run_launch(inputs, num_threads)
        values, bindings = self._bind_inputs(inputs)
        self.last_bindings = bindings
        key, arenas = self._take_arenas(bindings)
        try:

            def launch(step: Step, arrays: list[np.ndarray]) -> None:
                self.kernels.run(step.kernel, *arrays, num_threads=num_threads)

            plan = LaunchPlan(self.buffers, self.inputs, self.outputs, (), self.steps, self.views, self.dims)
            run_steps(plan, values, bindings, lambda b, dims: self._allocate(b, arenas.arrays, dims), launch)
            constant = {b for b, _ in self.constants}
            return [values[b].copy() if b in constant else values[b] for b in self.outputs]
        finally:
            self._give_back_arenas(key, arenas)

    def _bind_inputs(self, inputs: Sequence[Any]) -> tuple[dict[int, np.ndarray], dict[str, int]]:
        """The constants and the checked ``inputs`` (C-ordered, copied only when they are not) by buffer, and
        the named dims the inputs bind; InterpreterError naming the input for a wrong dtype or shape."""
        values: dict[int, np.ndarray] = dict(self.constants)
        bindings: dict[str, int] = {}
        for n, (buffer, value) in enumerate(zip(self.inputs, inputs)):
            t = self.buffers[buffer]
            array = np.asarray(value)
            if array.dtype != storage_dtype(t.element):
                raise InterpreterError(
                    f"input #{n}: expected dtype {storage_dtype(t.element)} for {t}, got {array.dtype}"
                )
            check_value(array, t, f"input #{n}", bindings)
            values[buffer] = _c_array(array)
        return values, bindings

    def _run_launch(self, inputs: Sequence[Any], num_threads: int | None) -> list[np.ndarray]:
        """``run`` through the launch of the inputs' shapes (:class:`_Launch`): inputs that are C-ordered numpy
        arrays of the dtypes and shapes of an earlier run are checked in a few comparisons; others go through
        the full checks (and a copy when they are not C-ordered), and new dims make a new launch."""
        threads = thread_count() if num_threads is None else num_threads
        if threads < 1:
            raise InterpreterError(f"num_threads must be at least 1, got {threads}")
        launch = self._launch if self._static else self._launches.get(_shapes(inputs))
        if launch is not None and launch.ready(inputs):
            arrays = inputs
        else:
            values, bindings = self._bind_inputs(inputs)
            arrays = [values[b] for b in self.inputs]
            launch = self._launch_of(arrays, bindings)
        self.last_bindings = dict(launch.bindings)
        key, arenas = self._take_arenas(launch.bindings)
        try:
            if arenas.launch is not launch:  # arenas go by named dims; an anonymous input dim can differ
                arenas.launch, arenas.program = launch, launch.arena_program(arenas.arrays)
            assert arenas.program is not None
            return launch.run(arrays, arenas.program, threads, self.kernels.raise_status, self.poison)
        finally:
            self._give_back_arenas(key, arenas)

    def _launch_of(self, arrays: list[np.ndarray], bindings: dict[str, int]) -> _Launch:
        """The launch for checked inputs ``arrays`` binding the named dims ``bindings``: made on the first run
        with their shapes (the target checked on the first of all); the latest :data:`LAUNCHES_KEPT` are kept."""
        shapes = _shapes(arrays)
        launch = self._launch if self._static else self._launches.get(shapes)
        if launch is not None:
            return launch
        if self._calls is None:
            self.target.check_runs_here("this executable")
            self._calls = [self._call(step) for step in self.steps]
        launch = _Launch(self, self._calls, dict(zip(self.inputs, arrays)), bindings)
        if self._static:
            self._launch = launch
            return launch
        with self._arena_lock:
            while len(self._launches) >= LAUNCHES_KEPT:
                self._launches.pop(next(iter(self._launches)))  # the oldest
            self._launches[shapes] = launch
        return launch

    def _call(self, step: Step) -> _Call:
        """The kernel call of ``step``: the kernel's address, the buffers it takes, its name and argument types."""
        function = self.kernels.function(step.kernel)
        address = int(ctypes.cast(function, ctypes.c_void_p).value or 0)
        types = self.kernels.kernels[step.kernel].arg_types
        return address, (*step.inputs, *step.outputs), step.kernel, types

    def _take_arenas(self, bindings: dict[str, int]) -> tuple[tuple[tuple[str, int], ...], _Arenas]:
        """The memory of the plan's slots for the named dims ``bindings``: kept from an earlier run when one
        with the same dims has finished (fresh allocations of large arenas page-fault on every call), else new.
        """
        key = tuple(sorted(bindings.items()))
        with self._arena_lock:
            if self._arena_key == key and self._arena_pool:
                arenas = self._arena_pool.pop()
                if self.poison:
                    for arena in arenas.arrays:
                        arena.fill(0xFF)
                return key, arenas
        make = _poisoned if self.poison else aligned_empty
        return key, _Arenas([make(n, np.uint8) for n in self.memory.slot_bytes(self.buffers, bindings)])

    def _give_back_arenas(self, key: tuple[tuple[str, int], ...], arenas: _Arenas) -> None:
        """Keep ``arenas`` for the next run; only the latest dims' arenas are kept, one set per concurrent run."""
        with self._arena_lock:
            if self._arena_key != key:
                self._arena_key, self._arena_pool = key, []
            self._arena_pool.append(arenas)

    def _allocate(self, buffer: int, arenas: list[np.ndarray], bindings: Mapping[str, int]) -> np.ndarray:
        t = self.buffers[buffer]
        shape = tuple(dim_size(d, bindings) for d in t.shape)
        dtype = storage_dtype(t.element)
        slot = self.memory.slots[buffer]
        if slot is None:
            return _poisoned(shape, dtype) if self.poison else aligned_empty(shape, dtype)
        return arenas[slot][: nbytes(t, bindings)].view(dtype).reshape(shape)

    # --- files -------------------------------------------------------------------------------------
    def to_files(self, folder: str | os.PathLike[str]) -> Path:
        """Write ``kernels.o`` (object code), ``plan.json`` (plan, kernel signatures, host) and ``kernels.mlir``."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        code = self.kernels.object_code
        (root / OBJECT_FILE).write_bytes(code)
        (root / LOOP_IR_FILE).write_text(self.loop_ir, encoding="utf-8")
        plan = {
            "format": EXECUTABLE_FORMAT,
            "format_version": EXECUTABLE_VERSION,
            "tensorium_version": __version__,
            "target": self.target.to_json(),
            "object": {"file": OBJECT_FILE, "sha256": hashlib.sha256(code).hexdigest()},
            "loop_ir": LOOP_IR_FILE,
            "buffers": [str(t) for t in self.buffers],
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "constants": [_constant_json(b, a) for b, a in self.constants],
            "steps": [s.attribute() for s in self.steps],
            "views": [[v.buffer, v.source, v.offset] for v in self.views],
            "dims": [list(d.attribute()) for d in self.dims],
            "memory_plan": self.memory_plan,
            "kernels": [
                {
                    "name": k.name,
                    "symbol": k.symbol,
                    "args": [str(t) for t in k.arg_types],
                    "arg_names": list(k.arg_names),
                    "written": sorted(k.written),
                    "ops": list(k.ops),
                    "inplace": sorted(list(p) for p in k.inplace),
                }
                for k in self.kernels.kernels.values()
            ],
            "errors": list(self.kernels.errors),
        }
        (root / PLAN_FILE).write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
        return root

    @staticmethod
    def from_files(folder: str | os.PathLike[str]) -> CpuExecutable:
        """Load what :meth:`to_files` wrote, without compiling; ExecutableError names the file at fault."""
        root = Path(folder)
        file = root / PLAN_FILE
        meta = read_plan_file(file, EXECUTABLE_FORMAT, "a Tensorium CPU executable")
        if meta.get("format_version") != EXECUTABLE_VERSION:
            raise ExecutableError(f"{file}: executable format version {meta.get('format_version')!r} is not supported")
        if meta.get("tensorium_version") != __version__:
            raise ExecutableError(
                f"{file}: compiled by Tensorium {meta.get('tensorium_version')}, but this is Tensorium "
                f"{__version__}; compile the model again"
            )
        try:
            return _load(root, file, meta)
        except (KeyError, TypeError, ValueError, AttributeError, TensoriumError) as e:
            if isinstance(e, ExecutableError):
                raise
            raise ExecutableError(f"{file}: malformed plan ({type(e).__name__}: {e})") from None


class _Arenas:
    """The arenas of one run's slots (a byte array each) and, once a launch has run on them, that launch and its
    program over them with the program's address (see :meth:`_Launch.arena_program`)."""

    __slots__ = ("arrays", "launch", "program")

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays
        self.launch: _Launch | None = None
        self.program: tuple[np.ndarray, int] | None = None


_Call = tuple[int, tuple[int, ...], str, tuple[Type, ...]]
"""A kernel call of a plan: the kernel's address, the buffers it takes, the kernel's name and argument types."""

LAUNCHES_KEPT = 16
"""How many launches (one per set of input shapes) a plan with named dims keeps."""


class _Launch:
    """A run of a plan for one set of input shapes, worked out once, so that a call costs little more than its
    kernels (plans whose steps compute no dims: :class:`~tensorium.lowering.plan.RuntimeDim`).

    The kernels run in one foreign call, a program of :mod:`tensorium.backends.llvm.launcher` holding every
    kernel's address and arguments (pointers, and the sizes of symbolic dims, known from the shapes). Constants,
    the slots' buffers and views of either never change place for a given set of arenas, so their pointers are
    written once per set (:meth:`arena_program`); a run writes the pointers of the inputs, of the fresh outputs
    (new arrays every run: consecutive runs never share output memory) and of the views of those where the
    program takes them, then runs it.
    """

    def __init__(
        self, exe: CpuExecutable, calls: Sequence[_Call], inputs: Mapping[int, np.ndarray], bindings: dict[str, int]
    ) -> None:
        buffers, slots = exe.buffers, exe.memory.slots
        self.bindings = bindings
        shapes = {b: _shape(t, bindings) for b, t in enumerate(buffers) if b not in inputs}
        shapes.update((b, array.shape) for b, array in inputs.items())
        self.inputs = tuple((storage_dtype(buffers[b].element), shapes[b]) for b in exe.inputs)
        self.template = [0] * len(buffers)
        for b, array in exe.constants:
            self.template[b] = _address(array)
        written = sorted({b for step in exe.steps for b in step.outputs})
        fresh = [b for b in written if slots[b] is None or b in exe.outputs]
        self.fresh = tuple((shapes[b], storage_dtype(buffers[b].element)) for b in fresh)
        self.slotted = tuple((b, slot) for b in written if (slot := slots[b]) is not None and b not in fresh)
        varying = {b: n for n, b in enumerate((*exe.inputs, *fresh))}  # a run's pointers, in this order
        fixed = {b for b, _ in exe.constants} | {b for b, _ in self.slotted}
        self.fixed_views: list[tuple[int, int, int]] = []
        self.views: list[tuple[int, int]] = []  # (the source's place among the varying pointers, byte offset)
        for v in exe.views:  # in plan order: a view's source is a view listed before it, or no view
            offset = v.offset * storage_dtype(buffers[v.buffer].element).itemsize
            if v.source in fixed:
                fixed.add(v.buffer)
                self.fixed_views.append((v.buffer, v.source, offset))
            else:
                self.views.append((varying[v.source], offset))
                varying[v.buffer] = len(varying)
        self.records = [(address, _words(args, types, shapes)) for address, args, _, types in calls]
        self.names = tuple(name for _, _, name, _ in calls)
        self.count = len(calls)
        """How many of the calls a run makes (all of them; a test may stop short)."""
        places: list[tuple[int, int]] = []
        start = 0
        for _, words in self.records:  # a record is [address, n, n words]
            places += [(start + 2 + k, w[0]) for k, w in enumerate(words) if isinstance(w, tuple) and w[0] in varying]
            start += 2 + len(words)
        self.positions = np.array([p for p, _ in places], np.intp)
        self.sources = np.array([varying[b] for _, b in places], np.intp)
        self.runner = program_runner(max((len(words) for _, words in self.records), default=0))
        self.outputs = tuple(self._output(exe, b, fresh) for b in exe.outputs)

    @staticmethod
    def _output(exe: CpuExecutable, buffer: int, fresh: list[int]) -> tuple[int, int | np.ndarray]:
        """Where output ``buffer`` comes from: (0, its index among the fresh arrays), (1, the input's
        position: the input itself is returned, as the interpreter does) or (2, the constant, copied)."""
        if buffer in fresh:
            return 0, fresh.index(buffer)
        if buffer in exe.inputs:
            return 1, exe.inputs.index(buffer)
        constant = dict(exe.constants).get(buffer)
        if constant is None:
            raise InterpreterError(f"output buffer #{buffer} is none of a step's output, an input, a constant")
        return 2, constant

    def ready(self, inputs: Sequence[Any]) -> bool:
        """True when every input is a C-ordered, aligned numpy array of its buffer's dtype and this launch's
        shape (nothing to convert, nothing the full checks would refuse)."""
        for (dtype, shape), value in zip(self.inputs, inputs):
            if type(value) is not np.ndarray or value.dtype != dtype or value.shape != shape:
                return False
            flags = value.flags
            if not (flags.c_contiguous and flags.aligned):
                return False
        return True

    def arena_program(self, arenas: list[np.ndarray]) -> tuple[np.ndarray, int]:
        """The program over ``arenas`` (the pointers of constants, of buffers in slots and of views of those
        written; a run writes the others) and its address."""
        pointers = list(self.template)
        bases = [_address(a) for a in arenas]
        for b, slot in self.slotted:
            pointers[b] = bases[slot]  # a slot's buffers all start at the arena's first byte
        for b, source, offset in self.fixed_views:
            pointers[b] = pointers[source] + offset
        program: list[int] = []
        for address, words in self.records:
            program += [address, len(words), *(pointers[w[0]] if isinstance(w, tuple) else w for w in words)]
        array = np.array(program, np.int64)
        return array, _address(array)

    def run(
        self,
        arrays: Sequence[np.ndarray],
        program: tuple[np.ndarray, int],
        threads: int,
        fail: Callable[[str, int], None],
        poison: bool = False,
    ) -> list[np.ndarray]:
        """Run the kernels on ``arrays`` (the checked inputs) through ``program`` (of :meth:`arena_program`);
        ``fail(kernel, status)`` raises for a kernel's nonzero status; ``poison`` fills the fresh outputs with
        all-ones bytes first (see :attr:`CpuExecutable.poison`). Returns the outputs."""
        varying = [_address(a) for a in arrays]
        if poison:
            fresh = [_poisoned(shape, dtype) for shape, dtype in self.fresh]
            varying += [_address(a) for a in fresh]
        else:
            buffers = [aligned_buffer(shape, dtype) for shape, dtype in self.fresh]
            fresh = [array for array, _ in buffers]
            varying += [address for _, address in buffers]
        for source, offset in self.views:
            varying.append(varying[source] + offset)
        words, address = program
        words[self.positions] = np.array(varying, np.int64)[self.sources]
        code = self.runner(threads, address, self.count) if self.count else 0
        if code:
            call, status = decode_failure(code)
            fail(self.names[call], status)
        return [
            fresh[where] if kind == 0 else arrays[where] if kind == 1 else where.copy()  # type: ignore[index,union-attr]
            for kind, where in self.outputs
        ]


def _words(args: Sequence[int], types: Sequence[Type], shapes: Mapping[int, tuple[int, ...]]) -> list[tuple[int] | int]:
    """A kernel call's words: for each buffer, ``(buffer,)`` for its pointer (known only with the arenas or
    at run time), then the sizes of the dims its kernel argument type leaves symbolic."""
    words: list[tuple[int] | int] = []
    for b, t in zip(args, types):
        assert isinstance(t, BufferType), f"a plan step passes buffers, not {t}"
        sizes = [size for d, size in zip(t.shape, shapes[b]) if isinstance(d, Sym)]
        assert all(size >= 0 for size in sizes), f"buffer #{b} has a dim the inputs do not bind"
        words += [(b,), *sizes]
    return words


def _shape(t: TensorType, bindings: Mapping[str, int]) -> tuple[int, ...]:
    """The shape of a tensor type with its named dims bound (-1 for a dim ``bindings`` lacks: no buffer a launch
    allocates or passes has one, see :func:`_check_sizable`)."""
    return tuple(dim_size(d, bindings) if dim_known(d, bindings) else -1 for d in t.shape)


def _shapes(arrays: Sequence[Any]) -> tuple[Any, ...]:
    """The shapes of ``arrays`` (None for a value without one), the key of a plan's launches."""
    return tuple(getattr(a, "shape", None) for a in arrays)


def _address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first byte (a ctypes view where the array allows one: a few
    times cheaper than ``array.ctypes.data``, which serves read-only and empty arrays)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return int(array.ctypes.data)


def _poisoned(shape: int | tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """An array of all-ones bytes: NaN for floats, -1 for signed integers, the largest unsigned value."""
    array = aligned_empty(shape, dtype)
    array.reshape(-1).view(np.uint8).fill(0xFF)  # reshape: a 0-d array cannot change its dtype
    return array


def _c_array(array: np.ndarray) -> np.ndarray:
    """``array`` itself when it is C-contiguous and aligned (zero copy), else a C-ordered copy (rank kept)."""
    return array if array.flags.c_contiguous and array.flags.aligned else np.array(array, order="C")


def _check_sizable(
    buffers: Sequence[TensorType],
    inputs: Sequence[int],
    steps: Sequence[Step],
    views: Sequence[View],
    dims: Sequence[RuntimeDim] = (),
) -> None:
    """CompileError unless the host can size every step's outputs and every view from static dims, the
    inputs' named dims and the dims steps compute at run time."""
    named = {d.name for b in inputs for d in buffers[b].shape if isinstance(d, Sym) and d.name is not None}
    named |= {d.name for d in dims}
    made = [(f"step '{step.kernel}' writes", b) for step in steps for b in step.outputs]
    made += [(f"the view of buffer #{v.source} is", v.buffer) for v in views]
    for what, b in made:
        t = buffers[b]
        bad = [d for d in t.shape if not dim_known(d, named)]
        if bad:
            raise CompileError(
                f"{what} buffer #{b} of type {t}: the host cannot size dimension {bad[0]} before running "
                "(only static dims and named dims of the inputs)"
            )


def _constant_json(buffer: int, array: np.ndarray) -> dict[str, Any]:
    flat = array.reshape(-1)
    splat = flat.size > 1 and bool((flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all())
    data = flat[:1] if splat else flat
    return {
        "buffer": buffer,
        "dtype": str(array.dtype),
        "shape": list(array.shape),
        "splat": splat,
        "data": data.tobytes().hex(),
    }


def _constant(entry: dict[str, Any], t: TensorType) -> tuple[int, np.ndarray]:
    dtype = np.dtype(entry["dtype"])
    shape = tuple(int(d) for d in entry["shape"])
    if dtype != storage_dtype(t.element) or shape != t.shape:
        raise ExecutableError(f"constant for buffer #{entry['buffer']} is not {t}")
    flat = np.frombuffer(bytes.fromhex(entry["data"]), dtype)
    array = np.broadcast_to(flat, shape) if entry["splat"] else flat.reshape(shape)
    return int(entry["buffer"]), aligned(array)


def _tensor(text: str) -> TensorType:
    t = parse_type_text(text)
    if not isinstance(t, TensorType):
        raise ExecutableError(f"buffer type {text} is not a tensor")
    return t


def _load(root: Path, file: Path, meta: dict[str, Any]) -> CpuExecutable:
    try:
        recorded = Target.from_json(meta["target"])
        recorded.check_runs_here(str(file))
    except TargetError as e:
        raise ExecutableError(str(e)) from None
    obj = root / meta["object"]["file"]
    if obj.resolve().parent != root.resolve():
        raise ExecutableError(f"{file}: the object file must lie in {root}")
    try:
        code = obj.read_bytes()
    except OSError as e:
        raise ExecutableError(f"{obj}: unreadable object code ({e.strerror or e})") from None
    if hashlib.sha256(code).hexdigest() != meta["object"]["sha256"]:
        raise ExecutableError(f"{obj}: corrupt object code (its sha256 does not match {file.name})")
    loop_ir = root / meta["loop_ir"]
    try:
        loop_text = loop_ir.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ExecutableError(f"{loop_ir}: unreadable loop IR ({e})") from None
    buffers = tuple(_tensor(t) for t in meta["buffers"])
    infos: dict[str, KernelInfo] = {}
    for k in meta["kernels"]:
        types: tuple[Type, ...] = tuple(parse_type_text(t) for t in k["args"])
        names = tuple(None if n is None else str(n) for n in k["arg_names"])
        written = frozenset(int(i) for i in k["written"])
        ops = tuple(str(o) for o in k.get("ops", ()))
        inplace = frozenset((int(i), int(o)) for i, o in k.get("inplace", ()))
        infos[str(k["name"])] = KernelInfo(str(k["name"]), str(k["symbol"]), types, names, written, ops, inplace)
    steps = tuple(Step.from_attribute(entry) for entry in meta["steps"])
    for step in steps:
        info = infos.get(step.kernel)
        used = (*step.inputs, *step.outputs)
        if info is None or len(used) != len(info.arg_types) or any(not 0 <= b < len(buffers) for b in used):
            raise ExecutableError(f"{file}: step '{step.kernel}' does not match the kernels or buffers")
        for b, t in zip(used, info.arg_types):
            if not isinstance(t, BufferType) or t.shape != buffers[b].shape or t.element != buffers[b].element:
                raise ExecutableError(f"{file}: step '{step.kernel}' passes buffer #{b} ({buffers[b]}) for {t}")
    views = tuple(View(int(b), int(src), int(o)) for b, src, o in meta["views"])
    for view in views:
        _check_view(file, view, buffers)
    constants = tuple(_constant(c, buffers[int(c["buffer"])]) for c in meta["constants"])
    inputs = tuple(int(b) for b in meta["inputs"])
    outputs = tuple(int(b) for b in meta["outputs"])
    if any(not 0 <= b < len(buffers) for b in (*inputs, *outputs)):
        raise ExecutableError(f"{file}: an input or output names a buffer that does not exist")
    engine = _engine(code)
    for info in infos.values():
        if not engine.get_function_address(info.symbol):
            raise ExecutableError(f"{obj}: the object code has no kernel {info.symbol}")
    kernels = CompiledKernels(infos, [str(e) for e in meta["errors"]], engine, "", "", code)
    memory_plan = bool(meta.get("memory_plan", True))
    dims = tuple(RuntimeDim.from_attribute(entry) for entry in meta.get("dims", ()))
    for dim in dims:
        if any(not 0 <= b < len(buffers) for b in (dim.size, *dim.buffers)):
            raise ExecutableError(f"{file}: run-time dim [{dim.name}] names a buffer that does not exist")
    kernels.target = recorded
    return CpuExecutable(
        kernels, buffers, inputs, outputs, constants, steps, loop_text, recorded, views, memory_plan, dims
    )


def _check_view(file: Path, view: View, buffers: Sequence[TensorType]) -> None:
    """ExecutableError unless ``view`` names two buffers of one element type and, for static shapes, stays
    inside its source (a corrupt plan must not make kernels read past an allocation)."""
    if not (0 <= view.buffer < len(buffers) and 0 <= view.source < len(buffers)) or view.offset < 0:
        raise ExecutableError(f"{file}: a view names a buffer that does not exist")
    t, source = buffers[view.buffer], buffers[view.source]
    if t.element != source.element:
        raise ExecutableError(f"{file}: view buffer #{view.buffer} ({t}) is not of its source's type {source}")
    if t.is_static and source.is_static and view.offset + (t.num_elements or 0) > (source.num_elements or 0):
        raise ExecutableError(f"{file}: view buffer #{view.buffer} ({t}) does not fit in buffer #{view.source}")


def _engine(code: bytes) -> llvm.ExecutionEngine:
    """An MCJIT engine holding the object code ``code`` (linked against the runtime and libc), no codegen."""
    register_runtime()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), host_target_machine())
    load_objects(engine, code)
    return engine


if TYPE_CHECKING:
    _KIND: ExecutableKind = CpuExecutable  # the class side of the executable protocol, checked by mypy
