"""The ONNX importer: small models built with onnx.helper against onnxruntime (or onnx's numpy
reference), opset conventions, constant folding, symbolic dims, and the errors users can cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tensorium.backends.interp import run  # noqa: E402
from tensorium.frontend.common import UnsupportedOpsError  # noqa: E402
from tensorium.frontend.onnx_backend import TensoriumBackend  # noqa: E402
from tensorium.frontend.onnx_import import OnnxError, import_onnx  # noqa: E402
from tensorium.ir import Sym, TensorType, f32, print_module  # noqa: E402
from tensorium.ir.dialects.builtin import func_type, functions  # noqa: E402

RNG = np.random.default_rng(0)


def _model(
    nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: dict[str, np.ndarray], opset: int = 17
) -> Any:
    graph = helper.make_graph(
        nodes, "g", inputs, outputs, [numpy_helper.from_array(v, name=k) for k, v in inits.items()]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _reference(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    try:
        import onnxruntime
    except ImportError:
        from onnx.reference import ReferenceEvaluator

        return list(ReferenceEvaluator(model).run(None, feeds))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _weights(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _mlp() -> Any:
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["m"], name="fc2"),
        helper.make_node("Add", ["m", "b2"], ["logits"], name="bias2"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    inits = {"w1": _weights(8, 4), "b1": _weights(8), "w2": _weights(8, 3), "b2": _weights(3)}
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    return _model(nodes, [x], [y], inits)


def test_mlp_matches_reference_for_several_batch_sizes() -> None:
    model = _mlp()
    imported = import_onnx(model)
    (main,) = functions(imported.module)
    assert func_type(main).inputs == (TensorType((Sym("batch"), 4), f32),)
    assert imported.input_names == ["x"] and imported.output_names == ["y"]
    for batch in (1, 5, 0):
        x = RNG.standard_normal((batch, 4)).astype(np.float32)
        (got,) = run(imported.module, [x])
        (want,) = _reference(model, {"x": x})
        assert got.shape == (batch, 3)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_cnn_with_batch_norm_and_pooling_matches_reference() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"], name="bn", epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["a"], name="avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["a"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="head", transB=1),
    ]
    inits = {
        "cw": _weights(4, 3, 3, 3),
        "cb": _weights(4),
        "scale": _weights(4),
        "bias": _weights(4),
        "mean": _weights(4),
        "var": np.abs(_weights(4)) + 0.5,
        "fw": _weights(2, 4),
        "fb": _weights(2),
    }
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    model = _model(nodes, [x_info], [y_info], inits)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    (got,) = run(import_onnx(model).module, [x])
    (want,) = _reference(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_shape_computations_fold_into_a_constant_reshape() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="first", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="cat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    inits = {"zero": np.array(0, np.int64), "axes0": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])
    imported = import_onnx(_model(nodes, [x_info], [y_info], inits))
    text = print_module(imported.module)
    assert "graph.reshape" in text and "graph.gather" not in text and "graph.concat" not in text
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run(imported.module, [x])[0], x.reshape(2, 12))


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_axes_as_attribute_or_input_by_opset(opset: int) -> None:
    axes = np.array([1], np.int64)
    if opset < 13:
        nodes = [
            helper.make_node("ReduceSum", ["x"], ["s"], axes=[1], keepdims=1),
            helper.make_node("Squeeze", ["s"], ["y"], axes=[1]),
        ]
        inits: dict[str, np.ndarray] = {}
    else:
        reduce_inputs = ["x", "axes"]
        nodes = [
            helper.make_node("ReduceSum", reduce_inputs, ["s"], keepdims=1),
            helper.make_node("Squeeze", ["s", "axes"], ["y"]),
        ]
        inits = {"axes": axes}
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    model = _model(nodes, [x_info], [y_info], inits, opset=opset)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(run(import_onnx(model).module, [x])[0], x.sum(axis=1), rtol=1e-5)


def test_initializer_listed_as_graph_input_is_a_constant() -> None:
    nodes = [helper.make_node("Add", ["x", "b"], ["y"])]
    infos = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("x", "b")]
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    imported = import_onnx(_model(nodes, infos, [y_info], {"b": np.array([1, 2, 3], np.float32)}))
    assert imported.input_names == ["x"]
    np.testing.assert_array_equal(run(imported.module, [np.zeros(3, np.float32)])[0], [1, 2, 3])


def test_unknown_dims_and_input_shape_overrides() -> None:
    nodes = [helper.make_node("Neg", ["x"], ["y"])]
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, "seq len"])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, "seq len"])
    model = _model(nodes, [x_info], [y_info], {})
    (main,) = functions(import_onnx(model).module)
    assert str(func_type(main).inputs[0]) == "tensor<?x[seq_len]xf32>"
    (main,) = functions(import_onnx(model, input_shapes={"x": [2, "n"]}).module)
    assert str(func_type(main).inputs[0]) == "tensor<2x[n]xf32>"
    with pytest.raises(OnnxError, match="no graph input named 'z'"):
        import_onnx(model, input_shapes={"z": [1]})


def test_every_unsupported_node_is_listed_at_once() -> None:
    nodes = [
        helper.make_node("RandomUniformLike", ["x"], ["values"], name="top"),
        helper.make_node("RandomNormalLike", ["x"], ["u"], name="uniq"),
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="dyn_reshape"),
        helper.make_node("Relu", ["values"], ["y"], name="after_top"),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
        helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
    ]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None]) for n in ("y", "u")]
    outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [None, None]))
    model = _model(nodes, inputs, outputs, {"k": np.array([2], np.int64)})
    with pytest.raises(UnsupportedOpsError) as info:
        import_onnx(model)
    text = str(info.value)
    assert (
        text.splitlines()[0] == "onnx: 3 unsupported op(s) of 3 kind(s): RandomNormalLike, RandomUniformLike, Reshape"
    )
    assert "RandomUniformLike (node 'top'): no converter for this op type" in text
    assert "RandomNormalLike (node 'uniq'): no converter for this op type" in text
    assert "Reshape (node 'dyn_reshape'): input #1 ('shape') must be a constant" in text
    assert "after_top" not in text
    assert [item.node for item in info.value.items] == ["top", "uniq", "dyn_reshape"]


def test_constant_inputs_freeze_graph_inputs() -> None:
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
        helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
    ]
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])
    model = _model(nodes, inputs, [y_info], {})
    imported = import_onnx(model, constant_inputs={"shape": np.array([3, 2], np.int64)})
    assert imported.input_names == ["x"]
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(run(imported.module, [x])[0], x.reshape(3, 2))
    rep = TensoriumBackend.prepare(model)
    (got,) = rep.run({"x": x, "shape": np.array([2, 3], np.int64)})
    np.testing.assert_array_equal(got, x.reshape(2, 3))


def test_backend_runs_lists_and_only_supports_cpu() -> None:
    model = _mlp()
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    (got,) = TensoriumBackend.run_model(model, [x])
    np.testing.assert_allclose(got, _reference(model, {"x": x})[0], rtol=1e-4, atol=1e-6)
    assert TensoriumBackend.supports_device("CPU") and not TensoriumBackend.supports_device("CUDA")


def test_missing_corrupt_and_invalid_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(OnnxError, match=r"ONNX model file '.*nope\.onnx' does not exist"):
        import_onnx(tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf\xff\xff")
    with pytest.raises(OnnxError, match=r"cannot read ONNX model '.*bad\.onnx'"):
        import_onnx(bad)
    nodes = [helper.make_node("Relu", ["missing"], ["y"])]
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    invalid = tmp_path / "invalid.onnx"
    onnx.save(_model(nodes, [], [y_info], {}), invalid)
    with pytest.raises(OnnxError, match="invalid ONNX model"):
        import_onnx(str(invalid))


def test_saved_model_path_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    model = _mlp()
    onnx.save(model, path)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    (got,) = run(import_onnx(path).module, [x])
    np.testing.assert_allclose(got, _reference(model, {"x": x})[0], rtol=1e-4, atol=1e-6)


def test_an_optional_tensor_input_is_that_tensor_and_an_empty_one_is_refused_by_name() -> None:
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    graph = helper.make_graph(
        [
            helper.make_node("OptionalHasElement", ["opt"], ["has"]),
            helper.make_node("OptionalGetElement", ["opt"], ["x"]),
        ],
        "optional",
        [helper.make_value_info("opt", optional)],
        [
            helper.make_tensor_value_info("has", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rep = TensoriumBackend.prepare(model)
    has, x = rep.run([np.array([1.0, 2.0, 3.0], np.float32)])
    assert bool(has) and x.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(OnnxError, match="graph input 'opt' is an empty optional"):
        rep.run([None])
