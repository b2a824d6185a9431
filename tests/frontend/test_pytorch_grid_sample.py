"""grid_sample (aten.grid_sampler_2d / 3d) in every mode and padding Tensorium supports, against eager PyTorch,
with grid positions outside [-1, 1] so that the padding rules are exercised."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
F = torch.nn.functional

import tensorium  # noqa: E402


class _Sample(torch.nn.Module):
    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = options

    def forward(self, x: Any, grid: Any) -> Any:
        return F.grid_sample(x, grid, **self.options)


def _inputs(spatial: int) -> tuple[Any, Any]:
    torch.manual_seed(0)
    x = torch.randn(2, 3, *([5, 4, 3][:spatial] if spatial == 3 else [5, 6]))
    grid = torch.rand(2, *([3] * spatial), spatial) * 2.8 - 1.4
    return x, grid


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d_matches_eager(mode: str, padding_mode: str, align_corners: bool) -> None:
    module = _Sample(mode=mode, padding_mode=padding_mode, align_corners=align_corners).eval()
    x, grid = _inputs(2)
    torch.testing.assert_close(tensorium.compile(module, target="interp")(x, grid), module(x, grid))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_grid_sample_3d_matches_eager(target: str) -> None:
    module = _Sample(mode="bilinear", padding_mode="border", align_corners=False).eval()
    x, grid = _inputs(3)
    torch.testing.assert_close(tensorium.compile(module, target=target)(x, grid), module(x, grid))


def test_bicubic_is_refused_with_a_reason() -> None:
    module = _Sample(mode="bicubic").eval()
    with pytest.raises(tensorium.errors.TensoriumError, match="mode 'bicubic'"):
        tensorium.compile(module, target="interp")(*_inputs(2))
