"""Data-dependent indices are checked on every backend that can fail a kernel: an embedding index past its
table is an error naming the op (CPU), a trap (CUDA), and left to WebGPU's bounds-clamped accesses."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.cuda.ptx import assemble, compile_ptx, ptxas_path
from tensorium.backends.webgpu import compile_shaders
from tensorium.errors import InterpreterError
from tensorium.ir import Operation, graph
from tensorium.ir.dialects.builtin import functions
from tensorium.ir.types import Sym, TensorType, f32, i32, i64
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.lowering.webgpu_schedule import map_to_workgroups
from tensorium.targets import parse_target
from tensorium.testing import build_module

TABLE = TensorType((10, 4), f32)


def _embedding(indices: TensorType) -> Operation:
    return build_module([TABLE, indices], lambda w, i: graph.embedding(w, i))


def test_compiled_embedding_with_an_index_past_the_table_is_an_error_not_a_read_outside_it() -> None:
    compiled = CpuExecutable.build(_embedding(TensorType((Sym("n"),), i64)))
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    np.testing.assert_array_equal(compiled.run([table, np.array([9, 0], np.int64)])[0], table[[9, 0]])
    for bad in ([1, 10], [-1], [3, 2**40, 5]):
        with pytest.raises(InterpreterError) as info:
            compiled.run([table, np.array(bad, np.int64)])
        assert str(info.value) == (
            "'graph.embedding': an index is out of range for dimension 0 of size 10 (allowed: 0 to 9)"
        )


def test_a_symbolic_table_size_is_named_in_the_message() -> None:
    module = build_module([TensorType((Sym("v"), 4), f32), TensorType((2,), i64)], lambda w, i: graph.embedding(w, i))
    compiled = CpuExecutable.build(module)
    with pytest.raises(InterpreterError, match=r"allowed: 0 to size - 1, its size known at run time"):
        compiled.run([np.zeros((3, 4), np.float32), np.array([0, 3], np.int64)])


def test_cuda_kernels_trap_on_an_index_out_of_range() -> None:
    target = parse_target("cuda:sm_90")
    lowered = lower_and_schedule(_embedding(TensorType((6,), i64)), target)
    module = compile_ptx(lowered, target)
    assert "trap;" in module.ptx
    if ptxas_path() is not None:
        assert assemble(module.ptx, "sm_90")[:4] == b"\x7fELF"


def test_webgpu_leaves_the_check_out() -> None:
    target = parse_target("webgpu")
    lowered = lower_and_schedule(_embedding(TensorType((6,), i32)), target, schedule=False)
    assert any(op.name == "loop.check" for op in lowered.walk())
    for kernel in functions(lowered):
        map_to_workgroups(kernel, target)
    shaders = compile_shaders(lowered, target)
    assert shaders and all("out of range" not in shader.wgsl for shader in shaders.values())
