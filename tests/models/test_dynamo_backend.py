"""``torch.compile(backend="tensorium")`` and the data-dependent fallback compile each captured graph for the CPU
target (the interpreter only on request), and gradients get one clear error."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn

import tensorium  # noqa: E402
from tensorium.api import dynamo_backend  # noqa: E402
from tensorium.backends import interp  # noqa: E402
from tensorium.errors import TensoriumError  # noqa: E402
from tensorium.frontend.pytorch import InferenceOnlyError  # noqa: E402


class Branchy(torch.nn.Module):
    """Python control flow on a tensor value: torch.export cannot capture it, TorchDynamo splits it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: Any) -> Any:
        y = self.linear(x)
        if y.sum() > 0:
            return torch.relu(y) * 2
        return torch.tanh(y) - 1


def no_interpreter(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("ran on the interpreter")


@pytest.fixture
def cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    torch._dynamo.reset()
    monkeypatch.setattr(interp, "run", no_interpreter)


def inputs() -> list[Any]:
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2, 4, generator=g) + 3, torch.randn(2, 4, generator=g) - 3]


def test_torch_compile_backend_compiles_for_the_cpu(cpu_only: None) -> None:
    model = Branchy().eval()
    compiled = torch.compile(model, backend=dynamo_backend)
    with torch.no_grad():
        for x in inputs():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_the_data_dependent_fallback_compiles_for_the_cpu(cpu_only: None) -> None:
    model = Branchy().eval()
    compiled = tensorium.compile(model)
    with pytest.warns(UserWarning, match="data-dependent control flow"):
        first = compiled(inputs()[0])
    torch.testing.assert_close(first, model(inputs()[0]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled(inputs()[1]), model(inputs()[1]), rtol=1e-5, atol=1e-6)
    info = compiled.cache_info()
    assert info.compiles + info.memory_hits + info.disk_hits >= 1  # the Dynamo graphs went through compile_graph


def test_the_interpreter_runs_on_request() -> None:
    torch._dynamo.reset()
    model = Branchy().eval()
    compiled = torch.compile(model, backend=dynamo_backend, options={"target": "interp"})
    with torch.no_grad():
        x = inputs()[0]
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_an_unknown_backend_option_is_named() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(Branchy().eval(), backend=dynamo_backend, options={"tgt": "cpu"})
    with pytest.raises(Exception, match=r"unknown option\(s\) \['tgt'\]") as info:
        compiled(inputs()[0])
    chain = [info.value, info.value.__cause__, info.value.__context__]
    assert any(isinstance(e, TensoriumError) for e in chain)


def test_gradients_get_one_clear_error() -> None:
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    compiled = torch.compile(model, backend=dynamo_backend)
    x = torch.randn(2, 4)
    out = compiled(x)
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(InferenceOnlyError, match="Tensorium compiles inference"):
        out.sum().backward()
