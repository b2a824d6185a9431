"""LLVM target machines for CPU targets.

Both :mod:`.jit` (compiling kernels) and :mod:`.runtime` (the thread pool and the OpenMP glue it JIT-compiles
once) need a target machine; this module holds the one way to make it, so imports go ``jit -> runtime -> machine``.
"""

from __future__ import annotations

from llvmlite import binding as llvm

from ...targets import Target, TargetError, host_target

__all__ = ["host_target_machine", "target_machine"]


def target_machine(target: Target, opt_level: int = 3, reloc: str = "pic") -> llvm.TargetMachine:
    """A new LLVM target machine for a CPU ``target`` (triple, CPU name and features), position independent.

    Each JIT engine takes ownership of (and frees) its target machine, so every compilation makes one.
    """
    if target.kind != "cpu":
        raise TargetError(f"the LLVM CPU backend cannot compile for target '{target}'")
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple(target.triple)
    return machine.create_target_machine(
        cpu=target.cpu, features=target.llvm_features, opt=opt_level, reloc=reloc, jit=True
    )


def host_target_machine(opt_level: int = 3) -> llvm.TargetMachine:
    """A new target machine for this machine's CPU (:func:`~tensorium.targets.host_target`)."""
    return target_machine(host_target(), opt_level)
