"""ONNX layers the node conformance cases cover thinly, checked against onnxruntime on the same model.

Each case is one node with random inputs: 3-D pooling in ceil mode, MaxPool indices in column-major
order, dilated and Lp pooling, Resize modes (cubic, trilinear 5-D, axes, nearest rounding),
bidirectional LSTM and GRU with sequence lengths, TopK with ties, 3-D convolutions, DFT variants,
Col2Im, NonMaxSuppression and RoiAlign.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from tensorium.frontend.onnx_backend import TensoriumBackend  # noqa: E402
from tensorium.frontend.onnx_resize import _cubic, _linear, interpolation_weights  # noqa: E402

RNG = np.random.default_rng(0)


def _model(op: str, inputs: dict[str, np.ndarray], outputs: list[str], consts: dict[str, np.ndarray], **attrs: Any):
    names = list(inputs) + list(consts)
    node = helper.make_node(op, names, outputs, **attrs)
    infos = [
        helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()
    ]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    graph = helper.make_graph([node], op, infos, outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    return onnx.shape_inference.infer_shapes(model)  # types the outputs


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


CASES: dict[str, tuple[str, dict[str, np.ndarray], list[str], dict[str, np.ndarray], dict[str, Any]]] = {
    "maxpool_3d_ceil": (
        "MaxPool",
        {"x": _f32(1, 2, 5, 6, 7)},
        ["y"],
        {},
        {"kernel_shape": [2, 3, 2], "strides": [2, 2, 3], "pads": [0, 1, 1, 1, 0, 0], "ceil_mode": 1},
    ),
    "maxpool_indices_column_major": (
        "MaxPool",
        {"x": _f32(2, 3, 6, 5)},
        ["y", "i"],
        {},
        {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1], "storage_order": 1},
    ),
    "avgpool_3d_exclude_pad": (
        "AveragePool",
        {"x": _f32(1, 2, 5, 5, 4)},
        ["y"],
        {},
        {"kernel_shape": [3, 3, 2], "pads": [1, 1, 0, 1, 1, 1], "strides": [2, 1, 2]},
    ),
    "avgpool_dilated": (
        "AveragePool",
        {"x": _f32(1, 2, 7, 7)},
        ["y"],
        {},
        {"kernel_shape": [2, 2], "dilations": [2, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    ),
    "lppool_p3": ("LpPool", {"x": _f32(1, 2, 6, 6)}, ["y"], {}, {"kernel_shape": [3, 2], "p": 3, "strides": [2, 2]}),
    "resize_cubic_exclude_outside": (
        "Resize",
        {"x": _f32(1, 2, 4, 5)},
        ["y"],
        {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 1.5], np.float32)},
        {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5},
    ),
    "resize_trilinear_5d": (
        "Resize",
        {"x": _f32(1, 2, 3, 4, 5)},
        ["y"],
        {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 0.5, 1.5], np.float32)},
        {"mode": "linear"},
    ),
    "resize_linear_axes_align_corners": (
        "Resize",
        {"x": _f32(2, 5, 7)},
        ["y"],
        {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": np.array([3, 9], np.int64)},
        {"mode": "linear", "axes": [2, 1], "coordinate_transformation_mode": "align_corners"},
    ),
    "resize_nearest_ceil_downsample": (
        "Resize",
        {"x": _f32(1, 1, 9, 7)},
        ["y"],
        {"roi": np.array([], np.float32), "scales": np.array([1, 1, 0.6, 0.8], np.float32)},
        {"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode": "asymmetric"},
    ),
    "lstm_bidirectional_seq_lens": (
        "LSTM",
        {"x": _f32(4, 3, 5)},
        ["y", "y_h", "y_c"],
        {
            "w": _f32(2, 4 * 6, 5),
            "r": _f32(2, 4 * 6, 6),
            "b": _f32(2, 8 * 6),
            "lens": np.array([4, 2, 3], np.int32),
        },
        {"hidden_size": 6, "direction": "bidirectional"},
    ),
    "gru_linear_before_reset": (
        "GRU",
        {"x": _f32(3, 2, 4)},
        ["y", "y_h"],
        {"w": _f32(1, 3 * 5, 4), "r": _f32(1, 3 * 5, 5), "b": _f32(1, 6 * 5)},
        {"hidden_size": 5, "linear_before_reset": 1, "direction": "reverse"},
    ),
    "topk_ties_smallest": (
        "TopK",
        {"x": np.array([[3, 1, 2, 1, 3, 0], [5, 5, 5, 4, 4, 6]], np.float32)},
        ["v", "i"],
        {"k": np.array([4], np.int64)},
        {"largest": 0, "axis": 1},
    ),
    "conv_3d_strided_grouped": (
        "Conv",
        {"x": _f32(2, 4, 5, 6, 7)},
        ["y"],
        {"w": _f32(6, 2, 3, 2, 3), "b": _f32(6)},
        {"strides": [2, 1, 2], "dilations": [1, 2, 1], "pads": [1, 0, 1, 2, 1, 0], "group": 2},
    ),
    "conv_transpose_3d_strided": (
        "ConvTranspose",
        {"x": _f32(1, 2, 3, 4, 3)},
        ["y"],
        {"w": _f32(2, 3, 3, 2, 2), "b": _f32(3)},
        {"strides": [2, 1, 2], "dilations": [2, 1, 1], "pads": [1, 0, 1, 0, 1, 0], "output_padding": [1, 0, 1]},
    ),
    "nms_centre_boxes": (
        "NonMaxSuppression",
        {
            "boxes": np.concatenate([RNG.uniform(0, 10, (2, 8, 2)), RNG.uniform(1, 6, (2, 8, 2))], -1).astype(
                np.float32
            ),
            "scores": RNG.uniform(0, 1, (2, 3, 8)).astype(np.float32),
        },
        ["selected"],
        {"limit": np.array([3], np.int64), "iou": np.array([0.3], np.float32), "floor": np.array([0.2], np.float32)},
        {"center_point_box": 1},
    ),
    "roialign_two_images": (
        "RoiAlign",
        {"x": _f32(2, 3, 9, 11)},
        ["y"],
        {
            "rois": np.array([[0.5, 1.0, 6.0, 7.5], [2.0, 0.0, 10.5, 8.0], [-1.0, 3.0, 4.0, 12.0]], np.float32),
            "batch": np.array([1, 0, 1], np.int64),
        },
        {"output_height": 3, "output_width": 4, "sampling_ratio": 2, "spatial_scale": 0.9},
    ),
    "dft_onesided": ("DFT", {"x": _f32(2, 8, 1)}, ["y"], {"length": np.array(10, np.int64)}, {"onesided": 1}),
    "dft_inverse_complex": (
        "DFT",
        {"x": _f32(3, 6, 2)},
        ["y"],
        {"length": np.array(6, np.int64), "axis": np.array(1, np.int64)},
        {"inverse": 1},
    ),
    "col2im_strided": (
        "Col2Im",
        {"x": _f32(1, 2 * 4, 9)},
        ["y"],
        {"image": np.array([5, 5], np.int64), "block": np.array([2, 2], np.int64)},
        {"strides": [2, 2], "pads": [1, 1, 0, 0]},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_matches_onnxruntime(name: str) -> None:
    op, inputs, outputs, consts, attrs = CASES[name]
    model = _model(op, inputs, outputs, consts, **attrs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, inputs)
    got = TensoriumBackend.run_model(model, list(inputs.values()))
    for e, g in zip(expected, got):
        assert e.shape == g.shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_interpolation_weights_are_partitions_of_unity_that_repeat_edges() -> None:
    for kind in ("linear", "cubic"):
        coeffs = _linear(False) if kind == "linear" else _cubic(-0.75, False)
        weights, outside = interpolation_weights(coeffs, "half_pixel", 5, 8, 8 / 5)
        assert weights.shape == (8, 5) and not outside.any()
        np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    weights, outside = interpolation_weights(_linear(False), "tf_crop_and_resize", 4, 3, 0.75, roi=(-0.5, 1.5))
    assert outside.tolist() == [True, False, True]
