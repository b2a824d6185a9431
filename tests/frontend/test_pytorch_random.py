"""Random ops of compiled PyTorch models: every call draws fresh numbers from Tensorium's generator (a seed and
a call counter fed to graph.random), ``manual_seed`` replays them, and saved models continue the stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tensorium
from tensorium.errors import TensoriumError


def noise(x: Any) -> Any:
    return torch.rand_like(x), torch.randn(200) + x[0, 0]


X = torch.zeros(50, 4)


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_successive_calls_draw_fresh_numbers(target: str) -> None:
    compiled = tensorium.compile(noise, target=target)
    calls = [compiled(X) for _ in range(30)]
    uniform = torch.stack([u for u, _ in calls]).double()
    normal = torch.stack([z for _, z in calls]).double()
    assert len({u.numpy().tobytes() for u, _ in calls}) == 30 and len({z.numpy().tobytes() for _, z in calls}) == 30
    assert 0 < uniform.min() and uniform.max() < 1 and abs(uniform.mean() - 0.5) < 0.01
    assert abs(normal.mean()) < 0.03 and abs(normal.std() - 1) < 0.03
    first, second = uniform[:, 0, 0], uniform[:, 1, 0]  # one element across calls is uniform and independent
    assert abs(first.mean() - 0.5) < 0.2 and abs(np.corrcoef(first, second)[0, 1]) < 0.5


def test_manual_seed_replays_the_draws_and_fresh_compiles_start_alike() -> None:
    compiled = tensorium.compile(noise, target="cpu")
    start = [compiled(X)[0] for _ in range(3)]
    again = tensorium.compile(noise, target="cpu")  # the same graph, from the compile cache
    assert all(torch.equal(a, b) for a, b in zip(start, [again(X)[0] for _ in range(3)]))
    assert torch.equal(compiled(X)[0], again(X)[0])  # each model has its own counter
    compiled.manual_seed(7)
    seven = [compiled(X)[0] for _ in range(3)]
    compiled.manual_seed(7)
    assert all(torch.equal(a, compiled(X)[0]) for a in seven)
    assert not any(torch.equal(a, b) for a, b in zip(seven, start))
    with pytest.raises(TensoriumError, match="manual_seed takes an int"):
        compiled.manual_seed(-1)


def test_a_saved_model_continues_the_stream(tmp_path: Path) -> None:
    compiled = tensorium.compile(noise, target="cpu")
    compiled(X)
    loaded = tensorium.load(compiled.save(tmp_path / "noise"))
    assert torch.equal(loaded(X)[0], compiled(X)[0])
    assert not torch.equal(loaded(X)[0], loaded(X)[0])
    loaded.manual_seed(3)
    compiled.manual_seed(3)
    assert torch.equal(loaded(X)[1], compiled(X)[1])


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_the_dynamo_backend_draws_fresh_numbers(target: str) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(noise, backend="tensorium", options={"target": target})
    with torch.no_grad():
        a, b = compiled(X), compiled(X)
    assert a[0].shape == (50, 4) and not torch.equal(a[0], b[0]) and not torch.equal(a[1], b[1])


def test_a_model_without_random_ops_has_no_generator() -> None:
    compiled = tensorium.compile(lambda x: x + 1, target="cpu")
    compiled(X)
    assert "generator" not in compiled.artifact.source
    compiled.manual_seed(1)  # nothing to restart
    assert [n for n, _ in compiled.artifact.inputs] == ["args_0"]


def test_the_frontends_interpreter_backend_draws_fresh_numbers() -> None:
    from tensorium.frontend.pytorch import dynamo_backend

    torch._dynamo.reset()
    compiled = torch.compile(noise, backend=dynamo_backend)
    with torch.no_grad():
        a, b = compiled(X), compiled(X)
    assert not torch.equal(a[0], b[0]) and not torch.equal(a[1], b[1])
