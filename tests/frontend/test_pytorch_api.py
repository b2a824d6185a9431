"""The PyTorch frontend's contract: dynamic dims, parameters as inputs, pytree outputs, errors that
list every unsupported op, data-dependent control flow and the TorchDynamo backend."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn

from tensorium import TensoriumError, print_module  # noqa: E402
from tensorium.backends import interp  # noqa: E402
from tensorium.errors import InterpreterError  # noqa: E402
from tensorium.frontend.common import UnsupportedOpsError  # noqa: E402
from tensorium.frontend.export_advice import TrainingModeError  # noqa: E402
from tensorium.frontend.pytorch import (  # noqa: E402
    DataDependentExportError,
    TorchExportError,
    dynamo_backend,
    import_module,
    unflatten_outputs,
)
from tensorium.ir.types import Sym, TensorType, f32  # noqa: E402


def seeded(*shape: int, seed: int = 0) -> Any:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Affine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(4, 3)
        self.register_buffer("offset", torch.arange(3, dtype=torch.float32))

    def forward(self, x: Any) -> Any:
        return self.linear(x) + self.offset


class Branchy(nn.Module):
    """Python control flow on a tensor value: torch.export cannot capture it."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(4, 4)

    def forward(self, x: Any) -> Any:
        y = self.linear(x)
        if x.sum() > 0:
            return torch.relu(y) * 2
        return torch.tanh(y) - 1


def test_dynamic_batch_dim_becomes_a_named_symbol() -> None:
    batch = torch.export.Dim("batch")
    imported = import_module(Affine().eval(), (seeded(2, 4),), dynamic_shapes={"x": {0: batch}})
    text = print_module(imported.module)
    assert "%x: tensor<[batch]x4xf32>" in text
    assert "-> tensor<[batch]x3xf32>" in text
    model = Affine().eval()
    for n in (1, 5, 0):
        x = seeded(n, 4, seed=n)
        (got,) = interp.run(imported.module, [x.numpy()])
        with torch.no_grad():
            np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(InterpreterError, match=r"expected shape tensor<\[batch\]x4xf32>, got \[2, 5\] \(axis 1\)"):
        interp.run(imported.module, [np.zeros((2, 5), np.float32)])


def test_dynamic_dims_by_position_and_reshape_with_symbols() -> None:
    def fn(x: Any, y: Any) -> Any:
        b, s, _ = x.shape
        return (x.view(b, s, 2, 4).transpose(1, 2).reshape(b, 2, s * 4) + 1).sum(-1), x.mean(1)[:, :4] + y.view(1, 4)

    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    imported = import_module(fn, (seeded(2, 3, 8), seeded(1, 2, 2)), dynamic_shapes=({0: batch, 1: seq}, None))
    func_type = imported.module.regions[0].block.ops[0].attributes["function_type"]
    assert func_type.inputs[0] == TensorType((Sym("batch"), Sym("seq"), 8), f32)
    assert func_type.results[1] == TensorType((Sym("batch"), 4), f32)
    x, y = seeded(3, 5, 8, seed=1), seeded(1, 2, 2, seed=2)
    got = interp.run(imported.module, [x.numpy(), y.numpy()])
    for g, w in zip(got, fn(x, y)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5)


def test_params_as_inputs_are_named_and_exposed() -> None:
    model = Affine().eval()
    imported = import_module(model, (seeded(2, 4),), params="inputs")
    assert imported.input_names == ["x", "p_linear_weight", "p_linear_bias", "b_offset"]
    assert imported.metadata["param_targets"] == {
        "p_linear_weight": "linear.weight",
        "p_linear_bias": "linear.bias",
        "b_offset": "offset",
    }
    params = imported.metadata["params"]
    np.testing.assert_array_equal(params["b_offset"], [0.0, 1.0, 2.0])
    assert not any(op.name == "graph.constant" for op in imported.module.walk())
    x = seeded(2, 4, seed=3)
    # New weights bind at run time without re-importing.
    weight = np.full((3, 4), 0.5, np.float32)
    (got,) = interp.run(imported.module, {"x": x.numpy(), **params, "p_linear_weight": weight})
    want = x.numpy() @ weight.T + params["p_linear_bias"] + params["b_offset"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_constants_mode_folds_parameters_in() -> None:
    imported = import_module(Affine().eval(), (seeded(2, 4),))
    assert imported.input_names == ["x"]
    assert imported.metadata["params"] == {}
    assert sum(op.name == "graph.constant" for op in imported.module.walk()) == 3


def test_tuple_and_dict_outputs_round_trip() -> None:
    class Outputs(nn.Module):
        def forward(self, x: Any, y: Any) -> Any:
            return {"sum": x + y, "pair": (x * y, {"neg": -x}), "mean": x.mean()}

    x, y = seeded(2, 3), seeded(2, 3, seed=1)
    imported = import_module(Outputs(), (x, y))
    assert len(imported.output_names) == 4
    got = unflatten_outputs(imported, interp.run(imported.module, [x.numpy(), y.numpy()]))
    assert set(got) == {"sum", "pair", "mean"}
    assert isinstance(got["pair"], tuple) and set(got["pair"][1]) == {"neg"}
    np.testing.assert_allclose(got["sum"], (x + y).numpy())
    np.testing.assert_allclose(got["pair"][0], (x * y).numpy())
    np.testing.assert_allclose(got["pair"][1]["neg"], (-x).numpy())
    np.testing.assert_allclose(got["mean"], x.mean().numpy(), rtol=1e-6)
    assert imported.metadata["output_tree_json"] is not None


def test_numpy_example_inputs_are_accepted() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    imported = import_module(lambda a: a * 2 + 1, (x,))
    (got,) = interp.run(imported.module, [x])
    np.testing.assert_array_equal(got, x * 2 + 1)


class Spectral(nn.Module):
    def forward(self, x: Any) -> Any:
        y = torch.fft.fft(x).real
        z = torch.nn.functional.relu(y)
        return torch.fft.ifft(z).real + torch.special.airy_ai(x)


def test_unsupported_ops_are_all_listed_with_node_names_and_source_lines() -> None:
    with pytest.raises(UnsupportedOpsError) as info:
        import_module(Spectral(), (seeded(4, 8),))
    error = info.value
    assert error.frontend == "torch"
    ops = sorted({item.op for item in error.items})
    assert ops == [
        "aten._conj.default",
        "aten._fft_r2c.default",
        "aten.special_airy_ai.default",
        "aten.view_as_real.default",
    ]
    assert str(error).startswith(f"torch: 7 unsupported op(s) of 4 kind(s): {', '.join(ops)}")
    here = re.escape(__file__)
    assert re.search(
        rf"aten\._fft_r2c\.default \(node '_fft_r2c'\) at {here}:\d+ in forward: y = torch\.fft\.fft\(x\)\.real",
        str(error),
    )
    assert re.search(
        rf"aten\.special_airy_ai\.default \(node 'special_airy_ai'\) at {here}:\d+ in forward: return torch",
        str(error),
    )
    assert all(item.source and item.source.startswith(__file__) for item in error.items)


def test_unsupported_arguments_are_reported_per_node() -> None:
    class SymbolicScale(nn.Module):
        def forward(self, x: Any) -> Any:
            return x * x.shape[0], torch.ones(1, 2).expand(x.shape[0], 2)

    batch = torch.export.Dim("batch")
    with pytest.raises(UnsupportedOpsError) as info:
        import_module(SymbolicScale(), (seeded(3, 2),), dynamic_shapes={"x": {0: batch}})
    message = str(info.value)
    assert "aten.mul.Tensor (node 'mul')" in message
    assert "cannot use Sym Sym(name='batch') as a tensor operand" in message
    # growing a size-1 dim to a named input dim works (symbolic_dims.broadcast_symbolic)
    assert "aten.expand.default" not in message


def test_training_mode_dropout_is_reported() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train()
    with pytest.raises(
        TrainingModeError, match=r"training mode \(dropout \(node 'dropout'\)\).*call model.eval\(\) first"
    ):
        import_module(model, (seeded(3, 2),))


def test_data_dependent_control_flow_raises_a_distinct_error() -> None:
    with pytest.raises(DataDependentExportError, match=r"backend='tensorium'") as info:
        import_module(Branchy().eval(), (seeded(2, 4),))
    assert isinstance(info.value, TensoriumError)
    assert not isinstance(info.value, TorchExportError)


def test_other_export_failures_raise_a_clear_error() -> None:
    with pytest.raises(TorchExportError, match=r"torch\.export failed: TypeError: .*positional argument"):
        import_module(Affine().eval(), (seeded(2, 4), seeded(2, 4)))
    with pytest.raises(TensoriumError, match=r"params must be 'constants' or 'inputs', got 'weights'"):
        import_module(Affine().eval(), (seeded(2, 4),), params="weights")


def test_dynamo_backend_runs_both_branches_like_eager() -> None:
    model = Branchy().eval()
    compiled = torch.compile(model, backend=dynamo_backend)
    inputs = [torch.ones(2, 4), -torch.ones(2, 4), seeded(3, 4) + 2, seeded(5, 4) - 2]
    with torch.no_grad():
        for x in inputs:
            got, want = compiled(x), model(x)
            assert isinstance(got, torch.Tensor)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_dynamo_backend_unsupported_op_names_it() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(Spectral(), backend=dynamo_backend)
    with pytest.raises(Exception, match=r"aten\._fft_r2c\.default") as info:
        compiled(seeded(4, 8))
    chain = [info.value, info.value.__cause__, info.value.__context__]
    assert any(isinstance(e, UnsupportedOpsError) for e in chain)


def test_backend_is_registered_by_name_when_installed() -> None:
    from importlib.metadata import entry_points

    if not any(ep.name == "tensorium" for ep in entry_points(group="torch_dynamo_backends")):
        pytest.skip("tensorium is not pip-installed, so its torch_dynamo_backends entry point is absent")
    torch._dynamo.reset()
    model = Affine().eval()
    compiled = torch.compile(model, backend="tensorium")
    x = seeded(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


def test_docs_list_every_converted_op() -> None:
    from pathlib import Path

    from tensorium.frontend.pytorch_ops import load_all_converters

    text = (Path(__file__).resolve().parents[2] / "docs" / "pytorch.md").read_text()
    packets = {name.removeprefix("aten.").rsplit(".", 1)[0] for name in load_all_converters()}
    missing = sorted(p for p in packets if f"`{p}`" not in text)
    assert not missing, f"docs/pytorch.md does not list {missing}"
