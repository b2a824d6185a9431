"""Small graph modules covering the kernel families, shared by the WebGPU tests."""

from __future__ import annotations

import numpy as np

from tensorium.backends import interp
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import func_body, lookup_func
from tensorium.ir.parser import parse_module
from tensorium.ir.types import storage_dtype

MODULES = {
    "elementwise": """
module {
  func.func @main(%a: tensor<3x50xf32>, %b: tensor<50xf32>) -> tensor<3x50xf32> {
    %0 = graph.mul %a, %b : (tensor<3x50xf32>, tensor<50xf32>) -> tensor<3x50xf32>
    %1 = graph.tanh %0 : (tensor<3x50xf32>) -> tensor<3x50xf32>
    %2 = graph.erf %1 : (tensor<3x50xf32>) -> tensor<3x50xf32>
    %3 = graph.max %2, %a : (tensor<3x50xf32>, tensor<3x50xf32>) -> tensor<3x50xf32>
    func.return %3 : tensor<3x50xf32>
  }
}""",
    "reduce_softmax": """
module {
  func.func @main(%a: tensor<6x40xf32>) -> (tensor<6xf32>, tensor<6x40xf32>, tensor<40xf32>) {
    %0 = graph.reduce_sum %a {axes = [1]} : (tensor<6x40xf32>) -> tensor<6xf32>
    %1 = graph.softmax %a {axis = 1} : (tensor<6x40xf32>) -> tensor<6x40xf32>
    %2 = graph.reduce_max %a {axes = [0]} : (tensor<6x40xf32>) -> tensor<40xf32>
    func.return %0, %1, %2 : tensor<6xf32>, tensor<6x40xf32>, tensor<40xf32>
  }
}""",
    "matmul": """
module {
  func.func @main(%a: tensor<2x5x12xf32>, %b: tensor<12x9xf32>) -> tensor<2x5x9xf32> {
    %0 = graph.matmul %a, %b : (tensor<2x5x12xf32>, tensor<12x9xf32>) -> tensor<2x5x9xf32>
    func.return %0 : tensor<2x5x9xf32>
  }
}""",
}


def module(name: str) -> Operation:
    """The module named ``name``."""
    return parse_module(MODULES[name])


def random_inputs(m: Operation, seed: int = 0) -> list[np.ndarray]:
    """Random inputs of ``@main`` (standard normal floats)."""
    rng = np.random.default_rng(seed)
    args = func_body(lookup_func(m, "main")).args  # type: ignore[arg-type]
    return [rng.standard_normal(a.type.shape).astype(storage_dtype(a.type.element)) for a in args]  # type: ignore[attr-defined]


def reference(m: Operation, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """What the interpreter computes."""
    return [np.asarray(r) for r in interp.run(m, inputs)]
