"""Compilation of loop-level kernels for a CPU target and calls into them with numpy arrays.

The LLVM module is optimized by the O3 pipeline of the new pass manager for the target's CPU (its name
and features), turned into object code (kept as bytes for artifacts) and, when the target's code runs
on this machine, loaded by MCJIT. Calls go through ctypes, which releases the GIL; buffers are passed by
pointer, without copies. Code for another CPU (cross-compilation) can be read as assembly but not run.
"""

from __future__ import annotations

import ctypes
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from llvmlite import binding as llvm

from ...errors import InterpreterError
from ...ir.core import Operation
from ...ir.storage import check_array, coerce
from ...ir.types import BufferType, FloatType, ScalarType, Sym
from ...ir.verifier import verify
from ...targets import Target, TargetError, host_target
from .emitter import KernelInfo, LLVMEmitter
from .runtime import POOL, RUNTIME_FAILED, register_runtime, thread_count


def target_machine(target: Target, opt_level: int = 3) -> llvm.TargetMachine:
    """A new LLVM target machine for a CPU ``target`` (triple, CPU name and features), position independent.

    Each JIT engine takes ownership of (and frees) its target machine, so every compilation makes one.
    """
    if target.kind != "cpu":
        raise TargetError(f"the LLVM CPU backend cannot compile for target '{target}'")
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple(target.triple)
    return machine.create_target_machine(
        cpu=target.cpu, features=target.llvm_features, opt=opt_level, reloc="pic", jit=True
    )


def host_target_machine(opt_level: int = 3) -> llvm.TargetMachine:
    """A new target machine for this machine's CPU (:func:`~tensorium.targets.host_target`)."""
    return target_machine(host_target(), opt_level)


def runs_here(target: Target) -> bool:
    """True when code compiled for ``target`` can run on this machine."""
    try:
        target.check_runs_here()
    except TargetError:
        return False
    return True


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, opt_level: int = 3) -> None:
    """Run the default ``O<opt_level>`` pipeline (with loop and SLP vectorization from O2) on ``module``."""
    options = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    options.loop_vectorization = opt_level >= 2
    options.slp_vectorization = opt_level >= 2
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)


def compile_module(module: Operation, opt_level: int = 3, target: Target | None = None) -> CompiledKernels:
    """Verify, emit, optimize and compile every kernel of a loop-level ``module`` for a CPU ``target``
    (default: this machine); the kernels can be run when the target's code runs here.

    Each kernel is optimized in an LLVM module and context of its own, on several threads (llvmlite's calls
    release the GIL); the optimized modules are then linked into one and turned into one object file.
    """
    verify(module)
    target = target if target is not None else host_target()
    machine = target_machine(target, opt_level)
    emitter = LLVMEmitter(triple=machine.triple, data_layout=str(machine.target_data))
    texts = [str(m) for m in emitter.emit_modules(module)]
    workers = max(1, min(len(texts), thread_count()))
    with ThreadPoolExecutor(workers, thread_name_prefix="tensorium-llvm") as pool:
        optimized = list(pool.map(lambda text: _optimized_bitcode(text, target, opt_level), texts))
    compiled = llvm.parse_assembly("")
    compiled.triple, compiled.data_layout = machine.triple, str(machine.target_data)
    for bitcode in optimized:
        compiled.link_in(llvm.parse_bitcode(bitcode))
    object_code = machine.emit_object(compiled)
    engine = None
    if runs_here(target):
        register_runtime()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
        engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        engine.finalize_object()
    kernels = CompiledKernels(emitter.kernels, emitter.errors, engine, "\n".join(texts), compiled, object_code)
    kernels.target = target
    return kernels


def _optimized_bitcode(text: str, target: Target, opt_level: int) -> bytes:
    """One kernel's LLVM IR parsed, verified and optimized in a context of its own, as bitcode."""
    context = llvm.create_context()
    parsed = llvm.parse_assembly(text, context=context)
    parsed.verify()
    optimize(parsed, target_machine(target, opt_level), opt_level)
    return bytes(parsed.as_bitcode())


def _ctype(t: Any) -> type:
    if isinstance(t, BufferType):
        return ctypes.c_void_p
    if isinstance(t, FloatType):
        return ctypes.c_double if t.name == "f64" else ctypes.c_float
    return ctypes.c_int64


class CompiledKernels:
    """Kernels compiled for a CPU target: ``run(name, *arrays)`` updates the buffers in place.

    ``llvm_ir`` is the emitted module, ``optimized_ir`` the module after optimization, ``object_code`` its
    object file and ``assembly()`` its assembly. ``engine`` is None for code that cannot run here (compiled
    for a CPU with features this machine lacks); running it raises TargetError.
    """

    target: Target | None = None

    def __init__(
        self,
        kernels: dict[str, KernelInfo],
        errors: list[str],
        engine: llvm.ExecutionEngine | None,
        llvm_ir: str,
        optimized: llvm.ModuleRef | str,
        object_code: bytes,
    ) -> None:
        self.kernels = kernels
        self.errors = errors
        self.llvm_ir = llvm_ir
        self._optimized = optimized
        self.object_code = object_code
        self._engine = engine
        self._functions: dict[str, Any] = {}
        for name, info in kernels.items() if engine is not None else ():
            argtypes: list[Any] = [ctypes.c_int64]
            for t in info.arg_types:
                argtypes.append(_ctype(t))
                if isinstance(t, BufferType):
                    argtypes += [ctypes.c_int64] * sum(isinstance(d, Sym) for d in t.shape)
            prototype = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)
            self._functions[name] = prototype(engine.get_function_address(info.symbol))

    @property
    def optimized_ir(self) -> str:
        """The optimized LLVM module as text (printed when first asked for: only dumps need it)."""
        if not isinstance(self._optimized, str):
            self._optimized = str(self._optimized)
        return self._optimized

    def assembly(self) -> str:
        """The optimized module as the target's assembly text (for reading what the kernels became)."""
        target = self.target if self.target is not None else host_target()
        module = llvm.parse_assembly(self.optimized_ir)
        return str(target_machine(target).emit_assembly(module))

    @property
    def names(self) -> list[str]:
        return list(self.kernels)

    def run(self, name: str, *args: Any, num_threads: int | None = None) -> None:
        """Run kernel ``name`` on ``args`` (numpy arrays for buffers, numbers for scalars), in place.

        Parallel loops use ``num_threads`` threads (default: TENSORIUM_NUM_THREADS, else the cores).
        """
        info = self.kernels.get(name)
        if info is None:
            raise InterpreterError(f"no kernel @{name}; the module has {self.names}")
        if self._engine is None:
            assert self.target is not None
            self.target.check_runs_here(f"kernel @{name}")
        threads = thread_count() if num_threads is None else num_threads
        if threads < 1:
            raise InterpreterError(f"num_threads must be at least 1, got {threads}")
        status = self._functions[name](threads, *self._arguments(info, args))
        if status:
            self.raise_status(name, status)

    def function(self, name: str) -> Any:
        """The ctypes function of kernel ``name``: ``(threads, pointers and sizes...) -> status``, unchecked."""
        return self._functions[name]

    def raise_status(self, name: str, status: int) -> None:
        """The InterpreterError for a nonzero status returned by kernel ``name``."""
        if status == RUNTIME_FAILED:
            raise InterpreterError(f"@{name}: the parallel runtime failed: {POOL.failures.pop()!r}")
        raise InterpreterError(self.errors[status - 1])

    def _arguments(self, info: KernelInfo, args: tuple[Any, ...]) -> list[Any]:
        """The C arguments for ``args``: pointers and symbolic sizes of buffers, converted scalars."""
        if len(args) != len(info.arg_types):
            raise InterpreterError(f"@{info.name} takes {len(info.arg_types)} arguments, got {len(args)}")
        out: list[Any] = []
        bindings: dict[str, int] = {}
        for i, (t, value) in enumerate(zip(info.arg_types, args)):
            hint = info.arg_names[i]
            label = f"@{info.name} argument #{i}" + (f" '{hint}'" if hint else "")
            if isinstance(t, BufferType):
                out += self._buffer(t, value, label, bindings, i in info.written)
                continue
            assert isinstance(t, ScalarType)
            scalar = np.asarray(value)
            if scalar.ndim != 0:
                raise InterpreterError(f"{label}: expected a scalar {t}, got an array of shape {list(scalar.shape)}")
            held = coerce(scalar, t)
            out.append(float(held) if isinstance(t, FloatType) else int(held.astype(np.int64)))
        return out

    def _buffer(self, t: BufferType, value: Any, label: str, bindings: dict[str, int], written: bool) -> list[int]:
        check_array(value, t, label, bindings)
        sizes = [int(size) for dim, size in zip(t.shape, value.shape) if isinstance(dim, Sym)]
        if not (value.flags.c_contiguous and value.flags.aligned):
            raise InterpreterError(f"{label}: the array must be C-contiguous and aligned (use np.ascontiguousarray)")
        if written and not value.flags.writeable:
            raise InterpreterError(f"{label}: the kernel writes this buffer, but the array is read-only")
        return [value.ctypes.data, *sizes]
