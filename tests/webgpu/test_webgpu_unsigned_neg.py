"""Negation of unsigned integers on WebGPU: WGSL has no unary minus for ``u32``, so the emitter writes
``0u - a`` (wrapping modulo the type's width, as the interpreter does). Found by the fuzzer: a ``graph.neg`` of
``u9`` made WGSL that naga rejected."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends.interp import run
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.parser import parse_module
from tensorium.ir.storage import storage_dtype
from tensorium.ir.types import parse_scalar_type

TYPES = ("u9", "u8", "u16", "u32", "i32", "i8")


def neg(element: str) -> str:
    return f"""
module {{
  func.func @main(%a: tensor<6x{element}>) -> tensor<6x{element}> {{
    %0 = graph.neg %a : (tensor<6x{element}>) -> tensor<6x{element}>
    func.return %0 : tensor<6x{element}>
  }}
}}"""


@pytest.mark.parametrize("element", TYPES)
def test_unsigned_negation_is_a_wrapping_subtraction(element: str) -> None:
    (shader,) = WebGPUExecutable.build(parse_module(neg(element))).shaders.values()
    unsigned = element.startswith("u")
    assert ("0u - " in shader.wgsl) == unsigned
    assert ("-(" in shader.wgsl) == (not unsigned)


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("element", TYPES)
def test_negation_matches_the_interpreter_on_lavapipe(element: str) -> None:
    module = parse_module(neg(element))
    width = int(element[1:])
    if element.startswith("u"):
        values = [0, 1, 2, (1 << width) - 1, 1 << (width - 1), 77]
    else:
        values = [0, 1, -1, -(1 << (width - 1)), (1 << (width - 1)) - 1, 77]
    a = np.array(values).astype(storage_dtype(parse_scalar_type(element)))
    want = np.asarray(run(module, [a])[0])
    (got,) = WebGPUExecutable.build(module).run([a])
    np.testing.assert_array_equal(got, want)
