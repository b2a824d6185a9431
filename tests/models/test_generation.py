"""Greedy generation with a KV cache over a compiled prefill and decode step (tensorium.generation) gives the
tokens of HuggingFace's own ``model.generate(do_sample=False)`` in eager PyTorch, through GreedyGenerator's
loop and through ``generate()`` itself on compile_for_generate's model."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="generation needs torch")
transformers = pytest.importorskip("transformers", reason="generation needs transformers")

from tensorium.errors import TensoriumError  # noqa: E402
from tensorium.generation import GreedyGenerator, compile_for_generate  # noqa: E402

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


def gpt2() -> Any:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=96, n_positions=32)
    return transformers.GPT2LMHeadModel(config).eval()


def test_hf_generate_runs_on_the_compiled_steps_and_gives_the_eager_tokens() -> None:
    model = gpt2()
    fast = compile_for_generate(model, capacity=16)
    steps = fast.forward.steps
    for length, seed in ((5, 1), (1, 2)):  # one compile of each step serves prompts of any length
        want = eager_tokens(model, prompt(length, seed), 6)
        assert fast.generate(prompt(length, seed), max_new_tokens=6, do_sample=False, pad_token_id=0).tolist() == want
    assert steps.prefill.cache_info().specializations == 1
    assert steps.decode.cache_info().specializations == 1
    assert "tensorium" not in repr(type(model.forward))  # the user's model keeps its own forward
    with torch.no_grad():  # the cache HuggingFace reads holds the keys and values of every position
        out = fast(input_ids=prompt(4, 3), cache=transformers.DynamicCache())
        assert out.past_key_values.get_seq_length() == 4 and tuple(out.logits.shape) == (1, 4, 96)
        step = fast(input_ids=out.logits[:, -1:].argmax(-1), cache=out.past_key_values)
        assert out.past_key_values.get_seq_length() == 5 and tuple(step.logits.shape) == (1, 1, 96)


def test_hf_generate_with_a_cache_it_did_not_fill_and_its_limits() -> None:
    model = gpt2()
    fast = compile_for_generate(model, capacity=8, target="interp")
    with torch.no_grad():  # a cache from the eager model: the compiled step reads it as it is
        eager = model(input_ids=prompt(3, 1), use_cache=True)
        token = eager.logits[:, -1:].argmax(-1)
        want = model(input_ids=token, cache=eager.past_key_values).logits
        cache = transformers.DynamicCache()
        eager = model(input_ids=prompt(3, 1), use_cache=True, cache=cache)
        got = fast(input_ids=token, cache=eager.past_key_values).logits
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(TensoriumError, match="capacity of 8"):
        fast.generate(prompt(4, 2), max_new_tokens=8, do_sample=False, pad_token_id=0)
    with pytest.raises(TensoriumError, match="unpadded batches"):
        fast.generate(prompt(4, 2), attention_mask=torch.tensor([[0, 1, 1, 1]]), max_new_tokens=2, pad_token_id=0)
    with pytest.raises(TensoriumError, match="inputs_embeds"):
        fast(inputs_embeds=torch.zeros(1, 2, 32))
