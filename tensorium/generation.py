"""Greedy text generation with a KV cache over a compiled HuggingFace causal language model.

The prefill (the prompt, any length: one compile with a symbolic length) and the decode step (one token) are
compiled once each. The decode step reads a cache of fixed capacity, so every step has the same shapes: the
keys and values of position ``p`` go to slot ``p``, and the attention mask marks the filled slots (the step
attends over the capacity, masked, instead of recompiling as the cache grows). Positions are inputs, so the
same compiled step serves every position.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .api import compile as compile_model
from .errors import TensoriumError

__all__ = ["GreedyGenerator"]


try:
    import torch
    from transformers import DynamicCache
except ImportError as e:  # pragma: no cover - exercised only without the torch extra
    raise ImportError("generation needs torch and transformers: pip install 'tensorium[torch]'") from e


def _keys_values(cache: Any) -> list[Any]:
    """The cache's tensors as k0, v0, k1, v1, ... (one pair per layer)."""
    return [t for layer in cache.layers for t in (layer.keys, layer.values)]


class _Prefill(torch.nn.Module):
    """The prompt through the model: the logits and every layer's keys and values."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model

    def forward(self, input_ids: Any) -> Any:
        out = self.model(input_ids=input_ids, use_cache=True)
        return (out.logits, *_keys_values(out.past_key_values))


class _DecodeStep(torch.nn.Module):
    """One token at ``position_ids`` over a cache of fixed capacity (filled slots marked by the mask)."""

    def __init__(self, model: Any):
        super().__init__()
        self.model = model

    def forward(self, input_ids: Any, position_ids: Any, attention_mask: Any, *kv: Any) -> Any:
        cache = DynamicCache(ddp_cache_data=list(zip(kv[0::2], kv[1::2])))
        out = self.model(input_ids=input_ids, cache=cache, attention_mask=attention_mask, position_ids=position_ids)
        return (out.logits[:, -1], *_keys_values(out.past_key_values))


class GreedyGenerator:
    """Greedy decoding of a HuggingFace causal LM (GPT-2, Llama, ...) with a prefill and a decode step compiled
    once each for ``target`` (or by ``compiler``, a function of a module); ``capacity`` is the most positions
    (prompt plus new tokens) one call may use."""

    def __init__(self, model: Any, capacity: int, target: str = "cpu", compiler: Callable[[Any], Any] | None = None):
        self.model = model.eval()
        self.capacity = capacity
        prefill, decode = _Prefill(self.model).eval(), _DecodeStep(self.model).eval()
        if compiler is not None:  # another compiler of the same two steps (benchmarks: eager, torch.compile)
            self.prefill, self.decode = compiler(prefill), compiler(decode)
            return
        self.prefill = compile_model(prefill, target=target, dynamic={"input_ids": {1: "length"}})
        self.decode = compile_model(decode, target=target)

    def generate(self, input_ids: Any, new_tokens: int) -> Any:
        """The prompt followed by ``new_tokens`` greedy tokens, as ``model.generate(do_sample=False)`` gives."""
        batch, length = input_ids.shape
        if length + new_tokens - 1 > self.capacity:
            raise TensoriumError(
                f"a prompt of {length} tokens and {new_tokens} new ones need {length + new_tokens - 1} cache "
                f"slots, but the generator's capacity is {self.capacity}"
            )
        with torch.no_grad():
            logits, *kv = self.prefill(input_ids)
            logits = logits[:, -1]
            cache = [torch.zeros(*t.shape[:2], self.capacity, t.shape[3], dtype=t.dtype) for t in kv]
            for slots, filled in zip(cache, kv):
                slots[:, :, :length] = filled
            mask = torch.zeros(batch, self.capacity + 1, dtype=torch.long)
            mask[:, :length] = 1
            mask[:, -1] = 1  # the new token's own slot, appended after the capacity
            tokens = [logits.argmax(-1, keepdim=True)]
            for position in range(length, length + new_tokens - 1):
                positions = torch.full((batch, 1), position, dtype=torch.long)
                logits, *grown = self.decode(tokens[-1], positions, mask, *cache)
                for slots, new in zip(cache, grown):
                    slots[:, :, position] = new[:, :, -1]
                mask[:, position] = 1
                tokens.append(logits.argmax(-1, keepdim=True))
        return torch.cat([input_ids, *tokens], dim=1)
