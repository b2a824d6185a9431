"""Whole models through the PyTorch frontend, compared with PyTorch eager (rtol 1e-4 for float32)."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
nn = torch.nn
F = nn.functional

from tensorium.backends import interp  # noqa: E402
from tensorium.frontend.pytorch import flatten_inputs, import_module, unflatten_outputs  # noqa: E402
from tensorium.ir.dialects.builtin import func_body, functions  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def compare(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, **options: Any) -> Any:
    """Import ``model``, run it on the interpreter and assert every output matches eager."""
    imported = import_module(model, args, kwargs, **options)
    flat = [a.numpy() for a in flatten_inputs(imported, args, kwargs)]
    flat += list(imported.metadata["params"].values())
    got = unflatten_outputs(imported, interp.run(imported.module, flat))
    with torch.no_grad():
        want = model(*args, **(kwargs or {}))
    got_leaves, want_leaves = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=2e-5)
    return imported


def seeded(*shape: int, seed: int = 0) -> Any:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 32), nn.SiLU())
        self.head = nn.Linear(32, 4)

    def forward(self, x: Any) -> Any:
        return F.log_softmax(self.head(self.net(x)), dim=-1)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: Any) -> Any:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu6(self.bn2(self.conv2(x)))
        x = F.avg_pool2d(x, 2)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DecoderBlock(nn.Module):
    """A GPT-2-style pre-norm decoder block: causal self-attention and an MLP."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: Any) -> Any:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def test_mlp() -> None:
    compare(MLP().eval(), (seeded(5, 16),))


def test_cnn_with_batch_norm_and_pooling() -> None:
    imported = compare(SmallCNN().eval(), (seeded(2, 3, 16, 16),))
    names = {op.name for op in func_body(functions(imported.module)[0]).ops}
    assert {"graph.batch_norm", "graph.max_pool2d", "graph.avg_pool2d"} <= names


def test_transformer_encoder_layer() -> None:
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    compare(layer, (seeded(2, 6, 32),))


def test_gpt2_style_decoder_block() -> None:
    compare(DecoderBlock().eval(), (seeded(2, 7, 32),))


def test_decoder_block_manual_attention_matches_sdpa_math() -> None:
    """The causal mask is built from tril and masked_fill, as GPT-2 code written by hand does."""

    class Manual(DecoderBlock):
        def forward(self, x: Any) -> Any:
            t = x.shape[1]
            q = k = self.ln1(x)
            scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
            mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
            return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ x

    compare(Manual().eval(), (seeded(2, 5, 32),))


@pytest.fixture(scope="module")
def transformers() -> Any:
    return pytest.importorskip("transformers", reason="HuggingFace models need transformers")


@pytest.fixture(scope="module")
def token_ids() -> Any:
    return torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))


def test_huggingface_gpt2(transformers: Any, token_ids: Any) -> None:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64, use_cache=False)
    model = transformers.GPT2Model(config).eval()
    imported = compare(model, (token_ids,))
    assert imported.input_names == ["input_ids"]


def test_huggingface_bert_with_params_as_inputs(transformers: Any, token_ids: Any) -> None:
    torch.manual_seed(0)
    config = transformers.BertConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        vocab_size=128,
        max_position_embeddings=64,
    )
    model = transformers.BertModel(config).eval()
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    imported = compare(model, (token_ids,), {"attention_mask": mask}, params="inputs")
    assert imported.input_names[:2] == ["input_ids", "attention_mask"]
    assert imported.metadata["param_targets"]["p_embeddings_word_embeddings_weight"] == (
        "embeddings.word_embeddings.weight"
    )
