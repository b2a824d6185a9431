"""Write ``examples/tiny_cnn.onnx``: conv -> relu -> max pool -> flatten -> gemm, built with onnx.helper.

    python examples/make_onnx_model.py
    tensorium compile examples/tiny_cnn.onnx -o cnn.tsm

The weights are seeded, so the file is the same on every run (about 3 KB).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).with_name("tiny_cnn.onnx")


def build() -> onnx.ModelProto:
    """A 1x1x8x8 -> 1x3 classifier: Conv(4 filters, 3x3, pad 1), Relu, MaxPool 2x2, Flatten, Gemm."""
    rng = np.random.default_rng(0)
    conv_w = numpy_helper.from_array(rng.normal(0, 0.5, (4, 1, 3, 3)).astype(np.float32), "conv_w")
    conv_b = numpy_helper.from_array(rng.normal(0, 0.1, (4,)).astype(np.float32), "conv_b")
    fc_w = numpy_helper.from_array(rng.normal(0, 0.2, (3, 64)).astype(np.float32), "fc_w")
    fc_b = numpy_helper.from_array(np.zeros(3, np.float32), "fc_b")
    nodes = [
        helper.make_node("Conv", ["image", "conv_w", "conv_b"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3])],
        initializer=[conv_w, conv_b, fc_w, fc_b],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tensorium-examples", ir_version=10
    )
    onnx.checker.check_model(model)
    return model


def main(argv: list[str]) -> int:
    """Write the model to the path given (default: examples/tiny_cnn.onnx)."""
    out = Path(argv[1]) if len(argv) > 1 else OUT
    onnx.save(build(), str(out))
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
