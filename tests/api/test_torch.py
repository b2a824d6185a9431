"""tensorium.compile on torch modules and functions: kinds in = kinds out, pytrees, fallback, params, dynamic."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorium.frontend.pytorch")

import tensorium as tm  # noqa: E402


class Net(torch.nn.Module):
    """A linear layer with dict-of-tuple outputs."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: Any) -> Any:
        y = self.fc(x)
        return {"relu": torch.relu(y), "pair": (y, torch.softmax(y, dim=-1))}


class Branchy(torch.nn.Module):
    """Python control flow on a tensor value: torch.export cannot capture it."""

    def forward(self, x: Any) -> Any:
        if x.sum() > 0:
            return x * 2
        return x - 1


def close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


def test_torch_in_torch_out_and_numpy_in_numpy_out() -> None:
    net = Net().eval()
    cm = tm.compile(net)
    x = torch.randn(2, 4)
    want = net(x)
    got = cm(x)
    assert isinstance(got["relu"], torch.Tensor) and isinstance(got["pair"], tuple)
    close(got["relu"], want["relu"].detach())
    close(got["pair"][1], want["pair"][1].detach())
    got_np = cm(x.numpy())
    assert isinstance(got_np["pair"][0], np.ndarray)
    close(got_np["pair"][0], want["pair"][0].detach())
    assert cm.cache_info().imports == 1  # torch and numpy inputs of one shape and dtype share a specialization


def test_inputs_that_need_grad_or_are_bf16_become_numpy_arrays_of_their_values() -> None:
    from tensorium.api import to_numpy

    x = torch.randn(2, 4, requires_grad=True)
    got = to_numpy(x)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and np.shares_memory(got, x.detach().numpy())
    np.testing.assert_array_equal(got, x.detach().numpy())
    half = torch.randn(3).to(torch.bfloat16)
    np.testing.assert_array_equal(to_numpy(half), half.float().numpy())
    assert to_numpy(torch.randn(2)[::2]).shape == (1,)  # a strided view: numpy strides, same values
    cm = tm.compile(lambda a: a * 2.0)
    close(cm(x), x.detach() * 2)  # a tensor that needs grad goes in as its values
    assert cm.cache_info().imports == 1


def test_dynamic_batch_does_not_recompile_and_artifacts_round_trip(tmp_path: Path) -> None:
    net = Net().eval()
    cm = tm.compile(net, dynamic={"x": {0: "batch"}})
    for n in (3, 5):
        x = torch.randn(n, 4)
        close(cm(x)["relu"], net(x)["relu"].detach())
    assert cm.cache_info().imports == 1
    loaded = tm.load(cm.save(tmp_path / "net.tsm"))
    x = torch.randn(7, 4)
    out = loaded(x)
    assert isinstance(out["pair"][1], torch.Tensor)
    close(out["pair"][1], net(x)["pair"][1].detach())
    close(loaded(x.numpy())["relu"], net(x)["relu"].detach())


def test_params_as_inputs_follow_weight_updates() -> None:
    net = Net().eval()
    cm = tm.compile(net, params="inputs")
    x = torch.randn(2, 4)
    close(cm(x)["relu"], net(x)["relu"].detach())
    with torch.no_grad():
        net.fc.bias.add_(1.0)
    close(cm(x)["relu"], net(x)["relu"].detach())
    assert cm.cache_info().imports == 1


def test_function_called_with_torch_tensors_goes_through_torch_export() -> None:
    cm = tm.compile(lambda a, b: (torch.matmul(a, b).sum(dim=0), a.T))
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    got = cm(a, b)
    assert isinstance(got, tuple) and isinstance(got[0], torch.Tensor)
    close(got[0], torch.matmul(a, b).sum(dim=0))
    close(got[1], a.T)


def test_data_dependent_control_flow_falls_back_and_warns_once() -> None:
    cm = tm.compile(Branchy())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pos = cm(torch.ones(3))
        neg = cm(-torch.ones(3))
        as_numpy = cm(np.full(3, 2.0, np.float32))
    ours = [w for w in caught if "tensorium.compile: torch.export failed on data-dependent" in str(w.message)]
    assert len(ours) == 1
    close(pos, [2, 2, 2])
    close(neg, [-2, -2, -2])
    assert isinstance(as_numpy, np.ndarray)
    close(as_numpy, [4, 4, 4])


def test_a_saved_artifact_returns_python_numbers_as_numbers(tmp_path: Path) -> None:
    """Regression: outputs the model gives as Python numbers (``x.item()``) came back from ``tm.load`` as 0-d
    arrays; the artifact's output tree now marks them."""

    def fn(x: Any) -> Any:
        return x.sum().item(), {"argmax": x.argmax().item(), "doubled": x * 2}

    compiled = tm.compile(fn, target="cpu", cache=False)
    x = torch.tensor([1.5, -2.0, 4.0])
    assert compiled(x)[0] == 3.5
    loaded = tm.load(compiled.save(tmp_path / "numbers.tsm"))
    for given in (x, x.numpy()):
        total, rest = loaded(given)
        assert type(total) is float and total == 3.5
        assert type(rest["argmax"]) is int and rest["argmax"] == 2
        np.testing.assert_array_equal(np.asarray(rest["doubled"]), np.array([3.0, -4.0, 8.0], np.float32))


def test_an_embedding_index_past_the_table_is_an_error_like_torch_not_garbage() -> None:
    """Compiled gathers check their indices: PyTorch raises IndexError, Tensorium a TensoriumError naming
    the op and the allowed range (before, the kernel read outside the table)."""
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(10, 4).eval()
    compiled = tm.compile(embedding, cache=False)
    with torch.no_grad():
        close(compiled(torch.tensor([[1, 9]])), embedding(torch.tensor([[1, 9]])))
    for bad in ([[1, 12]], [[-1, 0]]):
        with pytest.raises(IndexError):
            embedding(torch.tensor(bad))
        expected = r"'graph.embedding': an index is out of range .* \(allowed: 0 to 9\)"
        with pytest.raises(tm.TensoriumError, match=expected):
            compiled(torch.tensor(bad))
