"""The exported graph translated without torch's decompositions when every op converts directly."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tensorium.backends import interp  # noqa: E402
from tensorium.frontend.pytorch import flatten_inputs, import_module, unflatten_outputs  # noqa: E402


def _run(imported, *args):
    flat = [a.numpy() for a in flatten_inputs(imported, args)]
    return unflatten_outputs(imported, interp.run(imported.module, flat))


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(self.norm(x))) + x


class _InPlace(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        y[:, 0] = 0.0  # an in-place copy into a view: only the functionalized (decomposed) graph has it right
        return y.add_(1.0)


class _NoConverter(torch.nn.Module):
    def forward(self, x, y):
        return torch.lerp(x, y, 0.25)  # aten.lerp has no converter: its decomposition does


def test_a_graph_of_converted_ops_is_not_decomposed():
    torch.manual_seed(0)
    model, x = _Block().eval(), torch.randn(3, 8)
    imported = import_module(model, (x,))
    assert imported.metadata["decomposed"] is False
    np.testing.assert_allclose(_run(imported, x), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_in_place_ops_go_through_the_decompositions():
    x = torch.randn(3, 4)
    imported = import_module(_InPlace(), (x,))
    assert imported.metadata["decomposed"] is True
    np.testing.assert_allclose(_run(imported, x), _InPlace()(x).numpy(), rtol=1e-6)


def test_an_op_without_converter_is_decomposed():
    x, y = torch.randn(2, 5), torch.randn(2, 5)
    imported = import_module(_NoConverter(), (x, y))
    assert imported.metadata["decomposed"] is True
    np.testing.assert_allclose(_run(imported, x, y), torch.lerp(x, y, 0.25).numpy(), rtol=1e-6)


def test_tiny_gpt2_with_dynamic_shapes_is_not_decomposed():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.GPT2Model(transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2)).eval()
    ids = torch.randint(0, 100, (2, 6))
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    imported = import_module(model, (), {"input_ids": ids}, dynamic_shapes={"input_ids": {0: batch, 1: seq}})
    assert imported.metadata["decomposed"] is False
    other = torch.randint(0, 100, (3, 9))
    flat = [a.numpy() for a in flatten_inputs(imported, (), {"input_ids": other})]
    got = interp.run(imported.module, flat)[0]
    np.testing.assert_allclose(got, model(input_ids=other).last_hidden_state.detach().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        (lambda x: torch.diff(x), [(3, 7)]),
        (lambda x: torch.diff(x, n=2, dim=0), [(5, 4)]),
        (lambda x, p: torch.diff(x, dim=1, prepend=p, append=p), [(2, 5), (2, 1)]),
        (lambda x: torch.diff(x > 0), [(6,)]),
        (lambda x: torch.diff(x, n=9), [(5,)]),
    ],
)
def test_diff_converts_directly(fn, shapes):
    """GPT-2's LM head with use_cache=False calls torch.diff: with a converter its graph needs no decompositions."""
    args = tuple(torch.randn(s) for s in shapes)
    imported = import_module(fn, args)
    assert imported.metadata["decomposed"] is False
    got = _run(imported, *args)
    want = fn(*args)
    assert got.dtype == want.numpy().dtype and got.shape == tuple(want.shape)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)
