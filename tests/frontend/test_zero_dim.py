"""0-d tensors keep their shape () through every frontend and target, as inputs, constants and outputs.

Regression tests for results that came back with shape [1]: ``np.ascontiguousarray`` turns a 0-d array
into a 1-d one, and the PyTorch path, the Dynamo backend, constants and artifacts all went through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium

TARGETS = ("interp", "cpu")


@pytest.mark.parametrize("target", TARGETS)
def test_tracer_keeps_zero_dim_inputs_and_outputs(target: str) -> None:
    compiled = tensorium.compile(lambda x, y: x * y + 1.0, target=target)
    out = compiled(np.array(2.0, np.float32), np.array(3.0, np.float32))
    assert out.shape == () and out == np.float32(7.0)


@pytest.mark.parametrize("target", TARGETS)
def test_tracer_reduction_to_zero_dim(target: str) -> None:
    compiled = tensorium.compile(lambda x: x.sum(), target=target)
    out = compiled(np.arange(4, dtype=np.float32))
    assert out.shape == () and out == np.float32(6.0)


def _torch() -> Any:
    return pytest.importorskip("torch", reason="the PyTorch paths need torch")


@pytest.mark.parametrize("target", TARGETS)
def test_torch_export_keeps_zero_dim(target: str) -> None:
    torch = _torch()
    compiled = tensorium.compile(lambda x, y: x + y, target=target)
    out = compiled(torch.tensor(2.0), torch.tensor(3.0))
    assert isinstance(out, torch.Tensor) and out.shape == () and out.item() == 5.0
    numpy_out = compiled(np.array(2.0, np.float32), np.array(3.0, np.float32))
    assert isinstance(numpy_out, np.ndarray) and numpy_out.shape == ()


@pytest.mark.parametrize("target", TARGETS)
def test_torch_export_zero_dim_constant_and_reduction(target: str) -> None:
    torch = _torch()

    class Scaled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("scale", torch.tensor(2.5))

        def forward(self, x: Any) -> Any:
            return (x * self.scale).sum(), x.mean()

    total, mean = tensorium.compile(Scaled(), target=target)(torch.arange(4, dtype=torch.float32))
    assert total.shape == () and total.item() == 15.0
    assert mean.shape == () and mean.item() == 1.5


def test_dynamo_backend_keeps_zero_dim() -> None:
    torch = _torch()
    from tensorium.frontend.pytorch import dynamo_backend

    out = torch.compile(lambda x, y: (x * y).sum(), backend=dynamo_backend)(torch.ones(3), torch.tensor(2.0))
    assert out.shape == () and out.item() == 6.0


@pytest.mark.parametrize("target", TARGETS)
def test_dynamo_backend_for_a_target_keeps_zero_dim(target: str) -> None:
    torch = _torch()
    torch._dynamo.reset()
    fn = torch.compile(lambda x, y: ((x * y).sum(), y + 1), backend="tensorium", options={"target": target})
    total, scalar = fn(torch.ones(3), torch.tensor(2.0))
    assert total.shape == () and total.item() == 6.0
    assert scalar.shape == () and scalar.item() == 3.0


@pytest.mark.parametrize("target", TARGETS)
def test_onnx_keeps_zero_dim(target: str) -> None:
    onnx = pytest.importorskip("onnx", reason="the ONNX path needs onnx")
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Add", ["x", "y"], ["s"]),
        helper.make_node("ReduceSum", ["v"], ["t"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "zero_dim",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [3]),
        ],
        [
            helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("t", TensorProto.FLOAT, []),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    s, t = tensorium.compile(model, target=target)(
        np.array(2.0, np.float32), np.array(3.0, np.float32), np.ones(3, np.float32)
    )
    assert s.shape == () and s == np.float32(5.0)
    assert t.shape == () and t == np.float32(3.0)


@pytest.mark.parametrize("target", TARGETS)
def test_artifact_save_and_load_keeps_zero_dim(target: str, tmp_path: Path) -> None:
    torch = _torch()

    class Offset(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.offset = torch.nn.Parameter(torch.tensor(0.5))

        def forward(self, x: Any, y: Any) -> Any:
            return x * y + self.offset

    compiled = tensorium.compile(Offset(), target=target, params="inputs")
    compiled(torch.tensor(2.0), torch.tensor(3.0))
    loaded = tensorium.load(compiled.save(tmp_path / "zero_dim.tsm"))
    out = loaded(np.array(2.0, np.float32), np.array(3.0, np.float32))
    assert out.shape == () and out == np.float32(6.5)
    torch_out = loaded(torch.tensor(1.0), torch.tensor(1.0))
    assert torch_out.shape == () and torch_out.item() == 1.5


def test_zero_dim_constant_attribute_stays_zero_dim() -> None:
    from tensorium.ir.attributes import DenseAttr
    from tensorium.ir.types import TensorType, f32

    attr = DenseAttr.adopt(np.array(1.5, np.float32), TensorType((), f32))
    assert attr.array.shape == ()


def test_constant_outputs_come_back_as_writable_copies() -> None:
    torch = _torch()
    compiled = tensorium.compile(lambda x: (x + 1, torch.ones(3)), target="interp")
    _, ones = compiled(torch.tensor(1.0))
    ones += 1  # the model's constant must not change
    _, again = compiled(torch.tensor(1.0))
    assert again.tolist() == [1.0, 1.0, 1.0]
