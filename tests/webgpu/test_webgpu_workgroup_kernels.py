"""Workgroup-cooperative kernels on WebGPU: reductions by whole workgroups (a tree in workgroup memory between
barriers) and tiled GEMM (the gpu_gemm family), their knobs, and their results against the interpreter on
lavapipe (wgpu-py) and on Dawn (Node)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.core import Operation
from tensorium.ir.parser import parse_module
from tensorium.lowering.space import Config, tunable_kernels
from tensorium.passes import PassManager
from tensorium.targets import parse_target

from .js_harness import node_outputs, require_dawn
from .models import random_inputs, reference

TEXT = """
module {
  func.func @main(%a: tensor<6x300xf32>, %c: tensor<4x10x20xf32>, %x: tensor<2x70x50xf32>, %w: tensor<90x50xf32>)
      -> (tensor<6xf32>, tensor<6x1xf32>, tensor<4xf32>, tensor<6xf32>, tensor<2x70x90xf32>) {
    %0 = graph.reduce_sum %a {axes = [1]} : (tensor<6x300xf32>) -> tensor<6xf32>
    %1 = graph.reduce_max %a {axes = [1], keepdims = true} : (tensor<6x300xf32>) -> tensor<6x1xf32>
    %2 = graph.reduce_mean %c {axes = [1, 2]} : (tensor<4x10x20xf32>) -> tensor<4xf32>
    %3 = graph.reduce_min %a {axes = [-1]} : (tensor<6x300xf32>) -> tensor<6xf32>
    %4 = graph.matmul %x, %w {transpose_b = true} : (tensor<2x70x50xf32>, tensor<90x50xf32>) -> tensor<2x70x90xf32>
    func.return %0, %1, %2, %3, %4 : tensor<6xf32>, tensor<6x1xf32>, tensor<4xf32>, tensor<6xf32>, tensor<2x70x90xf32>
  }
}"""
SMALL_WORKGROUPS = "webgpu:max_compute_invocations_per_workgroup=32"


def _module() -> Operation:
    return parse_module(TEXT)


def _families(spec: str) -> dict[str, str]:
    return {k.key: k.space.family for k in tunable_kernels(_module(), parse_target(spec))}


def _check(executable: WebGPUExecutable, outputs: list[np.ndarray] | None = None) -> None:
    inputs = random_inputs(_module())
    got = executable.run(inputs) if outputs is None else outputs
    want = reference(_module(), inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)


def test_long_trailing_reductions_and_large_products_get_workgroup_families() -> None:
    families = sorted(_families("webgpu").values())
    assert families == ["gpu_gemm"] + ["gpu_rows"] * 4


def test_knob_values_follow_the_targets_limits() -> None:
    spaces = {k.space.family: k.space for k in tunable_kernels(_module(), parse_target(SMALL_WORKGROUPS))}
    assert spaces["gpu_rows"].knobs[0].values == (32,)
    rows = [k for k in tunable_kernels(_module(), parse_target("webgpu")) if k.space.family == "gpu_rows"]
    assert rows and all(k.default["threads"] == 32 < max(k.space.knobs[0].values) for k in rows), "the fewest"
    for point in spaces["gpu_gemm"].points():
        v = point.as_dict()
        assert (int(v["bm"]) // int(v["tm"])) * (int(v["bn"]) // int(v["tn"])) <= 32
    storage = "webgpu:max_compute_workgroup_storage_size=4096"
    points = next(k.space for k in tunable_kernels(_module(), parse_target(storage)) if k.space.family == "gpu_gemm")
    sizes = [4 * p.int("bk") * (p.int("bm") + p.int("bn")) * p.int("stages") for p in points.points()]
    assert max(sizes) <= 4096 < max(4 * p.int("bk") * (p.int("bm") + p.int("bn")) * 2 for p in points.points())
    tiny = "webgpu:max_compute_invocations_per_workgroup=16,max_compute_workgroup_storage_size=64"
    assert "gpu_rows" not in _families(tiny).values(), "no workgroup fits: the general family stays"
    assert "gpu_gemm" not in _families("webgpu:max_compute_workgroups_per_dimension=1").values()


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("spec", ["webgpu", SMALL_WORKGROUPS])
def test_workgroup_kernels_match_the_interpreter(spec: str) -> None:
    executable = WebGPUExecutable.build(_module(), target=parse_target(spec))
    coop = [s for s in executable.shaders.values() if "var<workgroup>" in s.wgsl]
    assert len(coop) == 5 and all("workgroupBarrier();" in s.wgsl for s in coop)
    assert all(s.workgroup[0] <= (32 if spec == SMALL_WORKGROUPS else 256) for s in coop)
    _check(executable)


@pytest.mark.usefixtures("gpu")
def test_every_workgroup_size_and_sampled_gemm_tiles_match_the_interpreter() -> None:
    target = parse_target("webgpu")
    kernels = {k.space.family: k for k in tunable_kernels(_module(), target)}
    reductions = [k for k in tunable_kernels(_module(), target) if k.space.family == "gpu_rows"]
    gemm_points = random.Random(0).sample(list(kernels["gpu_gemm"].space.points()), 3)
    for n, size in enumerate(kernels["gpu_rows"].space.knobs[0].values):
        configs: dict[str, Config] = {k.key: Config("gpu_rows", (("threads", size),)) for k in reductions}
        configs[kernels["gpu_gemm"].key] = gemm_points[n % len(gemm_points)]
        executable = WebGPUExecutable.build(_module(), target=target, configs=configs)
        assert {s.workgroup[0] for name, s in executable.shaders.items() if name.startswith("reduce")} == {size}
        _check(executable)


def test_workgroup_kernels_run_on_dawn(tmp_path: Path) -> None:
    require_dawn()
    WebGPUExecutable.build(_module()).to_files(tmp_path / "exe")
    inputs = random_inputs(_module())
    got = node_outputs(tmp_path / "exe", inputs, tmp_path)
    for g, w in zip(got, reference(_module(), inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-5)


SOFTMAX = """
module {
  func.func @main(%a: tensor<300x40xf32>) -> tensor<300x40xf32> {
    %0 = graph.softmax %a {axis = 1} : (tensor<300x40xf32>) -> tensor<300x40xf32>
    func.return %0 : tensor<300x40xf32>
  }
}"""


def test_the_gpu_threads_knob_is_the_workgroup_size_within_the_limits() -> None:
    def threads(spec: str) -> tuple[object, ...] | None:
        (kernel,) = tunable_kernels(parse_module(SOFTMAX), parse_target(spec))
        knobs = {k.name: k.values for k in kernel.space.knobs}
        return knobs.get("threads")

    assert threads("webgpu") == (32, 64, 128, 256)
    assert threads("webgpu:max_compute_invocations_per_workgroup=64") == (32, 64)
    assert threads("webgpu:max_compute_invocations_per_workgroup=16") is None, "no warp fits: no knob"
    target = parse_target("webgpu")
    (kernel,) = tunable_kernels(parse_module(SOFTMAX), target)
    assert kernel.default["threads"] == 256
    for size in (32, 128):
        executable = WebGPUExecutable.build(
            parse_module(SOFTMAX), target=target, configs={kernel.key: kernel.default.replace(threads=size)}
        )
        (shader,) = executable.shaders.values()
        assert shader.workgroup == (size, 1, 1) and shader.grid == (-(-300 // size), 1, 1)


@pytest.mark.usefixtures("gpu")
def test_softmax_and_norms_over_long_rows_run_by_workgroups() -> None:
    import tensorium
    from tensorium import nn

    def rows(x: np.ndarray) -> object:
        return nn.softmax(x, axis=-1), nn.log_softmax(x, axis=-1), nn.layer_norm(x)

    x = np.random.default_rng(4).standard_normal((6, 200)).astype(np.float32)
    model = tensorium.compile(rows, target="webgpu", disable=("fuse",))
    got = model(x)
    shaders = model.artifact.executable.shaders.values()  # type: ignore[union-attr]
    assert sum("var<workgroup>" in s.wgsl and "workgroupBarrier();" in s.wgsl for s in shaders) == 3
    for g, w in zip(got, tensorium.compile(rows, target="interp")(x)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


CONV = """
module {
  func.func @main(%x: tensor<2x3x12x12xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>) -> tensor<2x16x12x12xf32> {
    %0 = graph.conv2d %x, %w, %b {padding = [1, 1, 1, 1]}
      : (tensor<2x3x12x12xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<2x16x12x12xf32>
    func.return %0 : tensor<2x16x12x12xf32>
  }
}"""


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(
    "spec", ["webgpu", "webgpu:max_compute_invocations_per_workgroup=16,max_compute_workgroup_storage_size=2048"]
)
def test_convolution_is_a_tiled_implicit_gemm_within_the_limits(spec: str) -> None:
    conv = parse_module(CONV)
    target = parse_target(spec)
    (kernel,) = tunable_kernels(conv, target)
    assert kernel.space.family == "gpu_conv"
    for point in kernel.space.points():
        v = point.as_dict()
        assert (int(v["bm"]) // int(v["tm"])) * (int(v["bn"]) // int(v["tn"])) <= target.limit(
            "max_compute_invocations_per_workgroup"
        )
    executable = WebGPUExecutable.build(conv, target=target)
    (shader,) = executable.shaders.values()
    assert "var<workgroup>" in shader.wgsl and "workgroupBarrier()" in shader.wgsl
    inputs = random_inputs(conv)
    np.testing.assert_allclose(executable.run(inputs)[0], reference(conv, inputs)[0], rtol=1e-5, atol=1e-5)


FUSED = """
module {
  func.func @main(%x: tensor<2x70x50xf32>, %w: tensor<90x50xf32>, %b: tensor<90xf32>, %r: tensor<2x70x90xf32>)
      -> tensor<2x70x90xf32> {
    %0 = graph.matmul %x, %w {transpose_b = true} : (tensor<2x70x50xf32>, tensor<90x50xf32>) -> tensor<2x70x90xf32>
    %1 = graph.add %0, %b : (tensor<2x70x90xf32>, tensor<90xf32>) -> tensor<2x70x90xf32>
    %2 = graph.gelu %1 : (tensor<2x70x90xf32>) -> tensor<2x70x90xf32>
    %3 = graph.add %2, %r : (tensor<2x70x90xf32>, tensor<2x70x90xf32>) -> tensor<2x70x90xf32>
    func.return %3 : tensor<2x70x90xf32>
  }
}"""


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("spec", ["webgpu", "webgpu:max_storage_buffers_per_shader_stage=4"])
def test_a_fused_epilogue_runs_in_the_tiled_gemm_stores(spec: str) -> None:
    """Bias, GELU and a residual after a product: one tiled GEMM (workgroup tiles, barriers) whose stores compute
    the epilogue, also where the target's buffer limit splits the kernel."""
    target = parse_target(spec)
    module = parse_module(FUSED)
    PassManager.parse("fuse").run(module)
    families = [k.space.family for k in tunable_kernels(module, target)]
    assert families == ["gpu_gemm"]
    executable = WebGPUExecutable.build(module, target=target)
    gemm, *rest = executable.shaders.values()
    assert "workgroupBarrier();" in gemm.wgsl
    assert len(rest) == (0 if spec == "webgpu" else 1)  # 5 buffers: the residual's add split off past a limit of 4
    inputs = random_inputs(module)
    (got,) = executable.run(inputs)
    (want,) = reference(module, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)


UNROLLED = """
module {
  func.func @k(%in0: buffer<40xf32, global>, %out0: buffer<40xf32, global>) {
    %lo = loop.const {value = -2, dtype = index} : () -> index
    %hi = loop.const {value = 2, dtype = index} : () -> index
    %top = loop.const {value = 38, dtype = index} : () -> index
    %one = loop.const {value = 1, dtype = index} : () -> index
    %two = loop.const {value = 2, dtype = index} : () -> index
    loop.for %lo, %hi, %one (
      {
      ^bb0(%i: index):
        %j = loop.add %i, %two : (index, index) -> index
        %v = loop.load %in0, %j : (buffer<40xf32, global>, index) -> f32
        loop.store %v, %out0, %j : (f32, buffer<40xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "unroll"} : (index, index, index) -> ()
    loop.for %hi, %top, %one (
      {
      ^bb0(%i: index):
        %w = loop.load %in0, %i : (buffer<40xf32, global>, index) -> f32
        loop.store %w, %out0, %i : (f32, buffer<40xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "unroll"} : (index, index, index) -> ()
    func.return
  }
}"""


def test_short_unroll_loops_are_unrolled_in_the_wgsl() -> None:
    """An ``unroll`` loop of at most MAX_UNROLL_TRIPS constant iterations is its body once per iteration, the
    induction variable a literal (negative ones parenthesized); a longer one stays a ``for`` loop. The tiled GEMM's
    register tile is then indexed by constants only (SwiftShader, chromium's software adapter, unrolls little
    itself: a 512^3 GEMM ran 2.7x faster in chromium with it)."""
    from tensorium.backends.webgpu.emitter import MAX_UNROLL_TRIPS, WGSLEmitter

    assert 4 <= MAX_UNROLL_TRIPS < 36
    emitter = WGSLEmitter(parse_target("webgpu"))
    emitter.emit_module(parse_module(UNROLLED))
    wgsl = emitter.output()["k"].wgsl
    assert wgsl.count("for (") == 1 and "< 38i" in wgsl, "the 36-trip loop stays a loop"
    for literal in ("(-2i)", "(-1i)", "0i", "1i"):
        assert f"= {literal} + 2i;" in wgsl, f"iteration {literal} of the 4-trip loop"

    gemm = WebGPUExecutable.build(_module(), target=parse_target("webgpu"))
    (shader,) = [s.wgsl for name, s in gemm.shaders.items() if name.startswith("matmul")]
    private = {line.split()[1].rstrip(":") for line in shader.splitlines() if line.strip().startswith("var m")}
    private -= {line.split()[1].rstrip(":") for line in shader.splitlines() if "var<workgroup>" in line}
    assert private, "the register tile and the row of A are private arrays"
    for line in shader.splitlines():
        for name in private:
            if f"{name}[" in line:
                index = line.split(f"{name}[", 1)[1].split("]", 1)[0]
                assert "it" not in index, f"a register tile indexed by a loop variable: {line.strip()}"


def test_webgpu_default_tiles_give_each_invocation_an_8x8_register_tile() -> None:
    """WebGPU's own default tiles (webgpu_tile_default): CUDA's small tiles up to a 32 x 32 C, 8 x 8 register tiles
    in 32- or 64-row and -column C tiles up to 1024 x 1024, CUDA's large tiles beyond; each legal in the space."""
    from tensorium.lowering.gpu_gemm import LARGE_TILES
    from tensorium.lowering.webgpu_gemm import SMALL_TILES, webgpu_tile_default

    def tiles(m: int, n: int, k: int) -> tuple[int, ...]:
        c = webgpu_tile_default("gpu_gemm", m, n, k)
        return tuple(c.int(name) for name in ("bm", "bn", "bk", "tm", "tn", "stages"))

    assert tiles(32, 32, 8) == (*SMALL_TILES.values(), 1)
    assert tiles(32, 512, 256) == (32, 64, 16, 8, 8, 2), "an MLP's 32 rows: C tiles of 32 rows"
    assert tiles(512, 512, 512) == (64, 64, 16, 8, 8, 2)
    assert tiles(64, 20, 16) == (64, 32, 16, 8, 8, 1)
    assert tiles(2048, 2048, 64) == (*LARGE_TILES.values(), 2)
    kernels = {k.space.family: k for k in tunable_kernels(_module(), parse_target("webgpu"))}
    gemm = kernels["gpu_gemm"]
    default = gemm.default
    assert default is not None and default in list(gemm.space.points())
    assert (default.int("tm"), default.int("tn")) == (8, 8)


DIVISIBLE = """
module {
  func.func @main(%a: tensor<2x64x48xf32>, %b: tensor<48x128xf32>) -> tensor<2x64x128xf32> {
    %0 = graph.matmul %a, %b : (tensor<2x64x48xf32>, tensor<48x128xf32>) -> tensor<2x64x128xf32>
    func.return %0 : tensor<2x64x128xf32>
  }
}"""


@pytest.mark.usefixtures("gpu")
def test_tiles_that_divide_the_product_copy_and_store_without_bounds_checks() -> None:
    """A product whose tiles divide M, N and K (64 x 128 x 48 in 64 x 64 tiles, 16 steps of K) copies its tiles and
    stores C with no bounds check (the one ``if`` left is double buffering's copy of the next step); one they do
    not divide (70 x 90 x 50) keeps them.
    Both match the interpreter on lavapipe."""
    target = parse_target("webgpu")
    exact = parse_module(DIVISIBLE)
    executable = WebGPUExecutable.build(exact, target=target)
    (shader,) = [s.wgsl for name, s in executable.shaders.items() if name.startswith("matmul")]
    assert "var<workgroup>" in shader and shader.count("if (") == 1
    inputs = random_inputs(exact)
    np.testing.assert_allclose(executable.run(inputs)[0], reference(exact, inputs)[0], rtol=1e-5, atol=2e-5)
    ragged = WebGPUExecutable.build(_module(), target=target)
    (shader,) = [s.wgsl for name, s in ragged.shaders.items() if name.startswith("matmul")]
    assert shader.count("if (") >= 1 + 2 * 2 + 1, "the A and B copies (of both stages) and C's stores stay guarded"


ELEMENTWISE = """
func.func @main(%x: tensor<300xf32>, %y: tensor<300xf32>) -> tensor<300xf32> {
  %0 = graph.mul %x, %y : (tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
  %1 = graph.tanh %0 : (tensor<300xf32>) -> tensor<300xf32>
  func.return %1 : tensor<300xf32>
}
"""


def test_elementwise_kernels_have_the_workgroup_knob_on_gpu_targets_only() -> None:
    """A fused elementwise group is an ``elementwise`` kernel whose only knob is the GPU ``threads`` one (the
    workgroup size), so the tuners search it; the CPU has no space for it, and a group with a GEMM stays a GEMM
    kernel (elementwise is the fallback family)."""
    m = parse_module(ELEMENTWISE)
    PassManager.parse("fuse").run(m)
    assert tunable_kernels(m, parse_target("cpu")) == []
    (cuda,) = tunable_kernels(m, parse_target("cuda:sm_90"))
    assert cuda.space.family == "elementwise" and [k.name for k in cuda.space.knobs] == ["threads"]
    target = parse_target("webgpu")
    (kernel,) = tunable_kernels(m, target)
    assert kernel.default["threads"] == 256 and kernel.space.size() == 4
    for size in (32, 128):
        executable = WebGPUExecutable.build(
            m, target=target, configs={kernel.key: kernel.default.replace(threads=size)}
        )
        (shader,) = executable.shaders.values()
        assert shader.workgroup == (size, 1, 1) and shader.grid == (-(-300 // size), 1, 1)
    gemm = parse_module("""
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = graph.relu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}""")
    PassManager.parse("fuse").run(gemm)
    assert [k.space.family for k in tunable_kernels(gemm, target)] == ["gemm"]


@pytest.mark.usefixtures("gpu")
def test_elementwise_kernels_match_the_interpreter_at_every_workgroup_size() -> None:
    m = parse_module(ELEMENTWISE)
    PassManager.parse("fuse").run(m)
    target = parse_target("webgpu")
    (kernel,) = tunable_kernels(m, target)
    inputs = random_inputs(m)
    for point in kernel.space.points():
        (got,) = WebGPUExecutable.build(m, target=target, configs={kernel.key: point}).run(inputs)
        np.testing.assert_allclose(got, reference(m, inputs)[0], rtol=1e-6, atol=1e-6)
