"""Greedy text generation with a KV cache over a compiled HuggingFace causal language model.

The prefill (the prompt, any length: one compile with a symbolic length) and the decode step (one token) are
compiled once each. The decode step reads a cache of fixed capacity, so every step has the same shapes: the
keys and values of position ``p`` go to slot ``p``, and the attention mask marks the filled slots (the step
attends over the capacity, masked, instead of recompiling as the cache grows). Positions are inputs, so the
same compiled step serves every position.

Two ways in:

- :class:`GreedyGenerator` runs its own greedy loop (``generate(prompt, new_tokens)``);
- :func:`compile_for_generate` gives a copy of the model whose ``forward`` runs the same two compiled steps,
  so HuggingFace's own ``model.generate()`` (greedy or sampling, its stopping criteria and logits
  processors) drives them.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from .api import compile as compile_model
from .errors import TensoriumError

__all__ = ["GreedyGenerator", "compile_for_generate"]


try:
    import torch
    from transformers import DynamicCache
    from transformers.modeling_outputs import CausalLMOutputWithPast
except ImportError as e:  # pragma: no cover - exercised only without the torch extra
    raise ImportError("generation needs torch and transformers: pip install 'tensorium[torch]'") from e


_CACHE_FIELD = next(
    (f.name for f in dataclasses.fields(CausalLMOutputWithPast) if f.name in ("cache", "past_key_values")),
    "past_key_values",
)
"""The output's cache field: ``cache`` in transformers 5 (``past_key_values`` before, still readable)."""


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


class _Slots:
    """A fixed-capacity KV cache for the compiled decode step: one ``[batch, heads, capacity, dim]`` tensor per
    key and value of each layer and the ``[batch, capacity + 1]`` attention mask (the last column is the new
    token's own slot, which the step appends after the capacity)."""

    def __init__(self, kv: list[Any], length: int, capacity: int):
        batch = kv[0].shape[0]
        self.capacity, self.length = capacity, length
        self.tensors = [torch.zeros(*t.shape[:2], capacity, t.shape[3], dtype=t.dtype) for t in kv]
        for slots, filled in zip(self.tensors, kv):
            slots[:, :, :length] = filled
        self.mask = torch.zeros(batch, capacity + 1, dtype=torch.long)
        self.mask[:, :length] = 1
        self.mask[:, -1] = 1

    def step(self, decode: Callable[..., Any], token: Any) -> tuple[Any, list[Any]]:
        """Run ``decode`` for ``token`` (``[batch, 1]``) at position ``length``; keep its keys and values in slot
        ``length``. Returns the last logits (``[batch, vocab]``) and the new keys and values (one position)."""
        position = self.length
        if position >= self.capacity:
            raise TensoriumError(
                f"position {position} is past the generation cache's capacity of {self.capacity} positions: "
                "compile with a larger capacity"
            )
        positions = torch.full((token.shape[0], 1), position, dtype=torch.long)
        logits, *grown = decode(token, positions, self.mask, *self.tensors)
        new = [t[:, :, -1:] for t in grown]
        for slots, kv in zip(self.tensors, new):
            slots[:, :, position] = kv[:, :, 0]
        self.mask[:, position] = 1
        self.length += 1
        return logits, new


class _CompiledSteps:
    """The compiled prefill and decode step of a causal LM (by Tensorium for ``target``, or by ``compiler``)."""

    def __init__(self, model: Any, target: str, compiler: Callable[[Any], Any] | None) -> None:
        prefill, decode = _Prefill(model).eval(), _DecodeStep(model).eval()
        if compiler is not None:  # another compiler of the same two steps (benchmarks: eager, torch.compile)
            self.prefill, self.decode = compiler(prefill), compiler(decode)
        else:
            self.prefill = compile_model(prefill, target=target, dynamic={"input_ids": {1: "length"}})
            self.decode = compile_model(decode, target=target)


class GreedyGenerator:
    """Greedy decoding of a HuggingFace causal LM (GPT-2, Llama, ...) with a prefill and a decode step compiled
    once each for ``target`` (or by ``compiler``, a function of a module); ``capacity`` is the most positions
    (prompt plus new tokens) one call may use."""

    def __init__(self, model: Any, capacity: int, target: str = "cpu", compiler: Callable[[Any], Any] | None = None):
        self.model = model.eval()
        self.capacity = capacity
        steps = _CompiledSteps(self.model, target, compiler)
        self.prefill, self.decode = steps.prefill, steps.decode

    def generate(self, input_ids: Any, new_tokens: int) -> Any:
        """The prompt followed by ``new_tokens`` greedy tokens, as ``model.generate(do_sample=False)`` gives."""
        length = input_ids.shape[1]
        if length + new_tokens - 1 > self.capacity:
            raise TensoriumError(
                f"a prompt of {length} tokens and {new_tokens} new ones need {length + new_tokens - 1} cache "
                f"slots, but the generator's capacity is {self.capacity}"
            )
        with torch.no_grad():
            logits, *kv = self.prefill(input_ids)
            slots = _Slots(kv, length, self.capacity)
            tokens = [logits[:, -1].argmax(-1, keepdim=True)]
            for _ in range(new_tokens - 1):
                logits, _ = slots.step(self.decode, tokens[-1])
                tokens.append(logits.argmax(-1, keepdim=True))
        return torch.cat([input_ids, *tokens], dim=1)


_IGNORED = ("use_cache", "return_dict", "cache_position", "position_ids", "output_attentions", "output_hidden_states")
"""Arguments HuggingFace's ``generate()`` may pass that the compiled forward derives itself (positions follow
the cache length) or answers as ``generate()`` asks for them by default."""


class _GenerationForward:
    """The ``forward`` of :func:`compile_for_generate`'s model: the prompt (an empty or absent cache) through the
    compiled prefill, each later token through the compiled decode step.

    HuggingFace's cache object stays the record ``generate()`` reads (its length, its tensors): the new keys and
    values are appended to it as the eager model would. The decode step reads this forward's own fixed-capacity
    copy, which is rebuilt from the cache whenever the cache is not the one this forward last appended to
    (another ``generate()`` call, a cache reordered by beam search)."""

    def __init__(self, model: Any, capacity: int, target: str, compiler: Callable[[Any], Any] | None) -> None:
        self.capacity = capacity
        self.steps = _CompiledSteps(model, target, compiler)
        self.slots: _Slots | None = None
        self.last_keys: Any = None
        """Layer 0's key tensor of the cache as this forward left it: the cache is still ours while it is there."""

    def __call__(
        self,
        input_ids: Any = None,
        cache: Any = None,
        past_key_values: Any = None,
        attention_mask: Any = None,
        logits_to_keep: int | Any = 0,
        **kwargs: Any,
    ) -> Any:
        self._check(input_ids, attention_mask, kwargs)
        cache = cache if cache is not None else past_key_values
        past = cache.get_seq_length() if cache is not None else 0
        if past == 0:
            logits, kv = self._prefill(input_ids, cache)
        else:
            if input_ids.shape[1] != 1:
                raise TensoriumError(
                    f"the compiled generation forward takes one new token per step after the prompt, got "
                    f"{input_ids.shape[1]} (assisted or chunked decoding runs on the eager model)"
                )
            logits, kv = self._decode(input_ids, cache, past)
        if cache is not None:
            for layer, (keys, values) in enumerate(zip(kv[0::2], kv[1::2])):
                cache.update(keys, values, layer)
            self.last_keys = cache.layers[0].keys
        if isinstance(logits_to_keep, int) and logits_to_keep > 0:
            logits = logits[:, -logits_to_keep:]
        return CausalLMOutputWithPast(logits=logits, **{_CACHE_FIELD: cache})

    def _prefill(self, input_ids: Any, cache: Any) -> tuple[Any, list[Any]]:
        length = input_ids.shape[1]
        if length > self.capacity:
            raise TensoriumError(
                f"a prompt of {length} tokens is longer than the generation cache's capacity of {self.capacity}"
            )
        logits, *kv = self.steps.prefill(input_ids)
        self.slots = _Slots(kv, length, self.capacity) if cache is not None else None
        return logits, kv

    def _decode(self, input_ids: Any, cache: Any, past: int) -> tuple[Any, list[Any]]:
        slots = self.slots
        if slots is None or slots.length != past or cache.layers[0].keys is not self.last_keys:
            if past > self.capacity:
                raise TensoriumError(f"a cache of {past} positions is past the capacity of {self.capacity}")
            slots = self.slots = _Slots(_keys_values(cache), past, self.capacity)
        logits, new = slots.step(self.steps.decode, input_ids)
        return logits[:, None], new

    @staticmethod
    def _check(input_ids: Any, attention_mask: Any, kwargs: dict[str, Any]) -> None:
        """A clear error for what the two compiled steps do not compute."""
        if input_ids is None:
            raise TensoriumError("the compiled generation forward takes input_ids (not inputs_embeds)")
        unknown = sorted(k for k, v in kwargs.items() if k not in _IGNORED and v is not None)
        if unknown:
            raise TensoriumError(f"the compiled generation forward does not take {unknown}")
        for flag in ("output_attentions", "output_hidden_states"):
            if kwargs.get(flag):
                raise TensoriumError(f"the compiled generation forward does not return {flag[7:]}")
        if attention_mask is not None and not bool(attention_mask.bool().all()):
            raise TensoriumError(
                "the compiled generation forward runs unpadded batches (an attention mask of ones): "
                "generate prompts of different lengths one at a time"
            )


def compile_for_generate(
    model: Any, capacity: int, target: str = "cpu", compiler: Callable[[Any], Any] | None = None
) -> Any:
    """A copy of the HuggingFace causal LM ``model`` (sharing its weights) whose ``forward`` runs a prefill and a
    decode step compiled once each for ``target`` (or by ``compiler``), so that ``.generate()`` runs on them::

        fast = tensorium.generation.compile_for_generate(model, capacity=256)
        tokens = fast.generate(prompt, max_new_tokens=32, do_sample=False)

    ``capacity`` is the most positions (prompt plus new tokens) one generation may use. The prefill compiles
    with a symbolic prompt length and the decode step for the first call's batch (another batch size compiles
    again). Unpadded batches only (an attention mask of ones); the forward takes ``input_ids`` and the cache
    and raises :class:`~tensorium.errors.TensoriumError` for other inputs (``inputs_embeds``, several new
    tokens after the prompt, outputs of attentions or hidden states)."""
    model = model.eval()
    fast = copy.copy(model)  # a shallow copy: the same modules and weights, its own forward
    fast.forward = _GenerationForward(model, capacity, target, compiler)
    return fast
