"""graph.attention: its reference against the ops it stands for, its one-kernel CPU lowering, and
fuse-attention on torch's scaled_dot_product_attention and on the benchmark encoder."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.ir import func_body, functions, graph
from tensorium.ir.types import FloatType, Sym, TensorType, f32, f64, i1
from tensorium.lowering import lower_function
from tensorium.testing import build_module

RNG = np.random.default_rng(17)

CASES = [
    ("heads", [(4, 16, 8), (4, 16, 8), (4, 16, 8)], None, {"scale": 0.35}),
    ("cross lengths, causal", [(2, 7, 5), (2, 9, 5), (2, 9, 3)], None, {"scale": 0.3, "causal": True}),
    ("broadcast batch, float mask", [(2, 3, 6, 4), (1, 3, 6, 4), (2, 1, 6, 5)], ("float", (6, 6)), {"scale": 1.0}),
    ("bool mask over keys", [(3, 5, 4), (3, 5, 4), (3, 5, 4)], ("bool", (5,)), {"scale": 0.5}),
    ("f64 (the simple nest)", [(2, 6, 3), (2, 6, 3), (2, 6, 3)], None, {"scale": 0.7, "causal": True}),
]


@pytest.mark.parametrize(("shapes", "mask", "attrs"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_attention_lowers_to_one_kernel_equal_to_its_reference(
    shapes: list[tuple[int, ...]], mask: Any, attrs: dict[str, Any]
) -> None:
    element = f64 if "causal" in attrs and attrs["scale"] == 0.7 else f32
    dtype = np.float64 if element == f64 else np.float32
    types = [TensorType(s, element) for s in shapes]
    arrays = [RNG.standard_normal(s).astype(dtype) for s in shapes]
    if mask is not None:
        kind, shape = mask
        types.append(TensorType(shape, i1 if kind == "bool" else element))
        values = RNG.random(shape) > 0.3 if kind == "bool" else RNG.standard_normal(shape).astype(dtype)
        if kind == "bool":
            values[..., 0] = True  # every row keeps a key
        arrays.append(values)
    module = build_module(types, lambda *vs: graph.attention(*vs, **attrs))
    (want,) = interp.run(module, arrays)
    q, k, v = (a.astype(np.float64) for a in arrays[:3])
    scores = q @ np.swapaxes(k, -1, -2) * attrs["scale"]
    if attrs.get("causal"):
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, -np.inf)
    if mask is not None:
        scores = np.where(arrays[3], scores, -np.inf) if mask[0] == "bool" else scores + arrays[3]
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(want, (probs / probs.sum(-1, keepdims=True)) @ v, rtol=1e-5, atol=1e-6)
    lowered = lower_function(module)
    assert len(functions(lowered)) == 1
    (compiled,) = CpuExecutable.build(module).run(arrays)
    (looped,) = run_plan(lowered, arrays)
    for got in (compiled, looped):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_attention_verifies_its_operands() -> None:
    with pytest.raises(tm.TensoriumError, match="attention: q and k have different head dims"):
        build_module(
            [TensorType((2, 4, 8), f32), TensorType((2, 4, 6), f32), TensorType((2, 4, 6), f32)],
            lambda q, k, v: graph.attention(q, k, v, scale=1.0),
        )
    with pytest.raises(tm.TensoriumError, match="attention mask must be f32 or i1, got f16"):
        types = [TensorType((4, 8), f32)] * 3 + [TensorType((4, 4), FloatType("f16"))]
        build_module(types, lambda q, k, v, m: graph.attention(q, k, v, m, scale=1.0))


@pytest.mark.parametrize("variant", ["causal", "bool mask", "float mask", "plain"])
def test_torch_scaled_dot_product_attention_becomes_one_op(variant: str) -> None:
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional

    class Attention(torch.nn.Module):
        def forward(self, q: Any, k: Any, v: Any, m: Any) -> Any:
            if variant == "causal":
                return functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            if variant == "plain":
                return functional.scaled_dot_product_attention(q, k, v, scale=0.2)
            return functional.scaled_dot_product_attention(q, k, v, attn_mask=m)

    q, k, v = (torch.randn(2, 3, 10, 16) for _ in range(3))
    m = torch.rand(10, 10) > 0.3 if variant == "bool mask" else torch.randn(10, 10)
    if variant == "bool mask":
        m[:, 0] = True
    model = tm.compile(Attention().eval(), cache=False)
    got = model(q, k, v, m)
    np.testing.assert_allclose(got.numpy(), Attention()(q, k, v, m).numpy(), rtol=1e-4, atol=1e-5)
    ops = [op.name for op in func_body(functions(model.module)[0]).ops]
    assert "graph.attention" in ops and "graph.softmax" not in ops


def test_the_encoder_attention_is_recognized_and_runs_as_one_kernel() -> None:
    torch = pytest.importorskip("torch")
    from tensorium.bench import load_benchmarks

    workload = load_benchmarks().workloads.WORKLOADS["encoder"]
    inst = workload.build(workload.smoke)
    model = tm.compile(inst.module, cache=False)
    got = model(*inst.inputs)
    with torch.inference_mode():
        want = inst.module(*(torch.from_numpy(a) for a in inst.inputs)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    kernels = [s.kernel for s in model.artifact.executable.steps]
    assert sum(1 for name in kernels if name.startswith("attention")) == 1
    assert not any("softmax" in name for name in kernels)


def test_attention_with_symbolic_batch_and_length_and_a_padding_mask() -> None:
    """HuggingFace's encoders compiled for any batch and length: q, k, v of [batch, heads, seq, dim] and a
    padding mask of [batch, 1, 1, seq] (rank 4); one kernel whose scores buffer is sized at run time."""
    batch, seq = Sym("batch"), Sym("seq")
    heads = TensorType((batch, 2, seq, 8), f32)
    types = [heads, heads, heads, TensorType((batch, 1, 1, seq), i1)]
    module = build_module(types, lambda q, k, v, m: graph.attention(q, k, v, m, scale=0.35))
    executable = CpuExecutable.build(module)
    assert [s.kernel for s in executable.steps] == ["attention_0"]
    for b, s in [(1, 1), (3, 13), (2, 40)]:
        arrays = [RNG.standard_normal((b, 2, s, 8)).astype(np.float32) for _ in range(3)]
        mask = np.ones((b, 1, 1, s), bool)
        mask[1:, ..., s // 2 + 1 :] = False  # later sequences padded
        (want,) = interp.run(module, [*arrays, mask])
        (got,) = executable.run([*arrays, mask])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
