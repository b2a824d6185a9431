"""PTX from loop-level kernels through LLVM's NVPTX target, and ptxas to check it (and make cubin).

    kernels = compile_ptx(lowered_module, parse_target("cuda:sm_90"))
    kernels.ptx                              # one PTX module holding every kernel
    kernels.launches["add_0"]                # its grid and block sizes
    cubin = assemble(kernels.ptx, "sm_90")   # ptxas; PtxasError with its messages when it rejects the PTX
    usage = resource_usage(kernels.ptx, "sm_90")   # registers and spill bytes per kernel (ptxas -v)

The math an NVIDIA GPU lacks (exp, log, tanh, erf) is decomposed into basic ops by the codegen's
``decompose`` stage before the emitter runs (:data:`NATIVE`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from llvmlite import binding as llvm

from ...errors import CompileError
from ...ir.core import Operation
from ...lowering.decompose import DECOMPOSABLE, TRIGONOMETRY
from ...targets import Target, TargetError
from ..llvm.emitter import KernelInfo
from ..llvm.jit import optimize
from .emitter import Launch, NVPTXEmitter

NATIVE = DECOMPOSABLE - {"loop.exp", "loop.log", "loop.tanh", "loop.erf"} - TRIGONOMETRY
"""The decomposable ops the NVPTX emitter has natively (integer division and bf16 rounding, as on the CPU; the
f32 math, trigonometry included, which NVPTX has no instruction for, is decomposed)."""
PTXAS_ENV = "TENSORIUM_PTXAS"


class PtxasError(CompileError):
    """ptxas rejected generated PTX (its messages follow)."""


@dataclass
class PtxModule:
    """Kernels compiled to one PTX module: the text, each kernel's info and launch sizes."""

    ptx: str
    arch: str
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    launches: dict[str, Launch] = field(default_factory=dict)
    llvm_ir: str = ""


def target_machine(target: Target, opt_level: int = 3) -> llvm.TargetMachine:
    """LLVM's NVPTX target machine for a CUDA ``target`` (its ``sm_XX`` and PTX ISA version)."""
    if target.kind != "cuda":
        raise TargetError(f"the CUDA backend cannot compile for target '{target}'")
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple(target.triple)
    features = ",".join(f"+{f}" for f in target.features)
    return machine.create_target_machine(cpu=target.cpu, features=features, opt=opt_level)


def compile_ptx(module: Operation, target: Target, opt_level: int = 3) -> PtxModule:
    """Every kernel of a loop-level ``module`` (scheduled and decomposed) as one PTX module for ``target``."""
    machine = target_machine(target, opt_level)
    emitter = NVPTXEmitter(target.triple, str(machine.target_data), target.cpu)
    ir_module = emitter.emit_module(module)
    text = str(ir_module)
    try:
        parsed = llvm.parse_assembly(text)
        parsed.verify()
    except RuntimeError as e:
        raise CompileError(f"the NVPTX emitter wrote invalid LLVM IR: {e}") from e
    optimize(parsed, machine, opt_level)
    try:
        ptx = machine.emit_assembly(parsed)
    except RuntimeError as e:
        raise CompileError(f"LLVM's NVPTX backend could not compile the kernels for {target}: {e}") from e
    return PtxModule(ptx, target.cpu, dict(emitter.kernels), dict(emitter.launches), text)


def ptxas_path() -> str | None:
    """The ptxas to run: ``$TENSORIUM_PTXAS``, else the one on PATH or in /usr/local/cuda/bin; None without one."""
    given = os.environ.get(PTXAS_ENV)
    if given:
        return given
    return shutil.which("ptxas") or shutil.which("ptxas", path="/usr/local/cuda/bin")


def assemble(ptx: str, arch: str, ptxas: str | None = None) -> bytes:
    """The cubin ptxas makes of ``ptx`` for ``arch`` (``sm_90``); PtxasError with its messages when it fails."""
    return _run_ptxas(ptx, arch, ptxas, [])[0]


def _run_ptxas(ptx: str, arch: str, ptxas: str | None, options: list[str]) -> tuple[bytes, str]:
    """ptxas on ``ptx`` for ``arch`` with ``options``: the cubin and what ptxas wrote to stderr; PtxasError with
    its messages when it rejects the PTX, CompileError without a ptxas."""
    tool = ptxas or ptxas_path()
    if tool is None:
        raise CompileError("ptxas was not found (install the CUDA toolkit or set TENSORIUM_PTXAS)")
    with tempfile.TemporaryDirectory(prefix="tensorium-ptxas-") as folder:
        source, cubin = Path(folder, "kernels.ptx"), Path(folder, "kernels.cubin")
        source.write_text(ptx)
        command = [tool, *options, f"-arch={arch}", str(source), "-o", str(cubin)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise PtxasError(f"ptxas rejected the PTX for {arch}:\n{done.stderr.strip() or done.stdout.strip()}")
        return cubin.read_bytes(), done.stderr


@dataclass(frozen=True)
class Usage:
    """What ptxas reports of one kernel: 32-bit registers per thread and bytes of local-memory spills."""

    registers: int
    spill_stores: int
    spill_loads: int


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def resource_usage(ptx: str, arch: str, ptxas: str | None = None) -> dict[str, Usage]:
    """Each kernel's :class:`Usage` as ``ptxas -v`` reports it for ``arch``; PtxasError when ptxas rejects the PTX,
    CompileError without a ptxas."""
    _, report = _run_ptxas(ptx, arch, ptxas, ["-v"])
    found: dict[str, Usage] = {}
    kernel, spills = None, (0, 0)
    for line in report.splitlines():
        if (entry := _ENTRY.search(line)) is not None:
            kernel, spills = entry.group(1), (0, 0)
        elif (spill := _SPILLS.search(line)) is not None:
            spills = (int(spill.group(1)), int(spill.group(2)))
        elif kernel is not None and (used := _REGISTERS.search(line)) is not None:
            found[kernel] = Usage(int(used.group(1)), *spills)
            kernel = None
    return found
