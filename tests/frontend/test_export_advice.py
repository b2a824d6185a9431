"""torch.export failures as advice: one Tensorium error per known cause, naming it, the user's line and the fix,
with torch's own logs kept off the terminal."""

from __future__ import annotations

import re
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn

import tensorium  # noqa: E402
from tensorium.frontend.common import Unsupported, UnsupportedOpsError  # noqa: E402
from tensorium.frontend.export_advice import (  # noqa: E402
    InputDtypeError,
    InputShapeError,
    SpecializedDimError,
    TorchExportError,
    TrainingModeError,
    UnregisteredPytreeError,
)
from tensorium.frontend.pytorch import import_module  # noqa: E402

HERE = re.escape(__file__)


class Pair:
    """A user's own container class, unknown to torch's pytree."""

    def __init__(self, a: Any, b: Any):
        self.a, self.b = a, b


class ReturnsPair(nn.Module):
    def forward(self, x: Any) -> Any:
        return Pair(x + 1, x * 2)


class FixesBatch(nn.Module):
    def forward(self, x: Any) -> Any:
        return x.reshape(2, 8) * 2


def test_an_unregistered_container_type_names_the_class_and_the_fix(capfd: Any) -> None:
    with pytest.raises(UnregisteredPytreeError, match=r"holds a .*Pair.*register_pytree_node") as info:
        import_module(ReturnsPair(), (torch.ones(2, 3),))
    assert isinstance(info.value, TorchExportError)
    assert capfd.readouterr().err == ""


def test_a_dim_the_code_fixes_names_the_dim_and_the_user_line() -> None:
    compiled = tensorium.compile(FixesBatch(), dynamic={"x": {0: "batch"}}, target="interp")
    with pytest.raises(SpecializedDimError, match=r"dim 'batch' is marked dynamic, but the model's code fixes it to 2"):
        compiled(torch.ones(2, 8))


def test_a_first_call_with_batch_1_is_handled() -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).eval()
    compiled = tensorium.compile(model, dynamic={"input": {0: "batch"}})
    for batch in (1, 5):
        x = torch.randn(batch, 4)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    assert compiled.cache_info().compiles == 1


def test_a_training_mode_module_names_the_buffer_and_says_eval() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    with pytest.raises(TrainingModeError, match=r"training mode \(batch norm \(node 'batch_norm'\)\).*model\.eval\(\)"):
        import_module(model, (torch.randn(3, 4),))


def test_a_float64_input_to_a_float32_model_names_both_dtypes() -> None:
    model = nn.Linear(4, 2).eval()
    with pytest.raises(InputDtypeError, match=r"input 0 is float64 but the model's parameters are float32"):
        import_module(model, (torch.randn(3, 4, dtype=torch.float64),))


def test_a_wrong_input_shape_names_the_shapes_and_the_users_line_without_torch_logs(capfd: Any) -> None:
    class Projection(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(16, 4))

        def forward(self, x: Any) -> Any:
            return x @ self.weight

    with pytest.raises(InputShapeError, match=rf"\[2, 8\] X \[16, 4\].*at {HERE}:\d+ in forward: return x @ self"):
        import_module(Projection().eval(), (torch.randn(2, 8),))
    captured = capfd.readouterr()
    assert "fake_tensor" not in captured.err and "Traceback" not in captured.err


def test_unsupported_ops_are_listed_once_per_op_and_line() -> None:
    items = [
        Unsupported("aten.foo.default", f"foo_{i}", "model.py:3 in forward: y = foo(x)", "no converter")
        for i in range(9)
    ]
    items.append(Unsupported("aten.bar.default", "bar", "model.py:4 in forward: z = bar(y)", "no converter"))
    lines = str(UnsupportedOpsError("torch", items)).splitlines()
    assert lines[0] == "torch: 10 unsupported op(s) of 2 kind(s): aten.bar.default, aten.foo.default"
    assert lines[1:] == [
        "  - aten.foo.default (node 'foo_0') at model.py:3 in forward: y = foo(x): no converter (and 8 more like it)",
        "  - aten.bar.default (node 'bar') at model.py:4 in forward: z = bar(y): no converter",
    ]
