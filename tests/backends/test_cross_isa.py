"""One model compiled for several x86 ISAs: each uses only its own registers, the GEMM micro-kernels do not
spill, and every variant this host can run agrees with the interpreter."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation, Value
from tensorium.ir.dialects import graph
from tensorium.ir.types import TensorType, f32
from tensorium.passes import PassManager
from tensorium.targets import TargetError, parse_target
from tensorium.testing import build_module

RNG = np.random.default_rng(5)
W1 = RNG.standard_normal((64, 96)).astype(np.float32)
B1 = RNG.standard_normal(96).astype(np.float32)
W2 = RNG.standard_normal((96, 48)).astype(np.float32)
INPUTS = [RNG.standard_normal((33, 64)).astype(np.float32), RNG.standard_normal((48, 40)).astype(np.float32)]

ISAS = {
    "cpu:x86-64": {"forbidden": ("%ymm", "%zmm"), "required": "%xmm", "multiply": "mulps"},
    "cpu:x86-64-v3": {"forbidden": ("%zmm",), "required": "%ymm", "multiply": "vfmadd"},
    "cpu:skylake-avx512": {"forbidden": (), "required": "%zmm", "multiply": "vfmadd"},
}
"""What the code of each named target must (not) contain; the host's comes from its vector width."""


def expectations(target: str) -> Mapping[str, object]:
    if target in ISAS:
        return ISAS[target]
    host = parse_target(target)
    widest = {512: "%zmm", 256: "%ymm"}.get(host.vector_bits, "%xmm")
    forbidden = {512: (), 256: ("%zmm",)}.get(host.vector_bits, ("%ymm", "%zmm"))
    return {"forbidden": forbidden, "required": widest, "multiply": "vfmadd" if host.fma else "mulps"}


SPILL = re.compile(r"(?<![\w)])-?\d*\(%rsp\)|-\d+\(%rbp\)")
"""A stack slot: ``N(%rsp)``, or ``-N(%rbp)`` with a frame pointer. An indexed ``N(%rsp,%reg)`` is a stack
array (a packed panel of B), not a spilled register; ``(%rbp,%reg)`` is %rbp used as a plain register."""


def mlp_module(target: str) -> Operation:
    """Two layers with constant weights (packed for ``target``) and a product of the result with an input."""

    def const(array: np.ndarray) -> Value:
        return graph.constant(value=DenseAttr(array, TensorType(array.shape, f32)))  # type: ignore[no-any-return]

    def body(x: Value, z: Value) -> Value:
        hidden = graph.relu(graph.add(graph.matmul(x, const(W1)), const(B1)))
        return graph.matmul(graph.matmul(hidden, const(W2)), z)  # type: ignore[no-any-return]

    module = build_module([TensorType(a.shape, f32) for a in INPUTS], body)
    PassManager.parse(f'pack-weights{{target="{target}"}},fuse').run(module)
    return module


def functions_of(assembly: str) -> dict[str, list[str]]:
    """The instruction lines of each function of an assembly text, by symbol."""
    found: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for line in assembly.splitlines():
        label = re.match(r"^([\w.$]+):", line)
        if label and not label.group(1).startswith("."):
            lines = found.setdefault(label.group(1), [])
        elif lines is not None:
            lines.append(line)
    return found


def basic_blocks(lines: list[str]) -> Iterator[list[str]]:
    """Instructions grouped into basic blocks: a label or a jump ends one."""
    block: list[str] = []
    for line in lines:
        text = line.strip()
        if re.match(r"^\.?[\w.$]+:", line) or re.match(r"^#\s*%bb\.\d+:", text):
            if block:
                yield block
            block = []
        elif line.startswith("\t") and text and not text.startswith((".", "#")):
            block.append(text)
            if re.match(r"j\w+\s", text):
                yield block
                block = []
    if block:
        yield block


def hottest_block(lines: list[str], multiply: str) -> list[str]:
    """The basic block with the most multiply(-add) instructions: the GEMM's innermost loop body."""
    return max(basic_blocks(lines), key=lambda b: sum(multiply in i for i in b), default=[])


@pytest.fixture(scope="module", params=[*ISAS, "cpu"])
def compiled(request: pytest.FixtureRequest) -> tuple[str, Operation, CpuExecutable]:
    module = mlp_module(request.param)
    return request.param, module, CpuExecutable.build(module, target=parse_target(request.param))


def test_each_isa_uses_only_its_registers(compiled: tuple[str, Operation, CpuExecutable]) -> None:
    target, _, exe = compiled
    assembly = exe.kernels.assembly()
    expect = expectations(target)
    assert str(expect["required"]) in assembly
    forbidden = expect["forbidden"]
    assert isinstance(forbidden, tuple)
    for register in forbidden:
        assert register not in assembly, f"{target} code uses {register}"


def gemm_kernels(assembly: str) -> dict[str, list[str]]:
    """The instructions of each GEMM kernel: its entry and the functions outlined from it (parallel bodies)."""
    kernels: dict[str, list[str]] = {}
    for name, lines in functions_of(assembly).items():
        kernel = re.match(r"tensorium\.kernel\.([^.]*matmul[^.]*)", name)
        if kernel:
            kernels.setdefault(kernel.group(1), []).extend([f"{name}:", *lines])
    return kernels


def test_gemm_inner_loops_keep_everything_in_registers(compiled: tuple[str, Operation, CpuExecutable]) -> None:
    target, _, exe = compiled
    multiply, widest = (str(expectations(target)[key]) for key in ("multiply", "required"))
    kernels = gemm_kernels(exe.kernels.assembly())
    assert len(kernels) == 3  # two weight GEMMs and one of two inputs
    for name, lines in kernels.items():
        block = hottest_block(lines, multiply)
        assert sum(multiply in i for i in block) >= 6, f"{target} {name}: {block}"
        assert all(widest in i for i in block if multiply in i), f"{target} {name} multiplies on narrower vectors"
        spills = [i for i in block if SPILL.search(i)]
        assert not spills, f"{target} {name} spills in its inner loop: {spills}"


def test_variants_the_host_runs_match_the_interpreter(compiled: tuple[str, Operation, CpuExecutable]) -> None:
    target, module, exe = compiled
    try:
        parse_target(target).check_runs_here()
    except TargetError:
        pytest.skip(f"this host cannot run {target} code")
    (got,) = exe.run(INPUTS)
    (want,) = interp.run(module, INPUTS)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_spill_pattern_tells_slots_from_arrays() -> None:
    assert SPILL.search("vmovups 64(%rsp), %zmm1") and SPILL.search("movq -56(%rbp), %rax")
    assert not SPILL.search("movups 424(%rsp,%r13,8), %xmm0") and not SPILL.search("vbroadcastss (%rbp,%rax), %ymm0")
