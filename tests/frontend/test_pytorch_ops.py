"""ATen converters checked op family by op family: small torch functions imported and run on the
interpreter, compared with PyTorch eager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
F = torch.nn.functional

from tensorium.backends import interp  # noqa: E402
from tensorium.frontend.pytorch import flatten_inputs, import_module, unflatten_outputs  # noqa: E402


def run_imported(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Import ``fn`` with torch.export, run @main on the interpreter and rebuild the outputs."""
    imported = import_module(fn, args, kwargs or None)
    flat = [a.numpy() for a in flatten_inputs(imported, args, kwargs)]
    return unflatten_outputs(imported, interp.run(imported.module, flat))


def check(fn: Callable[..., Any], *args: Any, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """``fn`` on Tensorium matches ``fn`` in eager PyTorch, leaf by leaf, dtype included."""
    got = torch.utils._pytree.tree_leaves(run_imported(fn, *args))
    with torch.no_grad():
        want = torch.utils._pytree.tree_leaves(fn(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.numpy().dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=atol)


def gen(*shape: int, seed: int = 0) -> Any:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_elementwise_with_scalars_and_type_promotion() -> None:
    def fn(x: Any, i: Any) -> Any:
        return (
            x + 2,
            3 - x,
            i * 1.5,  # int tensor x float scalar -> float
            i / 2,  # true division of integers gives float
            i + x,  # int + float tensors
            torch.sub(x, x * 2, alpha=3),
            torch.rsub(x, x * 2, alpha=3),  # 2x - 3x: alpha scales the operand rsub subtracts
            torch.rsub(x, 5, alpha=2),
            i // 3,
            torch.remainder(i, 3),
            torch.div(x, 0.7, rounding_mode="trunc"),
            x.pow(2) + torch.rsqrt(x.abs() + 1) + torch.pow(2.0, x),
            torch.maximum(x, -x) - torch.minimum(x, x.neg()),
            (i > 2, x <= 0.5, i == x, x != 1),
            (x > 0) & (i < 4),
            ~(x > 0),
            torch.exp(x).log1p() + torch.expm1(x) + x.sigmoid() + x.tanh() + x.sin() * x.cos(),
            torch.erf(x) + torch.floor(x) + torch.ceil(x) + torch.round(x) + torch.sign(x),
            torch.reciprocal(x + 10) + torch.log2(x.abs() + 1),
            torch.isnan(x / x),
        )

    x = gen(3, 4)
    i = torch.arange(12).reshape(3, 4) - 4
    check(fn, x, i)


def test_activations() -> None:
    def fn(x: Any) -> Any:
        return (
            F.gelu(x),
            F.gelu(x, approximate="tanh"),
            F.silu(x),
            F.relu(x),
            F.relu6(x * 4),
            F.hardtanh(x, -0.5, 0.5),
            F.hardswish(x * 3),
            F.hardsigmoid(x * 3),
            F.leaky_relu(x, 0.2),
            torch.clamp(x, min=-0.3),
            torch.clamp(x, max=0.1),
            torch.clamp(x, x * 0.5, x * 0.5 + 0.1),
            F.softmax(x, -1),
            F.log_softmax(x, dim=0),
        )

    check(fn, gen(4, 5) * 3)


def test_shape_ops() -> None:
    def fn(x: Any) -> Any:
        a, b = x.split([1, 2], dim=1)
        c = torch.chunk(x, 2, dim=-1)
        return (
            x.view(2, -1),
            x.permute(2, 0, 1),
            x.transpose(-1, 0),
            a.expand(2, 4, 4),
            x[:, 1:, ::2],
            x[:, -1],
            x[..., 1:-1],
            torch.cat([a, b, a], dim=1),
            c[0] + c[1],
            x.unsqueeze(-1).unsqueeze(0),
            a.squeeze(1),
            a.squeeze(),
            torch.stack([x, x + 1], dim=-1),
            x.repeat(2, 1, 1, 2),
            F.pad(x, (1, 2, 0, 1), value=0.5),
            x.flatten(1),
            x.t() if x.dim() == 2 else x.mT,
            x[:, 0:0],  # an empty slice
            torch.cat([x[:, 0:0], b], dim=1),
            x.unbind(1)[2],
        )

    check(fn, gen(2, 3, 4))


def test_creation_and_masks() -> None:
    def fn(x: Any) -> Any:
        n = x.shape[-1]
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        return (
            torch.arange(n),
            torch.arange(1, 2 * n, 2, dtype=torch.float32),
            torch.full((2, n), 7.5),
            torch.zeros(n, dtype=torch.int32),
            torch.ones_like(x) + torch.zeros_like(x),
            torch.full_like(x, -2.0),
            x.new_zeros(3),
            torch.triu(x, 1),
            torch.tril(x, -1),
            x.masked_fill(mask, float("-inf")),
            x.masked_fill(~mask, 0.25),
            torch.where(mask, x, torch.zeros(())),
            torch.where(x > 0, x, 2.0),
            x.cumsum(-1),
            torch.arange(n).cumsum(0),
        )

    check(fn, gen(4, 4))


def test_reductions() -> None:
    def fn(x: Any) -> Any:
        values, indices = x.max(dim=1)
        return (
            x.mean(),
            x.mean(dim=(-1, 0), keepdim=True),
            x.sum(1),
            x.sum(),
            x.amax(-1),
            x.amin(0, keepdim=True),
            x.prod(2),
            values,
            indices,
            x.argmax(),
            x.argmin(-1, keepdim=True),
            (x > 0).any(-1),
            (x > -5).all(),
            x.var(-1),
            x.std(dim=0, unbiased=False),
            torch.arange(6).reshape(2, 3).sum(0),
        )

    check(fn, gen(2, 3, 4))


def test_indexing() -> None:
    def fn(x: Any, idx: Any, rows: Any, cols: Any, table: Any) -> Any:
        return (
            x[idx],
            x[:, idx],
            x[rows, cols],
            x[:, rows, cols],
            x[rows],
            torch.gather(x, 2, idx.abs().view(1, 1, -1).expand(2, 3, -1)),
            torch.index_select(x, 1, idx.abs()),
            F.embedding(rows.abs(), table),
        )

    x = gen(4, 3, 4)
    idx = torch.tensor([1, 0, -1])
    rows = torch.tensor([[0, 2], [-1, 1]])
    cols = torch.tensor([2, -3])
    check(fn, x, idx, rows, cols, gen(5, 6))


def test_matmul_family() -> None:
    w = gen(6, 5)
    b = gen(6, seed=1)

    def fn(x: Any, y: Any) -> Any:
        return (
            F.linear(x, w, b),
            F.linear(x, w),
            x @ w.t(),
            torch.bmm(y, y.transpose(1, 2)),
            torch.addmm(b, x, w.t(), beta=0.5, alpha=2.0),
            torch.baddbmm(y, y, y.transpose(1, 2).contiguous()[:, :, :4]),
            torch.einsum("bij,bkj->bik", y, y),
        )

    check(fn, gen(3, 5), gen(2, 4, 4, seed=2))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 1, "padding": 1},
        {"stride": 2, "padding": 0, "dilation": 2},
        {"stride": (2, 1), "padding": (1, 2), "groups": 2},
        {"stride": 1, "padding": 0, "groups": 4},
    ],
)
def test_conv2d(kwargs: dict[str, Any]) -> None:
    conv = torch.nn.Conv2d(4, 8, 3, **kwargs).eval()
    check(conv, gen(2, 4, 9, 8))


def test_conv1d_and_transposed() -> None:
    conv1 = torch.nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=1)
    deconv = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)

    def fn(x: Any, img: Any) -> Any:
        return conv1(x), deconv(img)

    check(fn, gen(2, 3, 10), gen(1, 3, 5, 4))


def test_pooling_and_interpolation() -> None:
    def fn(x: Any) -> Any:
        return (
            F.max_pool2d(x, 3, stride=2, padding=1),
            F.max_pool2d(x, 2, ceil_mode=True),
            F.avg_pool2d(x, 2),
            F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False),
            F.avg_pool2d(x, 3, stride=1, padding=1),
            F.adaptive_avg_pool2d(x, 1),
            F.adaptive_avg_pool2d(x, (3, 2)),
            F.interpolate(x, scale_factor=2, mode="nearest"),
            F.interpolate(x, size=(8, 5), mode="bilinear"),
            F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
        )

    check(fn, gen(2, 3, 6, 4))


def test_norms_and_attention() -> None:
    ln = torch.nn.LayerNorm(8)
    ln_plain = torch.nn.LayerNorm(8, elementwise_affine=False)
    rms = torch.nn.RMSNorm(8, eps=1e-5)
    bn = torch.nn.BatchNorm2d(3).eval()
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)

    def fn(x: Any, img: Any, q: Any, mask: Any) -> Any:
        return (
            ln(x),
            ln_plain(x),
            rms(x),
            F.rms_norm(x, (8,)),
            bn(img),
            F.scaled_dot_product_attention(q, q, q),
            F.scaled_dot_product_attention(q, q * 2, q, is_causal=True),
            F.scaled_dot_product_attention(q, q, q, attn_mask=mask, scale=0.5),
            F.scaled_dot_product_attention(q, q, q, attn_mask=mask.float() * -1.5),
        )

    mask = torch.rand(4, 4, generator=torch.Generator().manual_seed(3)) > 0.3
    mask[:, 0] = True
    check(fn, gen(2, 4, 8), gen(2, 3, 4, 4, seed=1), gen(2, 2, 4, 8, seed=2), mask)


def test_casts_and_no_ops() -> None:
    def fn(x: Any) -> Any:
        return (
            x.to(torch.int32),
            (x * 10).long().float(),
            x.double(),
            x.clone().detach().contiguous(),
            F.dropout(x, 0.5, training=False),
            (x > 0).to(torch.float32),
            x.half().float(),
        )

    check(fn, gen(3, 4) * 3)


def test_size_one_and_negative_axes() -> None:
    def fn(x: Any) -> Any:
        return x.sum(-1, keepdim=True) * x.softmax(-2), x.squeeze(-2).unsqueeze(-3), x.mean(-3)

    check(fn, gen(1, 1, 5))


def test_decomposed_elementwise_math() -> None:
    def fn(x: Any, y: Any) -> Any:
        return (
            torch.atan2(x, y),
            torch.atan2(torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0]), torch.tensor([0.0, 0.0, -0.0, -0.0, 0.0])),
            torch.fmod(x * 5, y),
            torch.fmod(torch.arange(-6, 6), 4),
            torch.hypot(x, y),
            torch.logaddexp(x, y) + torch.logaddexp2(x, y),
            torch.exp2(x) + torch.log10(x.abs() + 1) + torch.tan(x) + torch.sinh(x) + torch.cosh(x),
            torch.asinh(x) + torch.acosh(x.abs() + 1) + torch.atanh(x.clamp(-0.9, 0.9)),
            torch.asin(x.clamp(-1, 1)) + torch.acos(x.clamp(-1, 1)) + torch.atan(x) + torch.erfc(x),
            torch.copysign(x, y) + torch.fmax(x, y) + torch.fmin(x, y) + torch.frac(x * 3),
            torch.xlogy(x.abs(), y.abs()) + torch.deg2rad(x) + torch.rad2deg(x),
            torch.round(x * 100, decimals=1),
        )

    check(fn, gen(4, 5), gen(4, 5, seed=1))


def test_classification_and_bool_arithmetic() -> None:
    def fn(x: Any, b: Any) -> Any:
        return (
            torch.isfinite(x),
            torch.isinf(x),
            torch.isposinf(x),
            torch.isneginf(x),
            torch.signbit(x),
            torch.isfinite(torch.arange(3)),
            b * b.logical_not(),
            b + b,
        )

    x = torch.tensor([1.0, -0.0, float("inf"), -float("inf"), float("nan"), -2.0])
    check(fn, x, x > 0)


def test_decomposed_activations_and_norms() -> None:
    def fn(x: Any, w: Any, b: Any) -> Any:
        return (
            F.elu(x, 0.5),
            F.selu(x),
            F.celu(x, 2.0),
            F.softplus(x, beta=2.0, threshold=1.0),
            F.threshold(x, 0.1, -3.0),
            torch.logit(x.sigmoid(), eps=1e-3),
            F.group_norm(x, 2, w, b),
            F.layer_norm(x, (6,), eps=-0.0),
            torch.linalg.vector_norm(x, dim=-1) + torch.linalg.vector_norm(x, ord=1, dim=-1),
            torch.linalg.vector_norm(x, ord=float("inf")) + torch.linalg.vector_norm(x, ord=3),
            torch.var_mean(x, dim=1),
        )

    check(fn, gen(2, 4, 6), gen(4, seed=1), gen(4, seed=2))


def test_data_movement() -> None:
    def fn(x: Any, idx: Any) -> Any:
        return (
            torch.flip(x, [0, 2]),
            torch.roll(x, 2, 1),
            torch.roll(x, [1, -1], [0, 2]),
            torch.roll(x, 3),
            torch.diagonal(x, 1, 1, 2),
            torch.diagonal(x, -1),
            torch.trace(x[0]),
            x.scatter(1, idx, -1.0),
            x.scatter_add(1, idx, x[:, :2]),
            x.scatter_reduce(1, idx, x[:, :2], "amax"),
            x.index_add(2, torch.tensor([0, 2, 2]), x[:, :, :3]),
            x.index_copy(0, torch.tensor([1, 0]), x.flip(0)),
            x.index_fill(1, torch.tensor([0, 2]), 7.0),
            torch.cumprod(x, 2),
        )

    x = gen(2, 4, 5)
    idx = torch.tensor([[[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]], [[1, 1, 1, 1, 1], [0, 3, 0, 3, 2]]])
    check(fn, x, idx)


def test_index_put() -> None:
    def fn(x: Any, i: Any, j: Any) -> Any:
        a, b, c, d = x.clone(), x.clone(), x.clone(), x.clone()
        a[i] = 5.0
        b[:, j] = x[:, :2] * 2
        c.index_put_((i, j), torch.tensor(1.0), accumulate=True)
        d[x > 0] = 0.0
        return a, b, c, d

    check(fn, gen(3, 4), torch.tensor([2, 0]), torch.tensor([3, 1]))


def test_sorting() -> None:
    def fn(x: Any, i: Any) -> Any:
        return (
            torch.sort(x, dim=1),
            torch.sort(x, dim=0, descending=True),
            torch.sort(i, stable=True),
            torch.argsort(x, dim=-1, descending=True),
            torch.topk(x, 3),
            torch.topk(x, 2, dim=0, largest=False),
            torch.kthvalue(x, 2, 1),
            torch.median(x, 1),
            torch.median(x),
        )

    x = gen(4, 6)
    x[1, 2] = float("nan")
    check(fn, x, torch.tensor([3, 1, 3, 0, 1, 2]))


def test_adaptive_pooling_with_uneven_windows() -> None:
    def fn(x: Any, v: Any) -> Any:
        return (
            F.adaptive_avg_pool2d(x, (3, 4)),
            F.adaptive_avg_pool2d(x, 1),
            F.adaptive_avg_pool1d(x[0], 3),
            F.adaptive_avg_pool3d(v, (2, 3, 2)),
            F.adaptive_max_pool2d(x, (2, 3)),
        )

    check(fn, gen(2, 3, 5, 7), gen(1, 2, 3, 5, 4))


def test_decompositions_run_on_the_cpu_target() -> None:
    import tensorium

    def fn(x: Any, y: Any) -> Any:
        values, indices = torch.topk(x, 2)
        return torch.atan2(x, y) + torch.flip(x, [1]), values, indices, torch.roll(x, 1, 0), torch.cumprod(x, 1)

    x, y = gen(3, 5), gen(3, 5, seed=1)
    got = tensorium.compile(fn, target="cpu")(x, y)
    for g, w in zip(got, fn(x, y)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


def test_window_pooling_in_one_two_and_three_dims() -> None:
    def fn(x: Any, v: Any) -> Any:
        return (
            F.max_pool1d(x[0], 3, 2, 1, return_indices=True),
            F.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True, return_indices=True),
            F.max_pool3d(v, 2, 1, 1, return_indices=True),
            F.avg_pool1d(x[0], 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(x, 3, 2, 1, divisor_override=5),
            F.avg_pool3d(v, 2, 2, 1, count_include_pad=False),
            F.adaptive_max_pool2d(x, (2, 3), return_indices=True),
        )

    check(fn, gen(2, 3, 7, 6), gen(1, 2, 4, 5, 3))


class _Functional(torch.nn.Module):
    """A function as an eval-mode module (plain functions count as training mode when exported)."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def test_conv3d_batch_statistics_and_scatter_of_slices() -> None:
    def fn(v: Any, w: Any, b: Any, x: Any) -> Any:
        return (
            F.conv3d(v, w, b, stride=(2, 1, 1), padding=1, dilation=(1, 2, 1)),
            F.conv3d(v, torch.cat([w, w], 1)[:, :1], None, groups=2),
            F.batch_norm(x, torch.zeros(3), torch.ones(3), training=True),
            F.instance_norm(x),
            torch.slice_scatter(x, x[:, :, ::2] * 2, dim=2, start=0, step=2),
            F.pad(x, (1, 2), mode="circular"),
            F.rms_norm(x, (4,), eps=-1e-3),
        )

    check(_Functional(fn).eval(), gen(1, 2, 5, 6, 4), gen(4, 2, 2, 3, 2, seed=1), gen(4, seed=2), gen(2, 3, 4, seed=3))


def test_running_extremes_searches_and_small_reductions() -> None:
    def fn(x: Any, seq: Any, i: Any) -> Any:
        return (
            torch.cummax(x, 1),
            torch.cummin(i, 0),
            torch.logcumsumexp(x, 1),
            torch.searchsorted(seq, x),
            torch.searchsorted(seq, x, right=True),
            torch.bucketize(x, seq),
            torch.isin(i, torch.tensor([1, 3])),
            torch.max(x) + torch.min(x),
            torch.argmax(x[0, 0]),
            torch.addmv(x[:, 0], x, seq[:5]),
            torch.addbmm(x[:, :2], x.unsqueeze(0), x.T.unsqueeze(0)[:, :5, :2], beta=0.5, alpha=2),
            torch.dist(x, x.flip(0), 3),
            torch.ldexp(x, i[:1].expand(4, 5)),
            torch.angle(x),
        )

    seq = torch.tensor([-1.0, -0.2, 0.0, 0.5, 1.5, 2.0])
    check(fn, gen(4, 5), seq, torch.tensor([[3, 1, 2, 0, 1], [0, 2, 2, 3, 1]]))


def test_random_ops_draw_from_tensoriums_generator() -> None:
    import tensorium

    def fn(x: Any) -> Any:
        return (
            torch.rand_like(x),
            torch.randn(4000),
            torch.bernoulli(torch.full((4000,), 0.25)),
            torch.randint(3, 9, (4000,)),
            torch.empty(4000).exponential_(2.0),
            torch.normal(x, 0.5),
        )

    x = torch.zeros(100, 40)
    first = tensorium.compile(fn, target="cpu")(x)
    again = tensorium.compile(fn, target="interp")(x)
    for got, want, same in zip(first, fn(x), again):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), same.numpy(), rtol=1e-6)  # one generator on every target
    uniform, normal, coins, ints, waits, noisy = (t.double() for t in first)
    assert 0 < uniform.min() and uniform.max() < 1 and abs(uniform.mean() - 0.5) < 0.02
    assert abs(normal.mean()) < 0.06 and abs(normal.std() - 1) < 0.05
    assert set(coins.unique().tolist()) == {0.0, 1.0} and abs(coins.mean() - 0.25) < 0.03
    assert ints.min() == 3 and ints.max() == 8
    assert waits.min() > 0 and abs(waits.mean() - 0.5) < 0.05
    assert abs(noisy.std() - 0.5) < 0.03
    assert not torch.equal(first[0][0], first[0][1])  # every element is its own draw


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
def test_scatter_and_index_reductions_with_and_without_self() -> None:
    def fn(x: Any, idx: Any, i: Any) -> Any:
        src = x[:, :2] * 3
        return (
            x.scatter_reduce(1, idx, src, "sum", include_self=False),
            x.scatter_reduce(1, idx, src, "prod", include_self=False),
            x.scatter_reduce(1, idx, src, "amin", include_self=False),
            x.scatter_reduce(1, idx, src, "mean"),
            x.scatter_reduce(1, idx, src, "mean", include_self=False),
            i.scatter_reduce(0, idx[0, 0], i[:5] * 7, "mean"),
            x.index_reduce(2, torch.tensor([0, 4, 0]), x[:, :, :3], "amax"),
            x.index_reduce(0, torch.tensor([1, 1]), x, "mean", include_self=False),
        )

    x = gen(2, 4, 5)
    idx = torch.tensor([[[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]], [[1, 1, 1, 1, 1], [0, 3, 0, 3, 2]]])
    check(fn, x, idx, torch.arange(-6, 6))


def test_gamma_functions() -> None:
    def fn(x: Any) -> Any:
        return torch.lgamma(x), torch.digamma(x), torch.polygamma(0, x), torch.mvlgamma(x.abs() + 3, 2)

    x = torch.tensor([0.5, 1.0, 2.0, 3.5, 10.0, 150.0, 1e-3, -0.5, -1.5, -2.25, 0.0, -1.0, -3.0])
    check(fn, x, rtol=1e-5, atol=1e-5)


def test_put_pdist_and_narrow_copy() -> None:
    def fn(x: Any, i: Any) -> Any:
        return (
            x.put(i, x[0, :3] * 10),
            x.put(i, torch.ones(3), accumulate=True),
            F.pdist(x, 1.5),
            torch.narrow_copy(x, 1, 1, 2),
        )

    check(fn, gen(4, 5), torch.tensor([0, -1, 7]))


def test_python_numbers_come_back_as_numbers() -> None:
    import tensorium

    def fn(x: Any) -> Any:
        return x.sum().item(), (x > 0).any().item(), x.argmax().item(), torch.broadcast_shapes(x.shape, (3, 1)), x * 2

    compiled = tensorium.compile(fn, target="cpu")
    x = torch.tensor([1.5, -2.0, 4.0])
    total, positive, where, shape, doubled = compiled(x)
    assert (total, positive, where, tuple(shape)) == (3.5, True, 2, (3, 3))
    assert type(total) is float and type(positive) is bool and type(where) is int
    assert torch.equal(doubled, x * 2)
    assert compiled(-x)[:3] == (-3.5, True, 1)


def test_item_used_as_a_size_is_refused_where_it_is_used() -> None:
    from tensorium.frontend.common import UnsupportedOpsError
    from tensorium.frontend.pytorch import import_module

    with pytest.raises(UnsupportedOpsError, match=r"aten.slice.Tensor .*slice with symbolic bounds"):
        import_module(lambda x, i: x[: i.item()], (torch.ones(4), torch.tensor(2)))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_fractional_max_pooling_with_given_samples_matches_eager(target: str) -> None:
    import tensorium

    def fn(x: Any, x3: Any, s: Any, s1: Any, s3: Any) -> Any:
        return (
            F.fractional_max_pool2d(x, 3, output_size=(2, 3), return_indices=True, _random_samples=s),
            F.fractional_max_pool2d(x[0], (2, 3), output_size=(4, 1), return_indices=True, _random_samples=s1),
            F.fractional_max_pool3d(x3, (2, 3, 2), output_size=(3, 2, 4), return_indices=True, _random_samples=s3),
        )

    args = (gen(2, 3, 9, 9), gen(1, 2, 6, 7, 8), torch.rand(2, 3, 2), torch.rand(1, 3, 2), torch.rand(1, 2, 3))
    got, want = tensorium.compile(fn, target=target)(*args), fn(*args)
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)):
        assert torch.equal(g, w)


def test_fractional_max_pooling_draws_its_own_windows() -> None:
    import tensorium

    compiled = tensorium.compile(lambda x: F.fractional_max_pool2d(x, 2, output_size=3), target="cpu")
    x = torch.arange(64.0).reshape(1, 1, 8, 8)
    out = compiled(x)
    assert out.shape == (1, 1, 3, 3) and set(out.flatten().tolist()) <= set(x.flatten().tolist())
    assert (out.diff(dim=-1) > 0).all() and (out.diff(dim=-2) > 0).all()  # windows move right and down


def test_lu_unpack_of_given_factors() -> None:
    def fn(lu: Any, piv: Any, lu2: Any, piv2: Any) -> Any:
        return (
            torch.lu_unpack(lu, piv),
            torch.lu_unpack(lu2, piv2),
            torch.lu_unpack(lu, piv, unpack_data=False)[0],
            torch.lu_unpack(lu2, piv2, unpack_pivots=False)[1:],
        )

    wide, batched = torch.linalg.lu_factor(gen(4, 6)), torch.linalg.lu_factor(gen(2, 5, 3, seed=1))
    check(fn, *wide, *batched, rtol=0, atol=0)
