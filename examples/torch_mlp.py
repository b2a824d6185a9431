"""A small PyTorch MLP for ``tensorium compile examples/torch_mlp.py:factory -o mlp.tsm``.

``factory()`` returns the model (in eval mode, with seeded weights) and a tuple of example inputs.
"""

from __future__ import annotations

import torch


class MLP(torch.nn.Module):
    """Two linear layers with a GELU between them and a softmax at the end."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4):
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc2(torch.nn.functional.gelu(self.fc1(x))), dim=-1)


def factory() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """The MLP and one example batch of 2 rows."""
    torch.manual_seed(0)
    return MLP().eval(), (torch.randn(2, 16),)


if __name__ == "__main__":
    import tensorium

    model, (x,) = factory()
    compiled = tensorium.compile(model)
    print(compiled(x))
    print(model(x))
