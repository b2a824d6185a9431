"""Named symbolic dims through the shape code of real models: linear layers on N-d inputs, expand of size-1
dims, arange and slices to a symbolic length, a position picked from a symbolic dim, full of a symbolic shape."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn

from tensorium.backends import interp  # noqa: E402
from tensorium.frontend.pytorch import flatten_inputs, import_module  # noqa: E402
from tensorium.ir.printer import print_module  # noqa: E402


class ShapeCode(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(8, 8)
        self.register_buffer("positions", torch.arange(32).unsqueeze(0))

    def forward(self, x: Any) -> Any:
        batch, length, _ = x.shape
        y = self.proj(x)  # view to [batch*length, 8], addmm, view back
        mask = torch.arange(length)[None, :] <= torch.arange(length)[:, None]  # arange to a symbolic bound
        mask = mask[None].expand(batch, length, length)  # a size-1 dim grown to [batch]
        scores = torch.where(mask, y @ y.transpose(1, 2), torch.full((batch, length, length), -1e9))
        positions = self.positions[:, :length].float()  # a slice to a symbolic length
        return scores.softmax(-1) @ y + positions[..., None], y[:, 0]  # y[:, 0]: a gather


def test_named_dims_survive_real_model_shape_code() -> None:
    model = ShapeCode().eval()
    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length", max=32)}
    imported = import_module(model, (torch.randn(2, 5, 8),), dynamic_shapes={"x": dims})
    assert "?" not in print_module(imported.module)  # every dim is static or named: the CPU can size it
    for shape in [(1, 1, 8), (3, 7, 8)]:
        x = torch.randn(*shape)
        got = interp.run(imported.module, [a.numpy() for a in flatten_inputs(imported, (x,))])
        with torch.no_grad():
            want = model(x)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-5)
