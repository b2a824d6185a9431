"""ONNX If, Loop and Scan inlined at import: branches chosen or selected, loops unrolled."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

from tensorium.backends import interp  # noqa: E402
from tensorium.frontend.onnx_backend import TensoriumBackend  # noqa: E402
from tensorium.frontend.onnx_import import OnnxUnsupportedError, import_onnx  # noqa: E402


def _model(nodes: list, inputs: list, outputs: list) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _branch(name: str, op: str) -> onnx.GraphProto:
    out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [3])
    return helper.make_graph([helper.make_node(op, ["x", "x"], [f"{name}_out"])], name, [], [out])


def test_if_with_a_run_time_condition_selects_between_both_branches() -> None:
    node = helper.make_node(
        "If", ["cond"], ["y"], then_branch=_branch("then", "Add"), else_branch=_branch("else", "Mul")
    )
    model = _model(
        [node],
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    imported = import_onnx(model)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert np.allclose(interp.run(imported.module, [np.array(True), x])[0], x + x)
    assert np.allclose(interp.run(imported.module, [np.array(False), x])[0], x * x)


def _accumulating_loop() -> onnx.ModelProto:
    """y = sum over i < M of (x + i); the scan output collects each partial sum."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "i_f"], ["term"]),
            helper.make_node("Add", ["acc_in", "term"], ["acc_out"]),
            helper.make_node("Identity", ["acc_out"], ["partial"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("partial", TensorProto.FLOAT, [2]),
        ],
    )
    return _model(
        [
            helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", TensorProto.FLOAT, [2], [0, 0])),
            helper.make_node("Constant", [], ["true"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
            helper.make_node("Loop", ["M", "true", "zero"], ["y", "partials"], body=body),
        ],
        [
            helper.make_tensor_value_info("M", TensorProto.INT64, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("partials", TensorProto.FLOAT, [None, 2]),
        ],
    )


def test_loop_unrolls_over_a_known_trip_count() -> None:
    x = np.array([1.0, -2.0], np.float32)
    imported = import_onnx(_accumulating_loop(), constant_inputs={"M": np.array(4)})
    y, partials = interp.run(imported.module, [x])
    expected = np.cumsum([x + i for i in range(4)], axis=0)
    assert np.allclose(y, expected[-1]) and np.allclose(partials, expected)


def test_loop_with_a_run_time_trip_count_asks_for_it_and_the_backend_specializes() -> None:
    with pytest.raises(OnnxUnsupportedError) as info:
        import_onnx(_accumulating_loop())
    assert info.value.constant_inputs == ["M"]
    rep = TensoriumBackend.prepare(_accumulating_loop())
    x = np.array([0.5, 1.0], np.float32)
    for trips in (1, 3):
        y, partials = rep.run([np.array(trips), x])
        assert partials.shape == (trips, 2) and np.allclose(y, sum(x + i for i in range(trips)))


def test_scan_runs_its_body_over_the_scanned_axis_in_reverse() -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["seen"])],
        "body",
        [
            helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("row", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("seen", TensorProto.FLOAT, [2]),
        ],
    )
    node = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1, scan_input_directions=[1])
    model = _model(
        [node],
        [
            helper.make_tensor_value_info("s0", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("xs", TensorProto.FLOAT, [3, 2]),
        ],
        [
            helper.make_tensor_value_info("s", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("ys", TensorProto.FLOAT, [3, 2]),
        ],
    )
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    s, ys = interp.run(import_onnx(model).module, [np.zeros(2, np.float32), xs])
    assert np.allclose(ys, np.cumsum(xs[::-1], axis=0)) and np.allclose(s, xs.sum(axis=0))


def test_an_unsupported_node_inside_a_branch_is_named() -> None:
    bad = helper.make_graph(
        [helper.make_node("NoSuchOp", ["x"], ["bad_out"], domain="test.domain")],
        "bad",
        [],
        [helper.make_tensor_value_info("bad_out", TensorProto.FLOAT, [3])],
    )
    node = helper.make_node("If", ["cond"], ["y"], then_branch=bad, else_branch=_branch("else", "Mul"))
    model = _model(
        [node],
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    model.opset_import.append(helper.make_opsetid("test.domain", 1))
    with pytest.raises(OnnxUnsupportedError, match=r"in its sub-graph: test\.domain\.NoSuchOp"):
        import_onnx(model, constant_inputs={"cond": np.array(True)})
