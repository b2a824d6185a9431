"""Quantized ONNX models import into the quant dialect and compute what onnxruntime computes: a QDQ weight
(DequantizeLinear of constant int8/uint4 codes before a MatMul), com.microsoft MatMulNBits (2, 4, 8 bits,
with and without zero points), QuantizeLinear and MatMulInteger."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.ir.dialects.builtin import func_body, functions

from .conftest import assert_close_to_float_path, run_on_path

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, TensorProto, numpy_helper = onnx.helper, onnx.TensorProto, onnx.numpy_helper


def model_of(nodes: list, inputs: list, outputs: list, initializers: list, ms: bool = False) -> object:
    opsets = [helper.make_opsetid("", 21)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def ort_run(model: object, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """onnxruntime's result with its graph optimizations off: they turn a QDQ weight matmul into a dynamically
    quantized one (8-bit activations), which is not what the ONNX spec computes (0.4 off on values near 60)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])  # type: ignore[attr-defined]
    return session.run(None, feeds)[0]  # type: ignore[no-any-return]


def check_targets(model: object, x: np.ndarray, want: np.ndarray) -> None:
    """The interpreter and the CPU's float path compute what onnxruntime computes; the CPU's default path within
    the rounding of 8-bit activations of that."""
    np.testing.assert_allclose(tm.compile(model, target="interp", cache=False)(x), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_on_path(model, [x], "float"), want, rtol=1e-4, atol=1e-4)
    assert_close_to_float_path(tm.compile(model, cache=False)(x), want)


def _io(name: str, shape: list[int], elem: int = TensorProto.FLOAT) -> object:
    return helper.make_tensor_value_info(name, elem, shape)


def nbits_model(bits: int, cols: int, depth: int, block: int, zero_points: bool, seed: int) -> object:
    rng = np.random.default_rng(seed)
    blocks = -(-depth // block)
    blob = rng.integers(0, 256, (cols, blocks, block * bits // 8), dtype=np.uint8)
    scales = (rng.random(cols * blocks) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(blob, "B"), numpy_helper.from_array(scales, "scales")]
    names = ["A", "B", "scales"]
    if zero_points:
        zp = rng.integers(0, 256, cols * -(-blocks * bits // 8), dtype=np.uint8)
        inits.append(numpy_helper.from_array(zp, "zp"))
        names.append("zp")
    node = helper.make_node(
        "MatMulNBits", names, ["Y"], domain="com.microsoft", K=depth, N=cols, bits=bits, block_size=block
    )
    return model_of([node], [_io("A", [2, depth])], [_io("Y", [2, cols])], inits, ms=True)


@pytest.mark.parametrize(("bits", "zero_points"), [(2, True), (4, False), (4, True), (8, True)])
def test_matmul_nbits_matches_onnxruntime(bits: int, zero_points: bool) -> None:
    model = nbits_model(bits, cols=24, depth=64, block=32, zero_points=zero_points, seed=bits)
    a = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    want = ort_run(model, {"A": a})
    check_targets(model, a, want)


def test_matmul_nbits_imports_as_a_k_bit_matmul() -> None:
    from tensorium.frontend.onnx_import import import_onnx

    model = nbits_model(4, cols=8, depth=64, block=32, zero_points=False, seed=1)
    imported = import_onnx(model)  # type: ignore[arg-type]
    names = [op.name for op in func_body(functions(imported.module)[0]).ops]
    assert "quant.matmul" in names and "graph.matmul" not in names


@pytest.mark.parametrize(("elem", "per_axis"), [(TensorProto.INT8, True), (TensorProto.UINT4, False)])
def test_qdq_weight_matches_onnxruntime(elem: int, per_axis: bool) -> None:
    rng = np.random.default_rng(elem)
    depth, cols = 64, 48
    signed = elem == TensorProto.INT8
    codes = rng.integers(-128 if signed else 0, 128 if signed else 16, (depth, cols))
    scale = (rng.random(cols if per_axis else ()) * 0.05 + 0.01).astype(np.float32)
    zero = rng.integers(-3 if signed else 0, 4 if signed else 16, cols if per_axis else ())
    np_type = {TensorProto.INT8: np.int8, TensorProto.UINT4: np.uint8}[elem]
    inits = [
        helper.make_tensor("W", elem, codes.shape, codes.astype(np_type).reshape(-1).tolist()),
        numpy_helper.from_array(scale, "s"),
        helper.make_tensor("z", elem, zero.shape, np.atleast_1d(zero).astype(np_type).tolist()),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["W", "s", "z"], ["Wf"], axis=1),
        helper.make_node("MatMul", ["X", "Wf"], ["Y"]),
    ]
    model = model_of(nodes, [_io("X", [3, depth])], [_io("Y", [3, cols])], inits)
    x = rng.standard_normal((3, depth)).astype(np.float32)
    want = ort_run(model, {"X": x})
    from tensorium.frontend.onnx_import import import_onnx
    from tensorium.passes import PassManager

    imported = import_onnx(model)  # type: ignore[arg-type]
    PassManager.parse("canonicalize").run(imported.module)
    names = [op.name for op in func_body(functions(imported.module)[0]).ops]
    assert "quant.matmul" in names and "graph.matmul" not in names, names
    check_targets(model, x, want)


def test_quantize_linear_and_matmul_integer_match_onnxruntime() -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4, 16)) * 3).astype(np.float32)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(3, np.uint8), "z"),
        numpy_helper.from_array(rng.integers(0, 255, (16, 5), dtype=np.uint8), "B"),
        numpy_helper.from_array(np.array(7, np.uint8), "bz"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["X", "s", "z"], ["Q"]),
        helper.make_node("MatMulInteger", ["Q", "B", "z", "bz"], ["Y"]),
    ]
    model = model_of(nodes, [_io("X", [4, 16])], [_io("Y", [4, 5], TensorProto.INT32)], inits)
    want = ort_run(model, {"X": x})
    np.testing.assert_array_equal(tm.compile(model, target="interp", cache=False)(x), want)
