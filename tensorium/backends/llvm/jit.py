"""Compilation of loop-level kernels for a CPU target and calls into them with numpy arrays.

Each kernel is emitted as an LLVM module of its own and optimized by the O2 pipeline (:data:`DEFAULT_OPT_LEVEL`)
of the new pass manager for the target's CPU (its name and features) on a thread pool, or taken from the kernel
cache (:mod:`.kernel_cache`: optimized bitcode by the kernel's content and the target); the optimized modules
are linked into one, turned into object code (kept as bytes for artifacts) and, when the target's code
runs on this machine, loaded by MCJIT. Calls go through ctypes, which releases the GIL; buffers are passed
by pointer, without copies. Code for another CPU (cross-compilation) can be read as assembly but not run.
"""

from __future__ import annotations

import ctypes
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from llvmlite.binding import ffi

from ...errors import InterpreterError
from ...ir.core import Operation
from ...ir.dialects.builtin import func_name
from ...ir.storage import check_array, coerce
from ...ir.types import BufferType, FloatType, ScalarType, Sym
from ...ir.verifier import verify
from ...targets import Target, host_target
from .emitter import KernelInfo
from .kernel_cache import (
    OBJECT,
    PLACEHOLDER,
    KernelCache,
    default_kernel_cache,
    kernel_cache_enabled,
    kernel_key,
    normalize,
    object_key,
)
from .machine import host_target_machine, target_machine
from .objects import emit_object_unlocked, load_objects, pack_objects
from .runtime import POOL, RUNTIME_FAILED, register_runtime, thread_count
from .sharing import SharingEmitter

__all__ = [
    "PIPELINE",
    "CompileStats",
    "CompiledKernels",
    "compile_module",
    "host_target_machine",
    "optimize",
    "target_machine",
]

PIPELINE = "default<O{level}>; loop-vectorize from O2; slp-vectorize from O2 unless explicitly vectorized"
"""What :func:`optimize` runs, part of every kernel cache key: change it when the pipeline changes."""

DEFAULT_OPT_LEVEL = 2
"""LLVM's optimization level for CPU kernels unless the caller asks for another (0..3).

O2, not O3: the emitter vectorizes, tiles and unrolls itself, and O3's extra passes bought no speed. Measured
(2026-11-28, Emerald Rapids, one thread, the kernels of each model at O2 and O3 in one process, rounds
alternating which ran first, best median): MLP 1.09x and 0.95x O3's time in two runs, ResNet block 0.96x/0.96x,
transformer encoder 0.95x/0.98x, GEMM 1024^3 0.96x/1.01x, dynamic tiny GPT-2 1.03x/1.00x (within this host's
spread). Optimizing and generating code for the dynamic tiny GPT-2's 17 kernels took 1.76 s of CPU at O2 against
2.05 s at O3, its attention kernel 0.59 s against 0.84 s."""

OWN_OBJECT_RELOC = "static"
"""The relocation model of the object files made per kernel: position-independent objects (each with its
global offset table, in the JIT's large code model) crashed when several were loaded into one MCJIT engine;
static ones get absolute addresses patched in at load time, wherever they land."""

_VECTOR = re.compile(r"<\d+ x ")


def optimize(
    module: llvm.ModuleRef,
    machine: llvm.TargetMachine,
    opt_level: int = DEFAULT_OPT_LEVEL,
    slp: bool | None = None,
    own_context: bool = False,
) -> None:
    """Run the default ``O<opt_level>`` pipeline (with loop and SLP vectorization from O2) on ``module``.

    ``slp=False`` leaves the SLP vectorizer out, for kernels the emitter already vectorized: there it
    found nothing the emitter had not done (the benchmark workloads ran as fast without it), and on one
    version of the transformer's attention kernel it took 1.4 s of a 1.6 s optimization.

    llvmlite serializes every call into LLVM with one process-wide lock, so threads optimizing modules would
    take turns. ``own_context=True`` says that ``module`` lives in an LLVM context of its own (and
    ``machine`` is this call's alone), where LLVM itself is thread-safe: the pipeline then runs without that
    lock, in parallel with other threads (ctypes releases the GIL too).
    """
    options = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    options.loop_vectorization = opt_level >= 2
    options.slp_vectorization = opt_level >= 2 and slp is not False
    builder = llvm.create_pass_builder(machine, options)
    manager = builder.getModulePassManager()
    unlocked = getattr(ffi.lib.LLVMPY_RunNewModulePassManager, "_cfn", None) if own_context else None
    if unlocked is None:
        manager.run(module, builder)
    else:
        unlocked(manager, module, builder)


def explicitly_vectorized(llvm_ir: str) -> bool:
    """True when a kernel's LLVM IR already computes on vectors (``<N x T>``): the emitter vectorized it."""
    return _VECTOR.search(llvm_ir) is not None


@dataclass
class CompileStats:
    """Where one :func:`compile_module` call spent its time (seconds) and what the kernel cache gave.

    ``emit``: loop IR to llvmlite modules (Python); ``printing``: those modules as text (both overlap the
    optimization of the kernels emitted before); ``optimize``: waiting for the thread pool after the last
    kernel was printed; ``link``, ``object`` and ``load`` (MCJIT). When every kernel is compiled afresh, each
    worker also generates its kernel's object code (in ``optimize``; :mod:`.objects` bundles them) and ``object``
    is only the status wrappers'; otherwise ``object`` is the code generation of the linked module.
    """

    kernels: int = 0
    shared: int = 0
    """Kernels that run the code of an earlier kernel with the same loop IR (:mod:`.sharing`): not compiled."""
    cache_hits: int = 0
    object_cached: bool = False
    """True when the linked object code came from the kernel cache (no code generation)."""
    verify: float = 0.0
    emit: float = 0.0
    printing: float = 0.0
    optimize: float = 0.0
    link: float = 0.0
    object: float = 0.0
    load: float = 0.0
    optimize_each: dict[str, float] = field(default_factory=dict)
    """Seconds each kernel's optimization took (0 for a cache hit), by kernel name."""

    @property
    def total(self) -> float:
        """All stages together."""
        return self.verify + self.emit + self.printing + self.optimize + self.link + self.object + self.load


def compile_module(
    module: Operation,
    opt_level: int = DEFAULT_OPT_LEVEL,
    target: Target | None = None,
    kernel_cache: KernelCache | bool | None = None,
) -> CompiledKernels:
    """Verify, emit, optimize and compile every kernel of a loop-level ``module`` for a CPU ``target``
    (default: this machine); the kernels can be run when the target's code runs here.

    Each kernel is optimized in an LLVM module and context of its own, on several threads (without
    llvmlite's lock: see :func:`optimize`), while the next kernels are emitted and printed; the optimized
    modules are then linked into one and turned into one object file.

    ``kernel_cache``: the :class:`~.kernel_cache.KernelCache` to take optimized kernels from and keep them in;
    None (the default) is the process's cache unless ``TENSORIUM_KERNEL_CACHE=0``; False compiles every
    kernel afresh. ``CompiledKernels.stats`` says where the time went.
    """
    cache = _cache_for(kernel_cache)
    stats = CompileStats()
    clock = _Clock()
    verify(module)
    stats.verify = clock.lap()
    target = target if target is not None else host_target()
    machine = target_machine(target, opt_level)
    texts: dict[int, str] = {}
    futures: dict[int, Future[_Kernel]] = {}
    with ThreadPoolExecutor(thread_count(), thread_name_prefix="tensorium-llvm") as pool:

        def submit(info: KernelInfo, llvm_module: ir.Module) -> None:
            start = time.perf_counter()
            text = texts[id(llvm_module)] = str(llvm_module)
            futures[id(llvm_module)] = pool.submit(_kernel_bitcode, text, info.symbol, target, opt_level, cache)
            stats.printing += time.perf_counter() - start

        emitter = _StreamingEmitter(
            submit, triple=machine.triple, data_layout=str(machine.target_data), features=frozenset(target.features)
        )
        modules = emitter.emit_modules(module)
        infos = list(emitter.kernels.values())
        assert len(infos) == len(modules), "the emitter made one LLVM module per kernel"
        emitted = [(info, m) for info, m in zip(infos, modules) if info.name not in emitter.aliases]
        for info, llvm_module in emitted:
            if id(llvm_module) not in futures:  # not streamed: an emitter that builds modules otherwise
                submit(info, llvm_module)
        stats.kernels, stats.shared = len(infos), len(emitter.aliases)
        stats.emit = clock.lap() - stats.printing
        results = [futures[id(m)].result() for _, m in emitted]
    stats.optimize = clock.lap()
    stats.optimize_each = {info.name: r.seconds or 0.0 for (info, _), r in zip(emitted, results)}
    stats.cache_hits = sum(r.seconds is None for r in results)
    compiled = llvm.parse_assembly("")
    compiled.triple, compiled.data_layout = machine.triple, str(machine.target_data)
    wrappers = llvm.parse_assembly("")
    wrappers.triple, wrappers.data_layout = machine.triple, str(machine.target_data)
    linked: dict[str, tuple[ir.FunctionType, int]] = {}
    for (info, llvm_module), result in zip(emitted, results):
        ftype = llvm_module.get_global(info.symbol).ftype
        linked[info.symbol] = ftype, result.offset
        compiled.link_in(_named(llvm.parse_bitcode(result.bitcode), _code_symbol(info.symbol, result.offset)))
        if result.offset:
            wrapper = _status_wrapper(info.symbol, ftype, result.offset, machine.triple, str(machine.target_data))
            wrappers.link_in(llvm.parse_assembly(wrapper))
    for alias in emitter.aliases.values():
        ftype, offset = linked[alias.of]
        shift = alias.first_error - alias.of_first_error + offset
        inner = _code_symbol(alias.of, offset)
        wrapper = _status_wrapper(alias.symbol, ftype, shift, machine.triple, str(machine.target_data), inner)
        wrappers.link_in(llvm.parse_assembly(wrapper))
    has_wrappers = any(not fn.is_declaration for fn in wrappers.functions)
    if has_wrappers:
        compiled.link_in(wrappers, preserve=True)
    stats.link = clock.lap()
    object_code, linked_key = None, ""
    if cache is not None:
        parts = [(info.symbol, r.key, r.offset) for (info, _), r in zip(emitted, results)]
        parts += [(a.symbol, a.of, a.first_error - a.of_first_error) for a in emitter.aliases.values()]
        linked_key = object_key(parts, machine.triple, str(machine.target_data))
        object_code = cache.lookup(linked_key, OBJECT)
    if object_code is None:
        if results and all(r.object is not None for r in results):
            # Every kernel was compiled afresh, and its worker made its object code too, in parallel.
            objects = [r.object for r in results if r.object is not None]
            if has_wrappers:
                objects.append(target_machine(target, opt_level, reloc=OWN_OBJECT_RELOC).emit_object(wrappers))
            object_code = pack_objects(objects)
        else:
            object_code = machine.emit_object(compiled)
        if cache is not None:
            cache.store(linked_key, object_code, OBJECT)
    else:
        stats.object_cached = True
    stats.object = clock.lap()
    engine = None
    if target.runs_here():
        register_runtime()
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
        load_objects(engine, object_code)
    llvm_ir = "\n".join(texts[id(m)] for _, m in emitted)
    llvm_ir += "".join(f'\n; @"{a.symbol}" runs the code of @"{a.of}"' for a in emitter.aliases.values())
    kernels = CompiledKernels(emitter.kernels, emitter.errors, engine, llvm_ir, compiled, object_code)
    kernels.target = target
    stats.load = clock.lap()
    kernels.stats = stats
    return kernels


class _StreamingEmitter(SharingEmitter):
    """A :class:`~.sharing.SharingEmitter` that hands each kernel's LLVM module to ``ready(info, module)`` as
    soon as the kernel is emitted (by :meth:`~.emitter.LLVMEmitter.emit_modules`), so that LLVM optimizes the first
    kernels on other threads while Python emits the next ones."""

    def __init__(
        self, ready: Callable[[KernelInfo, ir.Module], None], triple: str, data_layout: str, features: frozenset[str]
    ) -> None:
        super().__init__(triple=triple, data_layout=data_layout, features=features)
        self.ready = ready

    def emit_function(self, func: Operation) -> None:
        """Emit one kernel, then hand its module over."""
        super().emit_function(func)
        info = self.kernels.get(func_name(func))
        if info is not None and info.symbol in self.module.globals:
            self.ready(info, self.module)


class _Clock:
    """Seconds since the last lap."""

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        seconds, self._last = now - self._last, now
        return seconds


def _cache_for(kernel_cache: KernelCache | bool | None) -> KernelCache | None:
    """The kernel cache ``compile_module``'s argument asks for (None: no cache)."""
    if kernel_cache is False or (kernel_cache is None and not kernel_cache_enabled()):
        return None
    if isinstance(kernel_cache, KernelCache):
        return kernel_cache
    return default_kernel_cache()


@dataclass(frozen=True)
class _Kernel:
    """What a worker thread made of one kernel (see :func:`_kernel_bitcode`)."""

    bitcode: bytes
    """Optimized, with the kernel's symbol renamed to the cache's placeholder and its checks numbered from 1."""
    seconds: float | None
    """How long the optimization (and code generation) took; None when the kernel cache had the bitcode."""
    offset: int
    """The number of run-time checks of the kernels before it (see :func:`local_checks`)."""
    key: str
    """The kernel cache key ("" without a cache)."""
    object: bytes | None
    """The kernel's object code under its own symbol (None on a cache hit: the linked object may be cached)."""


def _code_symbol(symbol: str, offset: int) -> str:
    """The name of a kernel's compiled function: ``symbol`` itself, or ``symbol.checks`` behind a wrapper
    that adds ``offset`` to its statuses."""
    return symbol + CHECKS_SUFFIX if offset else symbol


def _kernel_bitcode(text: str, symbol: str, target: Target, opt_level: int, cache: KernelCache | None) -> _Kernel:
    """One kernel optimized, and turned into object code, in an LLVM context of its own (on a worker thread,
    without llvmlite's lock)."""
    local, offset = local_checks(text, symbol)
    normalized = normalize(local, symbol)
    key = kernel_key(normalized, target, opt_level, PIPELINE) if cache is not None else ""
    if cache is not None:
        found = cache.lookup(key)
        if found is not None:
            return _Kernel(found, None, offset, key, None)
    start = time.perf_counter()
    context = llvm.create_context()
    parsed = llvm.parse_assembly(normalized, context=context)
    parsed.verify()
    machine = target_machine(target, opt_level)
    optimize(parsed, machine, opt_level, not explicitly_vectorized(text), True)  # slp, own_context
    code = bytes(parsed.as_bitcode())
    if cache is not None:
        cache.store(key, code)
    own_objects = target_machine(target, opt_level, reloc=OWN_OBJECT_RELOC)
    obj = emit_object_unlocked(own_objects, _named(parsed, _code_symbol(symbol, offset)))
    return _Kernel(code, time.perf_counter() - start, offset, key, obj)


_FUNCTION_START = re.compile(r"^(?=define )", re.MULTILINE)
_FUNCTION_NAME = re.compile(r'^define [^@]*@"([^"]+)"')
_STATUS = re.compile(r"\bret i32 (\d+)\b")


def local_checks(text: str, symbol: str) -> tuple[str, int]:
    """A kernel's LLVM IR with its run-time check statuses numbered from 1, and how many checks the kernels
    emitted before it have (what was subtracted).

    The emitter numbers checks across the whole module (``ret i32 k`` in a ``fail`` block, ``k`` indexing
    ``errors``), so the same kernel's code would depend on its place in the model. :func:`compile_module`
    adds the offset back in a small wrapper (:func:`_status_wrapper`). Text whose statuses in the kernel's
    functions are not one contiguous run is returned as it is (offset 0): still correct, only not shared.
    """
    pieces = _FUNCTION_START.split(text)

    def own(piece: str) -> bool:
        match = _FUNCTION_NAME.match(piece)
        return match is not None and (match[1] == symbol or match[1].startswith(symbol + "."))

    statuses = {int(k) for piece in pieces if own(piece) for k in _STATUS.findall(piece)} - {0}
    offset = min(statuses, default=1) - 1
    if offset == 0 or statuses != set(range(offset + 1, offset + len(statuses) + 1)):
        return text, 0

    def shifted(match: re.Match[str]) -> str:
        return f"ret i32 {int(match[1]) - offset}" if int(match[1]) > offset else match[0]

    return "".join(_STATUS.sub(shifted, piece) if own(piece) else piece for piece in pieces), offset


def _named(part: llvm.ModuleRef, symbol: str) -> llvm.ModuleRef:
    """``part`` with the placeholder symbol of its kernel (and of the functions outlined from it) renamed
    to the kernel's own ``symbol``."""
    for fn in part.functions:
        name = fn.name
        if name == PLACEHOLDER or name.startswith(PLACEHOLDER + "."):
            fn.name = symbol + name[len(PLACEHOLDER) :]
    return part


CHECKS_SUFFIX = ".checks"
"""The kernel function whose check statuses are numbered from 1 is ``<symbol>.checks`` when a wrapper adds the
offset of the kernels before it."""


def _status_wrapper(
    symbol: str, ftype: ir.FunctionType, offset: int, triple: str, data_layout: str, inner_symbol: str | None = None
) -> str:
    """``@symbol``: calls ``@inner_symbol`` (default ``@symbol.checks``) and adds ``offset`` to a positive status
    (a check that failed; the runtime's own failure is negative), so statuses index the module's ``errors`` as
    the emitter numbered them."""
    module = ir.Module(name=f"{symbol}.status")
    module.triple, module.data_layout = triple, data_layout
    inner = ir.Function(module, ftype, name=inner_symbol or symbol + CHECKS_SUFFIX)
    outer = ir.Function(module, ftype, name=symbol)
    b = ir.IRBuilder(outer.append_basic_block("entry"))
    status = b.call(inner, outer.args)
    failed = b.icmp_signed(">", status, ir.Constant(status.type, 0))
    b.ret(b.select(failed, b.add(status, ir.Constant(status.type, offset)), status))
    return str(module)


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
    stats: CompileStats | None = None
    """Where the compilation's time went (None for kernels loaded from object code)."""

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
        for name, info in kernels.items():
            if engine is None:
                break
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
