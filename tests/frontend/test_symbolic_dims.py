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


class StaticPartsOfASymbolicDim(nn.Module):
    def forward(self, x: Any) -> Any:
        return x[:, :2] * 2 + x[:, 1:4:2].sum(dim=1, keepdim=True)  # static bounds on a run-time length


def test_static_slices_of_a_symbolic_dim_compile_for_the_cpu() -> None:
    import tensorium as tm

    model = StaticPartsOfASymbolicDim().eval()
    imported = import_module(model, (torch.randn(3, 7),), dynamic_shapes={"x": {1: torch.export.Dim("seq")}})
    text = print_module(imported.module)
    assert "?" not in text and "graph.slice" not in text  # positions gathered: static lengths, no slices
    compiled = tm.compile(model, dynamic={"x": {1: "seq"}}, cache=False)
    for length in (7, 4, 9):
        x = torch.randn(3, length)
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)


def test_a_size_below_what_torch_export_proved_is_refused_with_the_dim_named() -> None:
    import tensorium as tm
    from tensorium.errors import TensoriumError

    model = StaticPartsOfASymbolicDim().eval()
    compiled = tm.compile(model, dynamic={"x": {0: "batch", 1: "seq"}}, cache=False)
    x = torch.randn(3, 7)
    np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
    assert compiled._last.imported.metadata["dim_ranges"] == {"seq": (4, None)}  # batch keeps torch's floor of 2
    x = torch.randn(1, 4)  # batch 1 (below torch's floor, which the graph does not need) and the least seq
    np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(TensoriumError, match=r"input 'x': dim 1 \(seq\) is 3, but torch.export proved .* at least 4"):
        compiled(torch.randn(3, 3))  # x[:, 1:4:2] would gather position 3 of 3


class DiffWithPrepend(nn.Module):
    def forward(self, ids: Any) -> Any:
        # HuggingFace's masks: position_ids' steps, the first against ids[:, :1] - 1
        steps = torch.diff(ids, prepend=ids[:, :1] - 1, dim=-1)
        flags = torch.diff(ids > 2, prepend=(ids[:, :1] > 2), dim=-1)  # bools: xor
        return steps, flags


def test_diff_with_a_prepended_value_along_a_symbolic_dim() -> None:
    import tensorium as tm

    model = DiffWithPrepend().eval()
    imported = import_module(
        model, (torch.randint(0, 5, (2, 6)),), dynamic_shapes={"ids": {1: torch.export.Dim("seq")}}
    )
    assert "?" not in print_module(imported.module)  # no concat of seq + 1 elements
    compiled = tm.compile(model, dynamic={"ids": {1: "seq"}}, cache=False)
    for length in (6, 2, 9):
        ids = torch.randint(0, 5, (2, length))
        for got, want in zip(compiled(ids), model(ids)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


class FlattenAndBack(nn.Module):
    """Rows flattened across batch and sequence for a per-row op, then split back into heads: torch gives the
    flat dim as ``s0*s1``, which only a dim expression names, and the way back needs both sizes."""

    def forward(self, x: Any) -> Any:
        batch, length, width = x.shape
        rows = torch.softmax(x.reshape(batch * length, width), -1) * 2  # [batch*length]x8
        heads = rows.reshape(batch, length, 2, width // 2).transpose(1, 2)  # graph.reshape_dims
        return heads.reshape(batch, 2, length * (width // 2)).relu()  # [batch]x2x[4*length]


def test_flattened_named_dims_are_dim_expressions_and_split_back() -> None:
    import tensorium

    model = FlattenAndBack().eval()
    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length", max=32)}
    imported = import_module(model, (torch.randn(2, 5, 8),), dynamic_shapes={"x": dims})
    text = print_module(imported.module)
    assert "?" not in text and "[batch*length]x8xf32" in text and "[batch]x2x[4*length]xf32" in text
    assert "graph.reshape_dims" in text
    compiled = tensorium.compile(model, dynamic={"x": {0: "batch", 1: "length"}}, target="cpu")
    for shape in [(2, 5, 8), (3, 1, 8), (1, 9, 8)]:
        x = torch.randn(*shape)
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)


class RepeatByBatch(nn.Module):
    """Bloom's ``alibi.repeat(batch_size, 1, 1)``: a repeat count that is a named dim gives ``[batch*heads]``."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("slopes", torch.tensor([0.5, 0.25, 0.125]))

    def forward(self, x: Any) -> Any:
        batch = x.shape[0]
        alibi = self.slopes[:, None, None] * x.sum(0)[None, None, :]  # [3, 1, seq]
        repeated = alibi.repeat(batch, 2, 1)  # [batch*3, 2, seq]
        return repeated.reshape(batch, 3, 2, -1) + x[:, None, None, :]


def test_a_repeat_by_a_named_dim_compiles_for_any_size() -> None:
    import tensorium

    model = RepeatByBatch().eval()
    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}
    imported = import_module(model, (torch.randn(2, 5),), dynamic_shapes={"x": dims})
    assert "?" not in print_module(imported.module) and "[3*batch]x2x[seq]" in print_module(imported.module)
    compiled = tensorium.compile(model, dynamic={"x": {0: "batch", 1: "seq"}}, target="cpu")
    for shape in [(2, 5), (4, 3), (1, 8)]:
        x = torch.randn(*shape)
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
