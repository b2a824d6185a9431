"""The search spaces of the convolution, reduction, softmax and norm kernels: every legal point computes what
the interpreter computes (compiled for this host, AVX2 and SSE), configs print and parse, illegal points
are refused by name, and the default rule fits the target's registers."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import ScheduleError
from tensorium.ir import Operation, graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import BufferType, TensorType, f32
from tensorium.lowering import lower_function, lower_op
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.passes import PassManager
from tensorium.targets import Target, host_target, parse_target
from tensorium.testing import build_module

RNG = np.random.default_rng(7)
TARGETS = ("cpu", "cpu:x86-64-v3", "cpu:x86-64")
"""This host, AVX2 + FMA (16 registers of 8 f32) and SSE (16 of 4): all run on an AVX-512 host."""


@dataclass(frozen=True)
class Case:
    """A one-op program of a kernel family: its operand shapes, its body, and the fuse pass when the
    kernel is a fused group anchored on the op."""

    family: str
    shapes: tuple[tuple[int, ...], ...]
    body: Callable[..., Any]
    fused: bool = False

    def module(self) -> Operation:
        module = build_module([TensorType(s, f32) for s in self.shapes], self.body)
        if self.fused:
            PassManager.parse("fuse").run(module)
        return module

    def inputs(self) -> list[np.ndarray]:
        return [RNG.standard_normal(s).astype(np.float32) for s in self.shapes]


def _nhwc(x: Any, w: Any, b: Any) -> Any:
    return graph.conv2d(x, w, b, layout="NHWC", kernel_layout="HWIO", strides=[2, 1], padding=[1, 0, 1, 1])


CASES = {
    "conv_nchw": Case("conv", ((2, 3, 6, 21), (5, 3, 3, 2), (5,)), lambda x, w, b: graph.conv2d(x, w, b)),
    "conv_nchw_padded": Case(
        "conv", ((1, 2, 5, 9), (7, 2, 3, 3)), lambda x, w: graph.conv2d(x, w, padding=[1, 1, 1, 1], dilations=[1, 2])
    ),
    "conv_nhwc": Case("conv", ((2, 7, 6, 3), (3, 2, 3, 20), (20,)), _nhwc),
    "conv_nhwc_relu": Case("conv", ((1, 5, 5, 4), (1, 1, 4, 9), (9,)), lambda *v: graph.relu(_nhwc(*v)), fused=True),
    "reduce_sum": Case("reduce", ((3, 4, 37),), lambda x: graph.reduce_sum(x, axes=(1, 2))),
    "reduce_max": Case("reduce", ((5, 70),), lambda x: graph.reduce_max(x, axes=(-1,), keepdims=True)),
    "reduce_mean": Case("reduce", ((2, 19),), lambda x: graph.reduce_mean(x, axes=(1,))),
    "softmax": Case("softmax", ((4, 45),), lambda x: graph.softmax(x)),
    "log_softmax": Case("softmax", ((3, 2, 17),), lambda x: graph.log_softmax(x, axis=-1)),
    "layer_norm": Case("norm", ((3, 5, 11), (5, 11), (5, 11)), lambda x, w, b: graph.layer_norm(x, w, b, axis=1)),
    "rms_norm": Case("norm", ((4, 33), (33,)), lambda x, w: graph.rms_norm(x, w)),
    "batch_norm": Case("norm", ((2, 3, 4, 13), *[(3,)] * 4), lambda x, *p: graph.batch_norm(x, *p, axis=1)),
}


def kernel_op(module: Operation) -> Operation:
    """The one op of @main that becomes a kernel (the last before the return)."""
    return func_body(functions(module)[0]).ops[-2]


def positive_variances(case: Case, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Batch norm's variance operand made positive (the others are any normal samples)."""
    if case.body is CASES["batch_norm"].body:
        inputs[-1] = np.abs(inputs[-1]) + 0.5
    return inputs


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("target_name", TARGETS)
def test_the_space_enumerates_and_holds_its_default(name: str, target_name: str) -> None:
    case, target = CASES[name], parse_target(target_name)
    op = kernel_op(case.module())
    space = kernel_space(op, target)
    assert space is not None and space.family == case.family
    points = list(space.points())
    assert points and len(points) == space.size() == len(set(points))
    assert all(space.check(p) == p for p in points)
    assert default_config(op, target) in points


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_points_compute_what_the_interpreter_computes(name: str) -> None:
    case = CASES[name]
    module = case.module()
    op = kernel_op(module)
    inputs = positive_variances(case, case.inputs())
    (want,) = interp.run(module, inputs)
    rng = random.Random(name)
    for target in filter(Target.runs_here, map(parse_target, TARGETS)):
        space = kernel_space(op, target)
        assert space is not None
        points = {default_config(op, target), *(space.sample(rng) for _ in range(2))}
        for config in points:
            assert config is not None
            exe = CpuExecutable.build(module, target=target, configs={kernel_key(op): config})
            assert f'config = "{config}"' in str(exe.loop_ir)
            (got,) = exe.run(inputs)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{target} {config}")


@pytest.mark.parametrize("name", ["conv_nchw_padded", "conv_nhwc_relu", "reduce_max", "layer_norm"])
def test_random_points_compute_the_same_on_the_loop_interpreter(name: str) -> None:
    case = CASES[name]
    module, inputs = case.module(), case.inputs()
    op = kernel_op(module)
    (want,) = interp.run(module, inputs)
    target = parse_target("cpu:x86-64")
    space = kernel_space(op, target)
    assert space is not None
    rng = random.Random(name)
    for config in {space.sample(rng) for _ in range(3)}:
        (got,) = run_plan(lower_function(module, target=target, configs={kernel_key(op): config}), inputs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(config))


@pytest.mark.parametrize("name", sorted(CASES))
def test_configs_print_and_parse_back(name: str) -> None:
    op = kernel_op(CASES[name].module())
    space = kernel_space(op, host_target())
    assert space is not None
    for config in space.points():
        assert Config.parse(str(config)) == config
        assert space.check(Config.parse(str(config))) == config


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("conv_nchw", "conv{algo=blocked,mr=5,nv=2,split=rows}", "mr=5 is not one of"),
        ("conv_nchw", "conv{algo=blocked,mr=6,nv=2,split=pixels}", "split=pixels is not one of"),
        ("conv_nchw", "conv{algo=blocked,mr=4,nv=3,split=rows}", "nv=3 is not one of"),
        ("conv_nhwc", "conv{algo=fast,mr=6,nv=2,split=pixels}", "algo=fast is not one of"),
        ("conv_nhwc", "conv{algo=blocked,mr=6,nv=2}", "lacks knob 'split'"),
        ("reduce_sum", "reduce{vector=true,unroll=3}", "unroll=3 is not one of"),
        ("reduce_sum", "reduce{vector=yes,unroll=1}", "vector=yes is not one of"),
        ("reduce_sum", "reduce{vector=false,unroll=2}", "combines knobs"),
        ("softmax", "softmax{vector=true,unroll=1,lanes=8}", "unknown knob lanes"),
        ("batch_norm", "norm{vector=true,unroll=1}", "unknown knob vector"),
        ("layer_norm", "reduce{vector=true,unroll=1}", "is for a 'reduce' kernel, not 'norm'"),
    ],
)
def test_an_illegal_config_is_refused_naming_the_knob(name: str, text: str, message: str) -> None:
    op = kernel_op(CASES[name].module())
    with pytest.raises(ScheduleError, match=message):
        lower_op(op, "k", target=parse_target("cpu:x86-64-v3"), config=Config.parse(text))


def test_a_tile_that_spills_is_not_a_point_on_sixteen_registers() -> None:
    op = kernel_op(CASES["conv_nchw"].module())
    tile = Config.parse("conv{algo=blocked,mr=6,nv=4,split=rows}")  # 24 accumulators
    assert kernel_space(op, parse_target("cpu:skylake-avx512")).check(tile) == tile  # type: ignore[union-attr]
    with pytest.raises(ScheduleError, match="combines knobs in a way 'conv' kernels cannot build"):
        lower_op(op, "k", target=parse_target("cpu:x86-64-v3"), config=tile)


def local_shapes(kernel: Operation) -> list[tuple[Any, ...]]:
    """The shapes of the kernel's ``local`` buffers, in order."""
    out = []
    for op in kernel.walk():
        t = op.results[0].type if op.name == "loop.alloc" else None
        if isinstance(t, BufferType) and t.space == "local":
            out.append(t.shape)
    return out


@pytest.mark.parametrize(
    ("target_name", "nchw", "nhwc", "tile", "panel"),
    [
        ("cpu:skylake-avx512", "nv=4,split=rows", "nv=4,split=pixels", (6, 64), (6, 64)),
        ("cpu:x86-64-v3", "nv=2,split=rows", "nv=2,split=pixels", (6, 16), (6, 16)),
        ("cpu:x86-64", "nv=2,split=rows", "nv=2,split=channels", (6, 8), (6, 8)),
    ],
)
def test_the_default_conv_tile_fits_the_registers(
    target_name: str, nchw: str, nhwc: str, tile: tuple[int, int], panel: tuple[int, int]
) -> None:
    target = parse_target(target_name)
    nchw_op = kernel_op(build_module([TensorType((1, 8, 10, 60), f32), TensorType((16, 8, 3, 3), f32)], graph.conv2d))
    nhwc_op = kernel_op(
        build_module(
            [TensorType((1, 10, 10, 8), f32), TensorType((3, 3, 8, 64), f32)],
            lambda x, w: graph.conv2d(x, w, layout="NHWC", kernel_layout="HWIO"),
        )
    )
    assert str(default_config(nchw_op, target)) == f"conv{{algo=blocked,mr=6,{nchw}}}"
    assert str(default_config(nhwc_op, target)) == f"conv{{algo=blocked,mr=6,{nhwc}}}"
    assert tile in local_shapes(lower_op(nchw_op, "k", target=target))
    assert panel in local_shapes(lower_op(nhwc_op, "k", target=target))


def test_narrow_nhwc_convolutions_have_narrow_tiles() -> None:
    op = kernel_op(CASES["conv_nhwc"].module())  # 20 output channels
    avx512, avx2 = parse_target("cpu:skylake-avx512"), parse_target("cpu:x86-64-v3")
    space = kernel_space(op, avx512)
    assert space is not None
    assert [p.int("nv") for p in space.points() if p["algo"] == "blocked" and p["mr"] == 1] == [1, 1, 2, 2]
    assert str(default_config(op, avx512)) == "conv{algo=blocked,mr=6,nv=2,split=pixels}"
    assert str(default_config(op, avx2)) == "conv{algo=blocked,mr=6,nv=2,split=pixels}"


@pytest.mark.parametrize(("target_name", "deep"), [("cpu:skylake-avx512", 256), ("cpu:x86-64-v3", 128)])
def test_deep_nhwc_layers_split_channel_panels(target_name: str, deep: int) -> None:
    target = parse_target(target_name)
    for outs, split in ((deep // 2, "pixels"), (deep, "channels")):
        types = [TensorType((1, 7, 7, 32), f32), TensorType((3, 3, 32, outs), f32)]
        op = kernel_op(build_module(types, lambda x, w: graph.conv2d(x, w, layout="NHWC", kernel_layout="HWIO")))
        config = default_config(op, target)
        assert config is not None and config["split"] == split


def test_simple_nest_convolutions_have_no_space() -> None:
    grouped = build_module(
        [TensorType((1, 4, 5, 5), f32), TensorType((4, 2, 3, 3), f32)], lambda x, w: graph.conv2d(x, w, groups=2)
    )
    assert kernel_space(kernel_op(grouped), host_target()) is None


@pytest.mark.parametrize(("target_name", "partials"), [("cpu:skylake-avx512", 16), ("cpu:x86-64-v3", 8)])
def test_the_default_reduction_keeps_one_register_of_partials(target_name: str, partials: int) -> None:
    target: Target = parse_target(target_name)
    for name in ("reduce_sum", "softmax", "layer_norm"):
        op = kernel_op(CASES[name].module())
        assert default_config(op, target) == Config(CASES[name].family, (("vector", True), ("unroll", 1)))
        assert (partials,) in local_shapes(lower_op(op, "k", target=target))
        unrolled = Config(CASES[name].family, (("vector", True), ("unroll", 4)))
        assert (4 * partials,) in local_shapes(lower_op(op, "k", target=target, config=unrolled))
        scalar = Config(CASES[name].family, (("vector", False), ("unroll", 1)))
        assert all(len(s) == 0 for s in local_shapes(lower_op(op, "k", target=target, config=scalar)))


def test_reductions_without_a_vector_path_have_no_space() -> None:
    inner = build_module([TensorType((4, 6), f32)], lambda x: graph.reduce_sum(x, axes=(0,)))
    assert kernel_space(kernel_op(inner), host_target()) is None
    column = build_module([TensorType((4, 6), f32)], lambda x: graph.softmax(x, axis=0))
    assert kernel_space(kernel_op(column), host_target()) is None
