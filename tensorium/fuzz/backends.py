"""The backends the fuzzer's differential oracle compares with the interpreter, by name, as a table by kind.

A backend is named as a target is (:func:`~tensorium.targets.parse_target`), plus ``interp``:

- ``cpu`` (this machine), ``cpu:x86-64``, ``cpu:x86-64-v3``, any ``cpu:NAME`` LLVM knows: the optimized
  program compiled for that Target and run, poisoned buffers and all. Code for a CPU whose features this
  host lacks (AVX-512 code on an AVX2 host) is compiled and its assembly produced, but not run
  (:func:`compile_only`).
- ``cuda`` / ``cuda:sm_XX``: the codegen stages for the GPU (GPU schedules, decomposition, NVPTX), the PTX
  checked by ``ptxas`` where it is installed (a rejection is a ``validator`` failure), and the scheduled
  loop IR run on the loop interpreter (GPU loops in lockstep) against the graph interpreter.
- ``webgpu``: the WGSL shaders checked by a validator (naga, through wgpu-py's ``create_shader_module`` where
  wgpu-py finds an adapter; else Dawn's Tint under Node through the npm ``webgpu`` package where
  ``tensorium/backends/webgpu/js/node_modules`` has it), the loop IR on the loop interpreter, and, where
  wgpu-py finds an adapter, the shaders run on it.

Each execution draws which kinds run (:func:`backends_for_execution`: the CPU in ``cpu_fraction`` of them,
CUDA in ``gpu_fraction``, WebGPU in ``webgpu_fraction``), and a ``schedule_seed`` set on a case builds every
kernel at a random point of its space (:mod:`.schedules`). Programs already lowered by ``lower-to-loops`` (for
this CPU) are compiled as they are by CPU backends and skipped by the GPU ones.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TensoriumError, VerifyError
from ..ir.core import Operation
from ..ir.dialects.graph.canonical import constant_array
from ..ir.types import FloatType, bf16
from ..lowering.space import Config
from ..lowering.webgpu_split import static_bytes
from ..targets import Target, TargetError, parse_target
from .schedules import random_configs

KIND_SHARES = {"cpu": "cpu_fraction", "cuda": "gpu_fraction", "webgpu": "webgpu_fraction"}
"""Each compiled backend kind and the FuzzConfig field giving the share of executions that run it."""
DEFAULT_BACKENDS = ("interp", "cpu", "cuda", "webgpu")
"""What ``tensorium fuzz`` compares by default: the CPU in a share of executions, the GPU layers in a smaller one."""
GPU_LOOP_WORK = 20_000
"""The loop interpreter runs a GPU schedule only while its kernels execute at most this many scalar ops
(counted before scheduling, as the oracle counts CPU kernels)."""


class BackendError(TensoriumError):
    """A backend name the fuzzer does not know (neither ``interp`` nor a CPU, CUDA or WebGPU target)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"unknown backend '{name}': {reason}" if name else reason)
        self.name, self.reason = name, reason


@functools.cache
def backend_target(name: str) -> Target:
    """The Target a compiled backend's name gives; BackendError for ``interp`` or a name no kind here takes."""
    try:
        target = parse_target(name)
    except TargetError as e:
        raise BackendError(name, str(e)) from None
    if target.kind not in KIND_SHARES:
        raise BackendError(name, "use interp, cpu, cpu:NAME, cuda[:sm_XX] or webgpu")
    return target


def parse_backends(text: str | Sequence[str]) -> tuple[str, ...]:
    """Backend names from ``interp,cpu:x86-64-v3,...`` (or a sequence), each checked, duplicates dropped;
    BackendError naming the first unknown one."""
    names = text.split(",") if isinstance(text, str) else list(text)
    found = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not found:
        raise BackendError("", "no backend named; use interp, cpu, cpu:NAME, cuda[:sm_XX] or webgpu")
    for name in found:
        if name != "interp":
            backend_target(name)
    return found


def kind_of(name: str) -> str:
    """``interp``, or the target kind of a compiled backend (``cpu``, ``cuda``, ``webgpu``)."""
    return "interp" if name == "interp" else backend_target(name).kind


def backends_for_execution(
    backends: Sequence[str], shares: Mapping[str, float], rng: np.random.Generator, lowered: bool
) -> tuple[str, ...]:
    """The backends one execution runs: the interpreter always; each kind of compiled backend with the share
    of its :data:`KIND_SHARES` field in ``shares`` (the CPU always for a lowered program, which only it checks
    when it is big, and whenever it is the only backend)."""
    kinds = list(dict.fromkeys(kind_of(b) for b in backends if b != "interp"))
    keep = set()
    for kind in kinds:
        forced = kind == "cpu" and (lowered or len(backends) == 1)
        if forced or rng.random() < shares[KIND_SHARES[kind]]:
            keep.add(kind)
    return tuple(b for b in backends if b == "interp" or kind_of(b) in keep)


def compile_only(target: Target) -> str | None:
    """Why code for ``target`` is compiled but not run here (the features this host lacks), or None."""
    try:
        target.check_runs_here()
    except TargetError as e:
        return str(e)
    return None


def backend_notes(backends: Sequence[str]) -> list[str]:
    """What the fuzzer will not do with ``backends`` on this machine, one line each: CPU targets it compiles
    without running, GPU checks whose validator is not installed."""
    notes = []
    for name in backends:
        kind = kind_of(name)
        foreign = compile_only(backend_target(name)) if kind == "cpu" else None
        if foreign is not None:
            notes.append(f"{name}: compiled and its assembly produced, not run ({foreign})")
        elif kind == "cuda":
            from ..backends.cuda.ptx import ptxas_path

            if ptxas_path() is None:
                notes.append(f"{name}: ptxas is not installed, so the PTX is not validated (the loop interpreter runs)")
        elif kind == "webgpu" and wgsl_validator() is None:
            notes.append(
                f"{name}: no WGSL validator here (wgpu-py with an adapter, or Dawn under Node): WGSL unchecked"
            )
        elif kind == "webgpu" and not naga_available():
            notes.append(f"{name}: no WebGPU adapter for wgpu-py here, so the shaders are validated, not run")
    return notes


@dataclass
class BackendRun:
    """What a backend check gets from the oracle: the program after the pipeline, the inputs, and how to judge.

    ``guarded(stage, action)`` turns errors into verdicts as the oracle does; ``judge(stage, outputs, looser,
    nonfinite_free=False)`` compares with the interpreter on the original (at ``looser``'s tolerance where it is
    given; with ``nonfinite_free``, not where the interpreter gives a NaN or an infinity);
    ``fail(kind, stage, summary, detail)`` reports a failure."""

    name: str
    optimized: Operation
    lowered: bool
    inputs: Sequence[np.ndarray]
    opt_level: int
    schedule_seed: int | None
    guarded: Callable[[str, Callable[[], Any]], Any]
    judge: Callable[..., None]
    fail: Callable[[str, str, str, str], None]
    loop_work: Callable[[Operation], int]
    original: Operation | None = None
    """The program before the pipeline (for the refusal oracle: :func:`check_cpu`)."""
    pipeline: Any = ()
    """The pipeline that made ``optimized`` (its passes' names tell packings for other targets)."""

    @property
    def target(self) -> Target:
        return backend_target(self.name)

    def configs(self, target: Target | None = None) -> dict[str, Config] | None:
        """Random points of every kernel's space on ``target`` (the run's by default) when the case has a schedule
        seed (None: the defaults); call it inside a guarded action (it raises what the spaces raise)."""
        if self.schedule_seed is None:
            return None
        return random_configs(self.optimized, target or self.target, self.schedule_seed)


APPROXIMATIONS: dict[str, FloatType] = {
    "loop.dot_u8i8": bf16,
    "loop.dot_u8i8_halves": bf16,
    "loop.lookup_bytes": bf16,
}
"""Loop ops of kernels that compute a documented approximation of their graph op, and the float type whose
tolerance covers it: the qgemv ``int`` path rounds the activations to 8 bits (docs/quantization.md: within
0.3 to 1% of the largest output), and so does its ``lut`` path (tables of partial sums of those 8-bit
activations, ``loop.lookup_bytes``), so their outputs compare at bf16's tolerance."""
APPROXIMATED_OPS = frozenset({"quant.matmul_packed"})
"""The graph ops whose kernels may hold an :data:`APPROXIMATIONS` op."""


def approximation(run: BackendRun, executable: Any) -> FloatType | None:
    """The float type whose tolerance covers the approximations ``executable``'s kernels make, or None."""
    if not run.lowered and not any(op.name in APPROXIMATED_OPS for op in run.optimized.walk()):
        return None  # printing the loop IR costs time: only programs that may approximate look at it
    text = executable.loop_ir
    found = [t for name, t in APPROXIMATIONS.items() if name in text]
    return found[0] if found else None


ORDINARY = 1e30
"""Inputs of programs whose kernels approximate (:data:`APPROXIMATIONS`) are compared only when every float is
finite and below this magnitude: special values are outside what an approximation promises."""


def _ordinary(array: np.ndarray) -> bool:
    return array.dtype.kind != "f" or bool(np.all(np.abs(array) < ORDINARY))


def check_cpu(run: BackendRun) -> None:
    """Compile for the CPU target and run against the interpreter (or, for a foreign CPU, make its assembly)."""
    from ..backends.cpu import CpuExecutable

    target, stage = run.target, run.name
    if run.lowered:
        executable = run.guarded(
            f"{stage} build", lambda: CpuExecutable.from_lowered(run.optimized, opt_level=run.opt_level, target=target)
        )
    else:

        def build() -> Any:
            try:
                return CpuExecutable.build(run.optimized, opt_level=run.opt_level, target=target, configs=run.configs())
            except VerifyError:
                raise
            except TensoriumError as refused:
                problem = _refusal(run, refused)
                if problem is None:
                    raise
                return problem

        executable = run.guarded(f"{stage} build", build)
        if isinstance(executable, str):  # outside guarded: the failure must not pass for a crash of the build
            run.fail("refusal", f"{stage} build", executable, executable)
    if compile_only(target) is not None:
        assembly = run.guarded(f"{stage} assembly", executable.kernels.assembly)
        if executable.kernels.names and not assembly.strip():
            run.fail("crash", f"{stage} assembly", "LLVM produced no assembly for the kernels", "")
        return
    executable.poison = True  # elements no kernel writes are NaN or -1, never an earlier run's results
    got = run.guarded(stage, lambda: executable.run(run.inputs))
    looser = approximation(run, executable)
    if looser is not None and not all(_ordinary(a) for a in run.inputs):
        return  # an approximation holds for ordinary inputs only (the int path's block of an infinity is NaN)
    run.judge(stage, got, looser)


FOREIGN_PASSES = frozenset({"pack-quant-gpu"})
"""Passes that rewrite a program for another kind of target: the CPU may refuse what they leave."""


def _refusal(run: BackendRun, refused: TensoriumError) -> str | None:
    """The refusal oracle, when the CPU build of the optimized program raised ``refused``: what is wrong when
    the original program builds for the same target while the optimized one does not (at the target's default
    points either, so that a random schedule point is not blamed on the passes) and no pass of the pipeline
    packs for another target; else None."""
    from ..backends.cpu import CpuExecutable

    if run.original is None or any(p.name in FOREIGN_PASSES for p in run.pipeline):
        return None
    level, target = run.opt_level, run.target
    try:
        CpuExecutable.build(run.original, opt_level=level, target=target)
        if run.schedule_seed is not None:
            CpuExecutable.build(run.optimized, opt_level=level, target=target)
            return None  # the optimized program builds at the default points: the random point was refused
    except TensoriumError:
        return None
    except Exception:
        return None  # a crash of another build: the crash oracle sees it on its own cases
    return f"{run.name} refuses the optimized program but compiles the original: {str(refused).splitlines()[0]}"


def _gpu_build(
    run: BackendRun, build: Callable[..., Any], target: Target | None = None
) -> tuple[Any, Operation | None, int]:
    """Build with ``build`` (an executable's static ``build``) for ``target`` (the run's by default) at the case's
    schedule points; returns the executable (a PtxasError it raised, or None where the target refuses the program:
    an unsupported op or type, or limits it cannot fit, are the GPU layers' business only), the loop IR the
    ``emit`` stage compiled and the kernels' work."""
    from ..backends.cuda.ptx import PtxasError

    seen: dict[str, Any] = {"work": 1 << 62, "loops": None}

    def after(stage: str, state: Any) -> None:
        if stage == "lower":
            seen["work"] = run.loop_work(state.lowered)
        elif stage == "emit":
            seen["loops"] = state.lowered

    def action() -> Any:
        chosen = target or run.target
        try:
            return build(run.optimized, target=chosen, configs=run.configs(chosen), after_stage=after)
        except PtxasError as e:
            return e
        except VerifyError:
            raise
        except TensoriumError:
            return None  # an op or type the GPU target does not support: the other backends still check the case

    return run.guarded(f"{run.name} build", action), seen["loops"], seen["work"]


def _run_loops(run: BackendRun, loops: Operation | None, work: int, i64_in_i32: bool = False) -> None:
    """The GPU-scheduled loop IR on the loop interpreter against the graph interpreter (small programs); with
    ``i64_in_i32`` (WebGPU), i64 values held in i32 (:func:`~tensorium.backends.loop_interp.i64_held_in_i32`),
    for inputs the runtime would take (every i64 one inside the 32-bit range)."""
    from ..backends.loop_interp import i64_held_in_i32
    from ..backends.plan_runner import run_plan

    if loops is None or work > GPU_LOOP_WORK:
        return
    if i64_in_i32 and any(_outside_i32(a) for a in run.inputs):
        return  # the runtime refuses them by name (tests/webgpu/test_webgpu_int64.py)

    def interpret() -> list[np.ndarray]:
        if not i64_in_i32:
            return run_plan(loops, run.inputs)
        with i64_held_in_i32():
            return run_plan(loops, run.inputs)

    stage = f"{run.name} loop interpreter"
    run.judge(stage, run.guarded(stage, interpret), None)


def _outside_i32(array: Any) -> bool:
    from ..lowering.webgpu_int64 import I32_RANGE

    a = np.asarray(array)
    return a.dtype == np.int64 and a.size > 0 and (int(a.min()) < I32_RANGE[0] or int(a.max()) > I32_RANGE[1])


def check_cuda(run: BackendRun) -> None:
    """PTX for the CUDA target through ptxas (where installed), then its GPU schedule on the loop interpreter."""
    from ..backends.cuda.executable import CudaExecutable
    from ..backends.cuda.ptx import PtxasError

    if run.lowered:
        return
    built, loops, work = _gpu_build(run, CudaExecutable.build)
    if isinstance(built, PtxasError):
        run.fail("validator", "ptxas", headline(str(built)), str(built))
    _run_loops(run, loops, work)


def check_webgpu(run: BackendRun) -> None:
    """WGSL shaders through a validator (naga, else Dawn), then the loop IR on the loop interpreter."""
    from ..backends.webgpu.executable import WebGPUExecutable

    if run.lowered:
        return
    executable, loops, work = _gpu_build(run, WebGPUExecutable.build, low_webgpu_limits(run))
    shaders = list(executable.shaders.items()) if executable is not None else []
    validator = wgsl_validator()
    if shaders and validator is not None:
        name, validate = validator
        problems = run.guarded(f"wgsl ({name})", functools.partial(validate, [shader.wgsl for _, shader in shaders]))
        for (kernel, shader), problem in zip(shaders, problems):
            if problem is not None:
                summary = f"{name} rejects the WGSL of '{kernel}': {headline(problem)}"
                run.fail("validator", f"wgsl ({name})", summary, f"{problem}\n\n{shader.wgsl}")
    _run_loops(run, loops, work, i64_in_i32=True)
    _run_shaders(run, executable, work)


def _run_shaders(run: BackendRun, executable: Any, work: int) -> None:
    """The shaders themselves on this machine's WebGPU adapter (Mesa's lavapipe on a CPU machine) against the
    graph interpreter, for small programs that built: what the emitter means by the loop IR, which neither the
    validator nor the loop interpreter sees (a conversion that saturates where the dialect wraps, say). WGSL
    leaves NaN, infinities, subnormals and large arguments of its math open (implementations may assume no NaN
    or infinity, flush subnormals, bound ``sin``'s error on [-pi, pi] only), so the shaders run on
    :func:`_plain_for_wgsl` inputs and constants only, elements the interpreter makes NaN or infinite are not
    compared and the sign of a zero is free (drivers may ignore it: lavapipe folds ``x * 0.0`` to +0). Nothing
    where wgpu-py finds no adapter (:func:`backend_notes` says so)."""
    if executable is None or work > GPU_LOOP_WORK or not naga_available():
        return
    if any(_outside_i32(a) for a in run.inputs) or not all(_plain_for_wgsl(a) for a in run.inputs):
        return  # the runtime refuses out-of-range i64 by name; WGSL leaves special floats' math open
    constants = [constant_array(op.result) for op in run.optimized.walk() if op.name == "graph.constant"]
    if not all(_plain_for_wgsl(c) for c in constants):
        return  # a subnormal weight (which the driver may flush), say
    stage = f"{run.name} shaders on the adapter"
    run.judge(stage, run.guarded(stage, lambda: executable.run(list(run.inputs))), None, nonfinite_free=True)


WGSL_MAGNITUDE = 1e4
"""The largest float input the shaders run on: WGSL bounds the error of ``sin`` and ``cos`` on [-pi, pi] only, and
of ``exp`` and friends only where the result is finite."""


def _plain_for_wgsl(array: Any) -> bool:
    """Whether ``array`` holds no float that WGSL leaves open: every one finite, at most
    :data:`WGSL_MAGNITUDE`, and zero or normal (implementations may flush subnormals to zero)."""
    a = np.asarray(array)
    if a.dtype.kind != "f" or a.size == 0:
        return True
    magnitude = np.abs(a.astype(np.float64))
    normal = (magnitude == 0) | (magnitude >= np.finfo(a.dtype).tiny)
    return bool(np.all(np.isfinite(magnitude) & (magnitude <= WGSL_MAGNITUDE) & normal))


LOW_LIMITS_SHARE = 0.5
"""The share of WebGPU checks at random schedule points (cases with a ``schedule_seed``) built at low limits drawn
by :func:`low_webgpu_limits`."""


def low_webgpu_limits(run: BackendRun) -> Target | None:
    """For :data:`LOW_LIMITS_SHARE` of the cases with a schedule seed (drawn from it), a WebGPU target whose binding
    size is 30 to 95% of the program's largest tensor (whole 4-byte words) and whose storage buffers per shader
    stage are 4, 5 or 8, so that the limit passes cut the program (bands of rows and views, smaller fused groups,
    concat trees: :mod:`tensorium.lowering.webgpu_split`) and the loop interpreter checks what they made; None
    (the run's own target) otherwise. A program the limits cannot fit is refused, as an unsupported op is."""
    if run.schedule_seed is None:
        return None
    rng = np.random.default_rng([run.schedule_seed, 1])
    if rng.random() >= LOW_LIMITS_SHARE:
        return None
    largest = max((static_bytes(v) for op in run.optimized.walk() for v in op.results), default=0)
    if largest < 8:
        return None
    low = {
        "max_storage_buffer_binding_size": max(4, int(largest * rng.uniform(0.3, 0.95)) // 4 * 4),
        "max_storage_buffers_per_shader_stage": int(rng.choice([4, 5, 8])),
    }
    target = run.target
    limits = {name: min(value, low.get(name, value)) for name, value in target.limits}
    return replace(target, limits=tuple(sorted({**low, **limits}.items())))


def headline(message: str) -> str:
    """The line of a validator's message that says what is wrong: the first that reads ``... error...: what``,
    else the first that names an error, else the first."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for pattern in (r"error\b.*:\s*\S", r"(?i)error"):
        found = next((line for line in lines if re.search(pattern, line)), None)
        if found is not None:
            return found
    return lines[0] if lines else ""


CHECKS: dict[str, Callable[[BackendRun], None]] = {"cpu": check_cpu, "cuda": check_cuda, "webgpu": check_webgpu}
"""How the oracle checks a compiled backend of each kind."""


def check_backend(run: BackendRun) -> None:
    """Run the check of ``run.name``'s kind (the oracle calls it for every backend but the interpreter)."""
    CHECKS[kind_of(run.name)](run)


# --- WGSL validators ------------------------------------------------------------------------------
WGSLValidator = tuple[str, Callable[[Sequence[str]], list[str | None]]]
JS_FOLDER = Path(__file__).resolve().parent.parent / "backends" / "webgpu" / "js"
_DAWN_SCRIPT = """
import { create, globals } from "webgpu";
Object.assign(globalThis, globals);
let text = "";
for await (const chunk of process.stdin) text += chunk;
const adapter = await create([]).requestAdapter();
if (!adapter) throw new Error("Dawn found no adapter");
const device = await adapter.requestDevice();
const problems = [];
for (const code of JSON.parse(text)) {
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const error = await device.popErrorScope();
  const messages = info.messages
    .filter((m) => m.type === "error")
    .map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
  problems.push(error ? [error.message, ...messages].join("\\n") : messages.length ? messages.join("\\n") : null);
}
process.stdout.write(JSON.stringify(problems));
process.exit(0);
"""


def naga_problems(shaders: Sequence[str]) -> list[str | None]:
    """naga's verdict on each WGSL shader (None: valid), through wgpu-py's device."""
    from ..backends.webgpu.device import device_for

    device = device_for(parse_target("webgpu"))
    problems: list[str | None] = []
    for code in shaders:
        try:
            device.create_shader_module(code=code)
            problems.append(None)
        except Exception as e:  # wgpu-py raises GPUValidationError with naga's message
            problems.append(str(e))
    return problems


SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
"""The Vulkan driver Dawn runs on in a machine without a GPU (Debian's chromium package installs it)."""


def dawn_problems(shaders: Sequence[str]) -> list[str | None]:
    """Dawn's verdict on each WGSL shader (None: valid), in one Node process; TensoriumError if Node fails."""
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    if SWIFTSHADER_ICD.is_file():
        env["VK_ICD_FILENAMES"] = str(SWIFTSHADER_ICD)
    done = subprocess.run(
        ["node", "--input-type=module", "-e", _DAWN_SCRIPT],
        input=json.dumps(list(shaders)),
        capture_output=True,
        text=True,
        cwd=JS_FOLDER,
        env=env,
        timeout=120,
    )
    if done.returncode != 0:
        raise TensoriumError(f"Dawn under Node failed: {done.stderr.strip()[-500:]}")
    return list(json.loads(done.stdout))


@functools.cache
def naga_available() -> bool:
    """Whether wgpu-py is installed and finds an adapter (lavapipe on a CPU machine), so naga validates WGSL."""
    try:
        from ..backends.webgpu.device import device_for

        device_for(parse_target("webgpu"))
    except TensoriumError:
        return False
    return True


@functools.cache
def dawn_available() -> bool:
    """Whether Node, the npm ``webgpu`` package and an adapter for it are here, so Dawn's Tint validates WGSL."""
    if not shutil.which("node") or not (JS_FOLDER / "node_modules" / "webgpu").is_dir():
        return False
    try:
        dawn_problems(["@compute @workgroup_size(1) fn main() {}"])
    except (TensoriumError, OSError, subprocess.SubprocessError, ValueError):
        return False
    return True


def wgsl_validator() -> WGSLValidator | None:
    """``(name, validate)`` of the WGSL validator the fuzzer uses: naga where it is available (in process, a
    few milliseconds a program), else Dawn (a Node process per program: about a second, and more under load),
    else None; ``validate(shaders)`` gives, per shader, None for valid code or the validator's message."""
    if naga_available():
        return "naga", naga_problems
    if dawn_available():
        return "dawn", dawn_problems
    return None


__all__ = [
    "CHECKS",
    "DEFAULT_BACKENDS",
    "KIND_SHARES",
    "BackendError",
    "BackendRun",
    "backend_notes",
    "backend_target",
    "backends_for_execution",
    "check_backend",
    "compile_only",
    "kind_of",
    "parse_backends",
    "dawn_available",
    "naga_available",
    "wgsl_validator",
]
