"""ATen special functions (zeta, polygamma, erfinv, modified Bessel) and mask / position ops (masked_scatter,
index_put with a boolean mask, nonzero_static, max pooling's backward, _trilinear) against eager PyTorch,
edge cases included (poles, the ends of erfinv's domain, both sides of the Bessel series switch)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")

sys.path.insert(0, str(Path(__file__).parent))  # the helpers beside this file

from torch_functions import FunctionModule as _Fn  # noqa: E402
from torch_functions import check_against_eager as _check  # noqa: E402

import tensorium  # noqa: E402

X = torch.tensor([-7.3, -2.5, -1.5, -0.2, 0.0, 0.3, 1.0, 2.5, 8.9, 15.0, 42.0])


def test_polygamma_of_every_order() -> None:
    _check(lambda x: tuple(torch.polygamma(n, x) for n in (1, 2, 3, 4)), X)


def test_polygamma_poles_are_infinite() -> None:
    # (torch's trigamma, order 1, gives a large finite value at negative integers: only 0 is checked there)
    _check(
        lambda x: (torch.polygamma(1, x[:1]), torch.polygamma(2, x), torch.polygamma(3, x)),
        torch.tensor([0.0, -1.0, -3.0]),
    )


def test_zeta_with_tensor_exponents() -> None:
    s = torch.tensor([0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 2.0, 3.0])
    q = torch.tensor([1.0, 2.0, 0.5, -1.5, 3.0, 10.0, 0.0, -2.0])
    _check(torch.special.zeta, s, q)


def test_erfinv_across_its_domain() -> None:
    _check(torch.erfinv, torch.tensor([-1.5, -1.0, -0.999, -0.5, 0.0, 1e-4, 0.3, 0.9, 0.99999, 1.0]))


def test_modified_bessel_on_both_sides_of_the_series_switch() -> None:
    functions = (torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e)
    x = torch.tensor([-30.0, -19.9, -3.0, -0.5, 0.0, 0.5, 3.0, 19.9, 20.1, 30.0, 80.0])
    _check(lambda x: tuple(fn(x) for fn in functions), x)


def test_special_functions_on_the_cpu() -> None:
    _check(lambda x: (torch.polygamma(2, x), torch.erfinv(x / 50.0), torch.i0(x)), X, target="cpu")


MASK = torch.tensor([[True, False, True], [False, False, True]])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_masked_scatter_takes_source_elements_in_order(target: str) -> None:
    x = torch.zeros(2, 3)
    _check(torch.masked_scatter, x, MASK, torch.arange(10.0).reshape(2, 5), target=target)
    _check(torch.masked_scatter, x, torch.tensor([True, False, True]), torch.arange(6.0), target=target)


def test_index_put_with_a_boolean_mask() -> None:
    x = torch.arange(12.0).reshape(4, 3)
    rows = torch.tensor([True, False, True, True])
    _check(lambda x, m, v: torch.index_put(x, (m,), v), x, rows, torch.tensor([-1.0, -2.0, -3.0]))
    _check(lambda x, m, v: torch.index_put(x, (m,), v), x, rows, torch.arange(9.0).reshape(3, 3))
    _check(lambda x, m, v: torch.index_put(x, (m,), v, accumulate=True), x, rows, torch.tensor(5.0))
    _check(lambda x, m, v: torch.index_put(x, (m,), v), x, rows.reshape(4, 1).expand(4, 3), torch.tensor(0.5))


@pytest.mark.parametrize("size", [0, 2, 4, 7])
def test_nonzero_static_pads_or_cuts(size: int) -> None:
    x = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
    _check(lambda x: torch.nonzero_static(x, size=size, fill_value=-5), x)


def test_max_pool2d_backward_adds_the_gradient_at_the_pooled_positions() -> None:
    def fn(x: Any, grad: Any) -> Any:
        _, indices = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [1, 1])
        return torch.ops.aten.max_pool2d_with_indices_backward(grad, x, [2, 2], [1, 1], [0, 0], [1, 1], False, indices)

    x = torch.tensor([[[[1.0, 5.0, 2.0], [0.0, 3.0, 4.0], [6.0, 1.0, 0.5]]]])
    _check(fn, x, torch.arange(4.0).reshape(1, 1, 2, 2) + 1.0, target="cpu")


def test_bilinear_layer() -> None:
    torch.manual_seed(0)
    _check(torch.nn.functional.bilinear, torch.randn(2, 3), torch.randn(2, 4), torch.randn(5, 3, 4), torch.randn(5))


def test_as_strided_views_and_scatter() -> None:
    x = torch.arange(12.0).reshape(3, 4)
    _check(lambda x: torch.as_strided(x, (3, 3), (1, 2), 1), x)  # overlapping windows
    _check(lambda x: torch.as_strided(x, (2, 2), (4, 1)).clone(), x)
    _check(
        lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (1, 4), 2), x, torch.tensor([[-1.0, -2.0], [-3.0, -4.0]])
    )
    _check(lambda x: x.clone().resize_(4, 3), x)


def test_as_strided_outside_its_input_is_refused() -> None:
    module = _Fn(lambda x: torch.as_strided(x, (4,), (5,))).eval()
    with pytest.raises(tensorium.errors.TensoriumError, match="as_strided reads outside its input of 12 elements"):
        tensorium.compile(module, target="interp")(torch.arange(12.0))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_modes_with_padding_and_an_empty_bag(mode: str) -> None:
    torch.manual_seed(0)
    weight, indices = torch.randn(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 9])
    offsets = torch.tensor([0, 3, 3, 7])

    def fn(w: Any, i: Any, o: Any) -> Any:
        return torch.nn.functional.embedding_bag(i, w, o, mode=mode, padding_idx=4, include_last_offset=True)

    _check(fn, weight, indices, offsets, target="cpu" if mode == "max" else "interp")


def test_embedding_bag_with_per_sample_weights() -> None:
    torch.manual_seed(0)
    weight, indices, offsets, scale = (
        torch.randn(10, 3),
        torch.tensor([1, 2, 4, 5]),
        torch.tensor([0, 1]),
        torch.rand(4),
    )
    _check(
        lambda w, i, o, s: torch.nn.functional.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
        weight,
        indices,
        offsets,
        scale,
    )


def test_nanmedian_skips_nans() -> None:
    nan = float("nan")
    x = torch.tensor([[3.0, nan, 1.0, 7.0], [2.0, 5.0, nan, 4.0], [9.0, 8.0, 6.0, 0.5]])
    _check(lambda x: (torch.nanmedian(x), *torch.nanmedian(x, dim=1), *torch.nanmedian(x, dim=0, keepdim=True)), x)
    # a row of NaNs has median NaN (torch's index there is unspecified)
    _check(lambda x: torch.nanmedian(x, dim=1).values, torch.tensor([[nan, nan], [1.0, nan]]))


def test_mode_prefers_the_smallest_frequent_value_and_its_last_index() -> None:
    x = torch.tensor([[1.0, 2, 2, 3, 3, 0], [5, 5, 1, 1, 7, 7], [4, 3, 2, 1, 0, 9]])
    _check(lambda x: (*torch.mode(x, 1), *torch.mode(x, 0, keepdim=True)), x)
    _check(lambda x: torch.mode(x), torch.tensor([[3, 1, 3, 1], [2, 2, 2, 9]]))


@pytest.mark.parametrize("initial", [None, 1.0])
def test_segment_reduce_every_reduction(initial: float | None) -> None:
    data = torch.tensor([[-8.0, 1.0], [-1.5, 2.0], [-4.0, 0.5], [-2.5, 3.0], [-7.5, -1.0]])
    lengths, offsets = torch.tensor([0, 1, 2, 2]), torch.tensor([0, 0, 1, 3, 5])

    def fn(d: Any, lengths: Any, offsets: Any) -> Any:
        by_lengths = [
            torch.segment_reduce(d, r, lengths=lengths, initial=initial) for r in ("sum", "mean", "max", "min")
        ]
        return (*by_lengths, torch.segment_reduce(d, "prod", offsets=offsets, initial=initial))

    _check(fn, data, lengths, offsets)


def test_batch_norm_outside_training_saves_no_statistics() -> None:
    x, w, b, mean, var = torch.randn(3, 2, 4), torch.randn(2), torch.randn(2), torch.randn(2), torch.rand(2)
    _check(lambda *a: torch.native_batch_norm(*a, False, 0.1, 1e-5), x, w, b, mean, var)


@pytest.mark.parametrize(
    "options",
    [
        {"stride": 2, "padding": 1, "output_padding": 1},
        {"stride": (1, 2, 1), "dilation": (2, 1, 1), "groups": 2},
    ],
)
def test_conv_transpose3d(options: dict[str, Any]) -> None:
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 4, 3, 4, 3), torch.randn(4, 3, 3, 2, 2), torch.randn(3 * options.get("groups", 1))
    _check(lambda x, w, b: torch.nn.functional.conv_transpose3d(x, w, b, **options), x, w, b, target="cpu")


def test_frexp_with_zeros_subnormals_and_infinities() -> None:
    values = [0.0, -0.0, 1.0, 0.5, 3.0, -5.5, 1e-40, float("inf"), float("nan"), -float("inf"), 2.0**-126, 0.75]
    _check(
        torch.frexp, torch.tensor(values + [2.0**k for k in range(-20, 21)] + [2.0**k * 0.999999 for k in range(-5, 6)])
    )


def test_multinomial_with_replacement_follows_the_weights() -> None:
    weights = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    module = _Fn(lambda p: torch.multinomial(p, 4000, replacement=True)).eval()
    drawn = tensorium.compile(module, target="interp")(weights)
    assert drawn.shape == (2, 4000) and drawn.dtype == torch.int64
    for row, p in zip(drawn, weights):
        frequency = torch.bincount(row, minlength=4).double() / 4000
        torch.testing.assert_close(frequency, (p / p.sum()).double(), rtol=0, atol=0.03)


def test_multinomial_without_replacement_draws_distinct_categories() -> None:
    weights = torch.tensor([0.5, 0.0, 2.0, 1.0, 0.25])
    module = _Fn(lambda p: torch.multinomial(p, 4)).eval()
    drawn = tensorium.compile(module, target="cpu")(weights)
    assert drawn.shape == (4,) and drawn.dtype == torch.int64
    assert sorted(drawn.tolist()) == [0, 2, 3, 4]  # every category of positive weight, never the zero one


def test_nextafter_steps_one_float_either_way() -> None:
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -5.5, 1e-45, -1e-45, 1e-40, 2.0**-126, 3.4e38, float("inf"), float("nan")]
    x = torch.tensor(edges * 3)
    toward = torch.tensor([10.0] * len(edges) + [-10.0] * len(edges) + edges)
    _check(torch.nextafter, x, toward, rtol=0, atol=0)


def test_incomplete_gamma_both_ways_and_its_edges() -> None:
    inf, nan = float("inf"), float("nan")
    a = torch.tensor([0.0, 0.0, 1.0, 2.5, 0.3, 10.0, 50.0, 3.0, 1.0, -1.0, 2.0, inf, 2.0, 0.01, 80.0, 7.0])
    x = torch.tensor([0.0, 2.0, 0.0, 1.0, 4.0, 12.0, 45.0, 0.1, inf, 1.0, -1.0, 3.0, nan, 0.5, 90.0, 30.0])
    _check(lambda a, x: (torch.igamma(a, x), torch.igammac(a, x)), a, x)


def test_normal_tail_functions_and_spherical_bessel() -> None:
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([-30.0, -9.0, -5.1, -4.9, -1.0, 0.0, 0.5, 1.9, 2.1, 5.0, 30.0, 1e3, inf, -inf, nan])
    p = torch.tensor([0.0, 1e-10, 0.02, 0.5, 0.97, 1.0, 1.2])
    functions = (torch.special.erfcx, torch.special.log_ndtr, torch.special.spherical_bessel_j0)
    _check(lambda x, p: (*(fn(x) for fn in functions), torch.special.ndtri(p)), x, p)
    _check(lambda x: (torch.special.modified_bessel_i0(x), torch.special.modified_bessel_i1(x)), x[1:12])


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_bessel_functions_of_the_first_and_second_kind(target: str) -> None:
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([0.0, 1e-3, 0.5, 2.0, 5.0, 7.9, 8.1, 12.0, 19.9, 20.1, 30.0, 100.0, -2.0, -30.0, inf, -inf, nan])
    special = torch.special
    functions = (
        special.bessel_j0,
        special.bessel_j1,
        special.bessel_y0,
        special.bessel_y1,
        special.modified_bessel_k0,
        special.modified_bessel_k1,
        special.scaled_modified_bessel_k0,
        special.scaled_modified_bessel_k1,
    )
    _check(lambda x: tuple(fn(x) for fn in functions), x, target=target)
    grid = torch.linspace(-40, 40, 801)  # both sides of both switches, near many zeros of J and Y
    _check(lambda x: tuple(fn(x) for fn in functions[:4]), grid, target=target)


@pytest.mark.parametrize("size", [(3, 7), (5, 5), (14, 30)])
def test_antialiased_bilinear_resize(size: tuple[int, int]) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 10, 20)
    _check(lambda x: torch.nn.functional.interpolate(x, size=size, mode="bilinear", antialias=True), x)
