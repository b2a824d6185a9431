"""Greedy generation with a KV cache over a compiled prefill and decode step (tensorium.generation) gives the
tokens of HuggingFace's own ``model.generate(do_sample=False)`` in eager PyTorch."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="generation needs torch")
transformers = pytest.importorskip("transformers", reason="generation needs transformers")

from tensorium.errors import TensoriumError  # noqa: E402
from tensorium.generation import GreedyGenerator  # noqa: E402

transformers.logging.set_verbosity_error()


def eager_tokens(model: Any, prompt: Any, new_tokens: int) -> list[list[int]]:
    return model.generate(prompt, max_new_tokens=new_tokens, do_sample=False, pad_token_id=0).tolist()  # type: ignore[no-any-return]


def prompt(length: int, seed: int) -> Any:
    return torch.randint(0, 96, (1, length), generator=torch.Generator().manual_seed(seed))


def test_gpt2_greedy_tokens_match_eager_with_one_compile_per_step_kind() -> None:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=96, n_positions=32)
    model = transformers.GPT2LMHeadModel(config).eval()
    generator = GreedyGenerator(model, capacity=16)
    for length, seed in ((5, 1), (1, 2)):  # a second prompt of another length reuses both compiled steps
        assert generator.generate(prompt(length, seed), 6).tolist() == eager_tokens(model, prompt(length, seed), 6)
    assert generator.prefill.cache_info().compiles == 1
    assert generator.decode.cache_info().compiles == 1
    with pytest.raises(TensoriumError, match="capacity is 16"):
        generator.generate(prompt(12, 3), 8)


def test_llama_greedy_tokens_match_eager() -> None:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=96,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    generator = GreedyGenerator(model, capacity=16, target="interp")
    assert generator.generate(prompt(4, 1), 8).tolist() == eager_tokens(model, prompt(4, 1), 8)
