"""Dim expressions: products of named dims (``[batch*seq]``) in types, what flattening named dims gives, and
``graph.reshape_dims``, which takes run-time sizes from other tensors to undo the flattening; both through the
interpreter, the CPU backend, WebGPU on lavapipe (the ``gpu`` fixture skips, saying why, where there is none)
and PTX (ptxas where installed)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.interp import run
from tensorium.errors import TensoriumError
from tensorium.ir.parser import ParseError, parse_module
from tensorium.ir.shapes import solve_reshape
from tensorium.ir.types import DYN, Sym, dim_known, dim_size
from tensorium.ir.verifier import verify

B, S = Sym("b"), Sym("s")

FLATTEN_AND_BACK = """
func.func @main(%x: tensor<[b]x[s]x8xf32>) -> tensor<[b]x2x[4*s]xf32> {
  %f = graph.reshape %x {shape = [-1, 8]} : (tensor<[b]x[s]x8xf32>) -> tensor<[b*s]x8xf32>
  %g = graph.softmax %f {axis = -1} : (tensor<[b*s]x8xf32>) -> tensor<[b*s]x8xf32>
  %y = graph.reshape_dims %g, %x, %x {shape = [-1, -1, 2, 4], positions = [0, 1], axes = [0, 1]}
       : (tensor<[b*s]x8xf32>, tensor<[b]x[s]x8xf32>, tensor<[b]x[s]x8xf32>) -> tensor<[b]x[s]x2x4xf32>
  %t = graph.transpose %y {perm = [0, 2, 1, 3]} : (tensor<[b]x[s]x2x4xf32>) -> tensor<[b]x2x[s]x4xf32>
  %z = graph.reshape %t {shape = [0, 2, -1]} : (tensor<[b]x2x[s]x4xf32>) -> tensor<[b]x2x[4*s]xf32>
  %r = graph.relu %z : (tensor<[b]x2x[4*s]xf32>) -> tensor<[b]x2x[4*s]xf32>
  func.return %r : tensor<[b]x2x[4*s]xf32>
}
"""
SHAPES = [(2, 3, 8), (5, 1, 8), (1, 7, 8), (0, 4, 8)]


def expected(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True)) if x.size else x
    soft = e / e.sum(-1, keepdims=True) if x.size else x
    b, s, _ = x.shape
    return np.maximum(soft.reshape(b, s, 2, 4).transpose(0, 2, 1, 3).reshape(b, 2, 4 * s), 0)


def inputs(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def test_a_product_dim_is_canonical_and_round_trips_through_the_text() -> None:
    assert Sym("s*b") == Sym("b*s") and str(Sym("s*2*b*4")) == "[8*b*s]"
    assert Sym("b*s").factors == (1, ("b", "s")) and Sym("b*s").is_product and not B.is_product
    assert Sym.product(3, ["s", "b"]) == Sym("3*b*s") and Sym.product(1, ["b"]) == B and Sym.product(6, []) == 6
    assert dim_size(Sym("8*b*s"), {"b": 2, "s": 5}) == 80 and dim_size(B, {"b": 4}) == 4
    assert dim_known(Sym("b*s"), {"b", "s"}) and not dim_known(Sym("b*s"), {"b"}) and not dim_known(DYN, {"b"})
    with pytest.raises(KeyError, match="s"):
        dim_size(Sym("b*s"), {"b": 2})
    module = parse_module(FLATTEN_AND_BACK)
    verify(module)
    assert str(parse_module(str(module))) == str(module)
    for bad in ("[2]", "[b*]", "[b**s]", "[*b]"):
        with pytest.raises(ParseError, match="expected dimensions like"):
            parse_module(f"func.func @main(%x: tensor<{bad}x4xf32>) {{ func.return }}")


def test_flattening_named_dims_gives_their_product() -> None:
    assert solve_reshape([B, S, 8], [-1, 8]) == (Sym("b*s"), 8)
    assert solve_reshape([B, S, 8], [-1]) == (Sym("8*b*s"),)
    assert solve_reshape([Sym("8*b*s")], [2, -1]) == (2, Sym("4*b*s"))
    assert solve_reshape([B, 8], [-1, 8]) == (B, 8)
    assert solve_reshape([B, 4], [-1, 8]) == (DYN, 8)  # 4*b/8 is not a product of names
    assert solve_reshape([DYN, S], [-1]) == (DYN,)


def test_reshape_dims_checks_its_sources_and_positions() -> None:
    def module(attrs: str, result: str = "tensor<[b]x[s]x8xf32>") -> str:
        return f"""func.func @main(%x: tensor<[b*s]x8xf32>, %y: tensor<[b]x[s]xf32>) -> {result} {{
          %r = graph.reshape_dims %x, %y {attrs} : (tensor<[b*s]x8xf32>, tensor<[b]x[s]xf32>) -> {result}
          func.return %r : {result}
        }}"""

    verify(parse_module(module("{shape = [-1, -1, 8], positions = [0], axes = [0]}")))  # s inferred
    cases = {
        "{shape = [-1, -1, 8], positions = [0, 1], axes = [0]}": "1 source\\(s\\) but 2 position\\(s\\)",
        "{shape = [-1, 2, 8], positions = [1], axes = [0]}": "distinct positions of a -1",
        "{shape = [-1, -1, -1], positions = [0], axes = [0]}": "more than one -1",
        "{shape = [-1, -1, 8], positions = [0], axes = [5]}": "axis of source #0 5 is out of range",
        "{shape = [-1, 3, -2], positions = [0], axes = [0]}": "negative size",
    }
    for attrs, message in cases.items():
        with pytest.raises(Exception, match=message):
            verify(parse_module(module(attrs)))
    three = """func.func @main(%x: tensor<[b*s]x8xf32>, %y: tensor<[b]x[s]xf32>) -> tensor<[b]x[s]x3xf32> {
      %r = graph.reshape_dims %x, %y, %y {shape = [-1, -1, 3], positions = [0, 1], axes = [0, 1]}
           : (tensor<[b*s]x8xf32>, tensor<[b]x[s]xf32>, tensor<[b]x[s]xf32>) -> tensor<[b]x[s]x3xf32>
      func.return %r : tensor<[b]x[s]x3xf32>
    }"""
    with pytest.raises(Exception, match="cannot reshape"):  # 3*b*s elements out of 8*b*s
        verify(parse_module(three))


def test_the_interpreter_checks_the_sources_sizes() -> None:
    text = """func.func @main(%x: tensor<[n]xf32>, %y: tensor<[b]x[s]xf32>) -> tensor<[b]x[s]xf32> {
      %r = graph.reshape_dims %x, %y, %y {shape = [-1, -1], positions = [0, 1], axes = [0, 1]}
           : (tensor<[n]xf32>, tensor<[b]x[s]xf32>, tensor<[b]x[s]xf32>) -> tensor<[b]x[s]xf32>
      func.return %r : tensor<[b]x[s]xf32>
    }"""
    x, y = np.arange(6, dtype=np.float32), np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(run(parse_module(text), [x, y])[0], x.reshape(2, 3))
    with pytest.raises(TensoriumError, match="cannot reshape"):
        run(parse_module(text), [x, np.zeros((2, 2), np.float32)])


@pytest.mark.parametrize("shape", SHAPES)
def test_flatten_and_back_on_the_interpreter_and_the_cpu(shape: tuple[int, ...]) -> None:
    x = inputs(shape)
    want = expected(x)
    (interpreted,) = run(parse_module(FLATTEN_AND_BACK), [x])
    (compiled,) = CpuExecutable.build(parse_module(FLATTEN_AND_BACK)).run([x])
    assert interpreted.shape == compiled.shape == want.shape
    np.testing.assert_allclose(interpreted, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(compiled, want, rtol=1e-6, atol=1e-7)


def test_flatten_and_back_assembles_for_cuda() -> None:
    from tensorium.backends.cuda.executable import CudaExecutable
    from tensorium.backends.cuda.ptx import ptxas_path

    executable = CudaExecutable.build(parse_module(FLATTEN_AND_BACK))
    assert ".entry" in executable.ptx.ptx
    if ptxas_path() is not None:
        assert executable.cubin, "ptxas ran but left no cubin"


def test_flatten_and_back_on_webgpu(gpu: None) -> None:
    from tensorium.backends.webgpu import WebGPUExecutable

    executable = WebGPUExecutable.build(parse_module(FLATTEN_AND_BACK))
    for shape in SHAPES:
        x = inputs(shape)
        np.testing.assert_allclose(executable.run([x])[0], expected(x), rtol=1e-5, atol=1e-6)
