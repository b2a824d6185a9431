"""``loop.align_offset``: the interpreter, the LLVM emitter and the decomposition agree on what it means, and
the matrix-vector product it peels computes the same result at every alignment of its inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import loop_interp
from tensorium.backends.llvm.jit import compile_module
from tensorium.ir import InsertionPoint, func_body, make_func, make_module, set_results
from tensorium.ir.dialects import loop
from tensorium.ir.types import BufferType, f32, i64, index
from tensorium.lowering.decompose import decompose
from tensorium.targets import parse_target


def offsets_kernel(count: int) -> tm.ir.Operation:
    """``out[j] = align_offset(a[j], 64)`` for j in [0, count]: the last one is one past the end."""
    f = make_func("offsets", [BufferType((count,), f32), BufferType((count + 1,), i64)])
    a, out = func_body(f).args
    with InsertionPoint(func_body(f)):
        with loop.for_(0, count + 1) as j:
            loop.store(loop.cast(loop.align_offset(a, j, bytes=64), dtype=i64), out, j)
    set_results(f, [])
    return make_module([f])


def unaligned(count: int, skip: int) -> np.ndarray:
    """``count`` f32 starting ``skip`` elements after a 64-byte boundary."""
    buffer = np.zeros(count + 32, np.float32)
    start = (-buffer.ctypes.data % 64) // 4 + skip
    return buffer[start : start + count]


@pytest.mark.parametrize("skip", [0, 1, 5, 15])
def test_interpreter_counts_elements_to_the_next_boundary(skip: int) -> None:
    a = unaligned(20, skip)
    out = np.zeros(21, np.int64)
    loop_interp.run(offsets_kernel(20), [a, out])
    np.testing.assert_array_equal(out, [(16 - (skip + j) % 16) % 16 for j in range(21)])


@pytest.mark.parametrize("skip", [0, 3, 8])
def test_llvm_agrees_with_the_interpreter(skip: int) -> None:
    a = unaligned(20, skip)
    want, got = np.zeros(21, np.int64), np.zeros(21, np.int64)
    loop_interp.run(offsets_kernel(20), [a, want])
    compile_module(offsets_kernel(20)).run("offsets", a, got)
    np.testing.assert_array_equal(got, want)


def test_targets_that_cannot_tell_get_zero() -> None:
    module = offsets_kernel(4)
    assert decompose(module) == 1
    assert not any(op.name == "loop.align_offset" for op in module.walk())
    out = np.full(5, -1, np.int64)
    loop_interp.run(module, [unaligned(4, 3), out])
    np.testing.assert_array_equal(out, 0)


def test_bytes_must_be_a_power_of_two() -> None:
    f = make_func("k", [BufferType((4,), f32)])
    (a,) = func_body(f).args
    with InsertionPoint(func_body(f)):
        zero = loop.const(value=0, dtype=index)
        with pytest.raises(tm.errors.VerifyError, match="power of two"):
            loop.align_offset(a, zero, bytes=48)


@pytest.mark.parametrize("target", ["cpu", "cpu:x86-64-v3"])
@pytest.mark.parametrize(("align", "rows"), [(0, 1), (64, 1), (64, 4), (0, 2)])
def test_peeled_matrix_vector_product_at_every_alignment(target: str, align: int, rows: int) -> None:
    if not parse_target(target).runs_here():
        pytest.skip(f"{target} code does not run on this host")
    probe = tm.compile(lambda a, v: a @ v, target=target)
    probe(np.ones((3, 5), np.float32), np.ones(5, np.float32))
    (kernel,) = probe.tunable_kernels()
    point = re.sub(r"rows=\d+", f"rows={rows}", re.sub(r"align=\d+", f"align={align}", str(kernel.default)))
    f = tm.compile(lambda a, v: a @ v, target=target, schedules={kernel.key: point})
    rng = np.random.default_rng(0)
    for height, depth in [(3, 5), (7, 1), (5, 17), (9, 100), (4, 257), (1, 33)]:
        for skip in (0, 1, 7, 13):
            a = unaligned(height * depth, skip).reshape(height, depth)
            a[...] = rng.standard_normal(a.shape)
            x = rng.standard_normal(depth).astype(np.float32)
            np.testing.assert_allclose(f(a, x), a.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)
