"""Kernels over the storage-buffer limit are split (fused groups cut, concats made trees), checked at
artificially low limits on the interpreter and on lavapipe."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium
from tensorium import nn
from tensorium.backends import interp
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError
from tensorium.frontend.tracer.tensor import trace_function
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import func_body, lookup_func
from tensorium.ir.printer import print_module
from tensorium.ir.verifier import verify
from tensorium.lowering.webgpu_split import bindings_of, split_for_storage_buffers
from tensorium.passes import PassManager
from tensorium.targets import parse_target

INPUTS = [np.random.default_rng(n).standard_normal((3, 4)).astype(np.float32) for n in range(9)]


def chain(*xs: object) -> object:
    """Nine inputs and a constant into one fused elementwise chain (eleven bindings)."""
    s = xs[0]
    for x in xs[1:]:
        s = s * 0.5 + nn.tanh(x)  # type: ignore[operator]
    return s


def joined(*xs: object) -> object:
    """A concat of nine inputs (ten bindings)."""
    return nn.concat(list(xs), axis=1)


def _fused_module(fn: object) -> Operation:
    module = trace_function(fn, INPUTS).module  # type: ignore[arg-type]
    PassManager.parse("canonicalize,cse,fuse").run(module)
    return module


def _ops(module: Operation) -> list[Operation]:
    main = lookup_func(module, "main")
    assert main is not None
    return [op for op in func_body(main).ops if op.name != "func.return"]


@pytest.mark.parametrize("fn", [chain, joined])
@pytest.mark.parametrize("limit", [8, 4, 3])
def test_split_ops_fit_the_limit_and_compute_the_same(fn: object, limit: int) -> None:
    module = _fused_module(fn)
    before = print_module(module)
    assert max(bindings_of(op) for op in _ops(module)) >= 10
    split = split_for_storage_buffers(module, parse_target(f"webgpu:max_storage_buffers_per_shader_stage={limit}"))
    verify(split)
    assert print_module(module) == before, "the caller's module is left as it was"
    assert max(bindings_of(op) for op in _ops(split)) <= limit
    if fn is chain and limit > 3:
        assert sum(op.name == "graph.fused" for op in _ops(split)) >= 2, "what fits stays fused"
    np.testing.assert_array_equal(interp.run(split, INPUTS)[0], interp.run(module, INPUTS)[0])


def test_modules_within_the_limit_are_returned_as_they_are() -> None:
    module = _fused_module(chain)
    assert split_for_storage_buffers(module, parse_target("webgpu:max_storage_buffers_per_shader_stage=11")) is module


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("fn", [chain, joined])
def test_split_kernels_run_on_lavapipe_at_a_low_limit(fn: object) -> None:
    spec = "webgpu:max_storage_buffers_per_shader_stage=4"
    model = tensorium.compile(fn, target=spec)
    got = model(*INPUTS)
    np.testing.assert_allclose(got, tensorium.compile(fn, target="interp")(*INPUTS), rtol=1e-6, atol=1e-6)
    shaders = model.artifact.executable.shaders  # type: ignore[union-attr]
    assert max(len(s.bindings) for s in shaders.values()) <= 4


def test_an_op_that_alone_binds_too_many_is_named() -> None:
    module = trace_function(lambda a, b: a + b, INPUTS[:2]).module
    with pytest.raises(CompileError, match=r"kernel @add_0 binds 3 storage buffers.*= 2"):
        WebGPUExecutable.build(module, target=parse_target("webgpu:max_storage_buffers_per_shader_stage=2"))
