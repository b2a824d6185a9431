"""Kernels over the storage-buffer limit are split (fused groups cut, concats made trees) and ops binding
tensors over the binding size run in bands of rows, checked at artificially low limits on the interpreter,
on lavapipe and on Dawn."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tensorium
from tensorium import nn
from tensorium.backends import interp
from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.errors import CompileError
from tensorium.frontend.tracer.tensor import trace_function
from tensorium.ir.core import Operation
from tensorium.ir.dialects.builtin import func_body, lookup_func
from tensorium.ir.parser import parse_module
from tensorium.ir.printer import print_module
from tensorium.ir.verifier import verify
from tensorium.lowering.webgpu_limits import storage_bytes
from tensorium.lowering.webgpu_split import bindings_of, split_for_binding_size, split_for_storage_buffers
from tensorium.passes import PassManager
from tensorium.targets import parse_target

from .js_harness import node_outputs, require_dawn

INPUTS = [np.random.default_rng(n).standard_normal((3, 4)).astype(np.float32) for n in range(9)]


def chain(*xs: object) -> object:
    """Nine inputs and a constant into one fused elementwise chain (eleven bindings)."""
    s = xs[0]
    for x in xs[1:]:
        s = s * 0.5 + nn.tanh(x)  # type: ignore[operator]
    return s


def joined(*xs: object) -> object:
    """A concat of nine inputs (ten bindings)."""
    return nn.concat(list(xs), axis=1)


def _fused_module(fn: object) -> Operation:
    module = trace_function(fn, INPUTS).module  # type: ignore[arg-type]
    PassManager.parse("canonicalize,cse,fuse").run(module)
    return module


def _ops(module: Operation) -> list[Operation]:
    main = lookup_func(module, "main")
    assert main is not None
    return [op for op in func_body(main).ops if op.name != "func.return"]


@pytest.mark.parametrize("fn", [chain, joined])
@pytest.mark.parametrize("limit", [8, 4, 3])
def test_split_ops_fit_the_limit_and_compute_the_same(fn: object, limit: int) -> None:
    module = _fused_module(fn)
    before = print_module(module)
    assert max(bindings_of(op) for op in _ops(module)) >= 10
    split = split_for_storage_buffers(module, parse_target(f"webgpu:max_storage_buffers_per_shader_stage={limit}"))
    verify(split)
    assert print_module(module) == before, "the caller's module is left as it was"
    assert max(bindings_of(op) for op in _ops(split)) <= limit
    if fn is chain and limit > 3:
        assert sum(op.name == "graph.fused" for op in _ops(split)) >= 2, "what fits stays fused"
    np.testing.assert_array_equal(interp.run(split, INPUTS)[0], interp.run(module, INPUTS)[0])


def test_modules_within_the_limit_are_returned_as_they_are() -> None:
    module = _fused_module(chain)
    assert split_for_storage_buffers(module, parse_target("webgpu:max_storage_buffers_per_shader_stage=11")) is module


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("fn", [chain, joined])
def test_split_kernels_run_on_lavapipe_at_a_low_limit(fn: object) -> None:
    spec = "webgpu:max_storage_buffers_per_shader_stage=4"
    model = tensorium.compile(fn, target=spec)
    got = model(*INPUTS)
    np.testing.assert_allclose(got, tensorium.compile(fn, target="interp")(*INPUTS), rtol=1e-6, atol=1e-6)
    shaders = model.artifact.executable.shaders  # type: ignore[union-attr]
    assert max(len(s.bindings) for s in shaders.values()) <= 4


def test_an_op_that_alone_binds_too_many_is_named() -> None:
    module = trace_function(lambda a, b: a + b, INPUTS[:2]).module
    with pytest.raises(CompileError, match=r"kernel @add_0 binds 3 storage buffers.*= 2"):
        WebGPUExecutable.build(module, target=parse_target("webgpu:max_storage_buffers_per_shader_stage=2"))


# --- tensors over the binding size --------------------------------------------------------------------
BINDING = "webgpu:max_storage_buffer_binding_size=1024"
RNG = np.random.default_rng(7)
BIAS = RNG.standard_normal(40).astype(np.float32)
WEIGHT = RNG.standard_normal((40, 4)).astype(np.float32)
X = RNG.standard_normal((16, 40)).astype(np.float32)


def rowwise(x: object) -> object:
    """A 16 x 40 f32 input (2560 bytes) through row-wise ops: elementwise with a broadcast bias, softmax,
    matmul by a small weight, a sum over the rows' elements."""
    y = nn.tanh(x) * 2.0 + BIAS  # type: ignore[operator]
    return nn.softmax(y, axis=1), y @ WEIGHT, y.sum(axis=1)


def _bound_bytes(executable: WebGPUExecutable) -> list[int]:
    """Bytes of every tensor a shader binds (concats that are copies bind none)."""
    sizes = []
    for step in executable.steps:
        shader = executable.shaders[step.kernel]
        if shader.pieces is None:
            args = (*step.inputs, *step.outputs)
            sizes += [storage_bytes(executable.buffers[args[p]]) for p in shader.bindings]
    return sizes


def test_concats_of_contiguous_runs_are_copies() -> None:
    text = """
module {
  func.func @main(%a: tensor<4x3xf32>, %b: tensor<2x3xf32>, %c: tensor<1x4x3xf32>)
      -> (tensor<6x3xf32>, tensor<1x4x6xf32>) {
    %0 = graph.concat %a, %b {axis = 0} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
    %1 = graph.concat %c, %c {axis = 2} : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x6xf32>
    func.return %0, %1 : tensor<6x3xf32>, tensor<1x4x6xf32>
  }
}"""
    shaders = WebGPUExecutable.build(parse_module(text)).shaders
    assert [s.pieces for s in shaders.values()] == [(0, 48), None]


def test_row_bands_compute_what_the_op_did() -> None:
    module = trace_function(rowwise, [X]).module
    PassManager.parse("canonicalize,cse,fuse").run(module)
    split = split_for_binding_size(module, parse_target(BINDING))
    verify(split)
    assert sum(op.name == "graph.slice" for op in _ops(split)) >= 3
    for got, want in zip(interp.run(split, [X]), interp.run(module, [X])):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.usefixtures("gpu")
def test_tensors_over_the_binding_size_run_in_bands_on_lavapipe() -> None:
    model = tensorium.compile(rowwise, target=BINDING)
    got = model(X)
    for g, w in zip(got, tensorium.compile(rowwise, target="interp")(X)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    executable = model.artifact.executable
    assert isinstance(executable, WebGPUExecutable)
    assert max(_bound_bytes(executable)) <= 1024 < X.nbytes
    assert any(s.pieces is not None for s in executable.shaders.values())


def test_tensors_over_the_binding_size_run_in_bands_on_dawn(tmp_path: Path) -> None:
    require_dawn()
    module = trace_function(rowwise, [X]).module
    executable = WebGPUExecutable.build(module, target=parse_target(BINDING))
    executable.to_files(tmp_path / "exe")
    for got, want in zip(node_outputs(tmp_path / "exe", [X], tmp_path), interp.run(module, [X])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_row_over_the_binding_size_is_named() -> None:
    """A sum over rows of 1600 bytes: bands of one row would still bind a row, and a row's sum has no band axis to
    cut it again along."""
    module = trace_function(lambda x: x.sum(axis=1), [np.zeros((2, 400), np.float32)]).module
    with pytest.raises(CompileError, match=r"tensor<2x400xf32>, 3200 bytes\) is over the limit max_storage_buffer_bin"):
        WebGPUExecutable.build(module, target=parse_target(BINDING))


def test_rows_over_the_binding_size_are_cut_again_along_their_next_axis() -> None:
    ops = _split_matches(
        """
module {
  func.func @main(%x: tensor<2x400xf32>) -> tensor<2x400xf32> {
    %0 = graph.tanh %x : (tensor<2x400xf32>) -> tensor<2x400xf32>
    func.return %0 : tensor<2x400xf32>
  }
}""",
        [RNG.standard_normal((2, 400)).astype(np.float32)],
    )
    assert [op.name for op in ops].count("graph.tanh") == 4  # two rows of 1600 bytes, each in two bands of 200


def weight_module(transpose_b: bool) -> Operation:
    """``x @ w`` (or ``x @ w^T``) with an f32 weight of 24 x 40 (3840 bytes, over BINDING's 1024) that A is not."""
    depth, cols = (40, 24) if transpose_b else (24, 40)
    return parse_module(f"""
module {{
  func.func @main(%x: tensor<3x{depth}xf32>, %w: tensor<24x40xf32>) -> tensor<3x{cols}xf32> {{
    %0 = graph.matmul %x, %w {{transpose_b = {str(transpose_b).lower()}}}
      : (tensor<3x{depth}xf32>, tensor<24x40xf32>) -> tensor<3x{cols}xf32>
    %1 = graph.tanh %0 : (tensor<3x{cols}xf32>) -> tensor<3x{cols}xf32>
    func.return %1 : tensor<3x{cols}xf32>
  }}
}}""")


def _weight_inputs(module: Operation) -> list[np.ndarray]:
    main = lookup_func(module, "main")
    assert main is not None
    return [RNG.standard_normal(a.type.static_shape).astype(np.float32) for a in func_body(main).args]  # type: ignore[attr-defined]


@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_large_weight_is_cut_into_bands_of_its_rows(transpose_b: bool) -> None:
    module = weight_module(transpose_b)
    split = split_for_binding_size(module, parse_target(BINDING))
    verify(split)
    ops = [op.name for op in _ops(split)]
    assert ops.count("graph.matmul") == 4  # 24 rows of 160 bytes in bands of 6
    assert ("graph.concat" in ops) == transpose_b and ("graph.add" in ops) != transpose_b
    inputs = _weight_inputs(module)
    for got, want in zip(interp.run(split, inputs), interp.run(module, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_large_weight_runs_in_views_of_its_rows_on_lavapipe_and_dawn(transpose_b: bool, tmp_path: Path) -> None:
    module = weight_module(transpose_b)
    executable = WebGPUExecutable.build(module, target=parse_target(BINDING))
    assert max(_bound_bytes(executable)) <= 1024 and len(executable.views) == 4
    _matches_on_lavapipe_and_dawn(module, executable, _weight_inputs(module), tmp_path, 1e-5)


def _matches_on_lavapipe_and_dawn(
    module: Operation, executable: WebGPUExecutable, inputs: list[np.ndarray], tmp_path: Path, tolerance: float
) -> None:
    """``executable``'s outputs match the interpreter's on lavapipe, then on Dawn (where Node has it)."""
    want = interp.run(module, inputs)
    for got, w in zip(executable.run(inputs), want):
        np.testing.assert_allclose(got, w, rtol=tolerance, atol=tolerance)
    require_dawn()
    for got, w in zip(node_outputs(executable.to_files(tmp_path / "exe"), inputs, tmp_path), want):
        np.testing.assert_allclose(got, w, rtol=tolerance, atol=tolerance)


LOOKUPS = """
module {
  func.func @main(%t: tensor<70x8xf32>, %u: tensor<70x2x4xf32>, %i: tensor<3x5xi32>, %j: tensor<4xi32>)
      -> (tensor<3x5x8xf32>, tensor<4x2x4xf32>, tensor<3x5x8xf32>) {
    %0 = graph.embedding %t, %i : (tensor<70x8xf32>, tensor<3x5xi32>) -> tensor<3x5x8xf32>
    %1 = graph.gather %u, %j {axis = 0} : (tensor<70x2x4xf32>, tensor<4xi32>) -> tensor<4x2x4xf32>
    %2 = graph.tanh %0 : (tensor<3x5x8xf32>) -> tensor<3x5x8xf32>
    func.return %0, %1, %2 : tensor<3x5x8xf32>, tensor<4x2x4xf32>, tensor<3x5x8xf32>
  }
}"""
"""Row lookups in tables of 2240 bytes (70 rows of 32), over BINDING's 1024: bands of 32, 32 and 6 rows."""


def _lookup_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    tables = [rng.standard_normal((70, 8)).astype(np.float32), rng.standard_normal((70, 2, 4)).astype(np.float32)]
    rows = np.array([[0, 31, 32, 63, 64], [69, 5, 40, 66, 1], [33, 0, 68, 31, 32]], np.int32)
    return [*tables, rows, np.array([-1, 0, 45, -70], np.int32)]  # gather counts negative indices from the end


def _split_matches(text: str, inputs: list[np.ndarray], tolerance: float = 0.0) -> list[Operation]:
    """The ops of module ``text`` split for BINDING, after checking that the split module verifies and computes
    what the module did on the interpreter (bit for bit at tolerance 0)."""
    module = parse_module(text)
    split = split_for_binding_size(module, parse_target(BINDING))
    verify(split)
    for got, want in zip(interp.run(split, inputs), interp.run(module, inputs)):
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    return _ops(split)


def test_a_large_table_is_looked_up_in_bands_of_its_rows() -> None:
    ops = [op.name for op in _split_matches(LOOKUPS, _lookup_inputs())]
    assert ops.count("graph.embedding") == 3 and ops.count("graph.gather") == 3 and ops.count("graph.slice") == 6


@pytest.mark.usefixtures("gpu")
def test_a_large_table_runs_in_views_of_its_rows_on_lavapipe_and_dawn(tmp_path: Path) -> None:
    module = parse_module(LOOKUPS)
    executable = WebGPUExecutable.build(module, target=parse_target(BINDING))
    assert max(_bound_bytes(executable)) <= 1024
    assert sorted(v.offset for v in executable.views if v.source in (0, 1)) == [0, 0, 256, 256, 512, 512]
    _matches_on_lavapipe_and_dawn(module, executable, _lookup_inputs(), tmp_path, 1e-6)


BANDS_ELSEWHERE = """
module {
  func.func @main(%x: tensor<1x16x40xf32>, %t: tensor<16x40xf32>, %u: tensor<3x8x40xf32>, %g: tensor<1x70x8xf32>,
      %i: tensor<5xi32>, %j: tensor<2x3xi32>)
      -> (tensor<1x16x40xf32>, tensor<40x16xf32>, tensor<40x3x8xf32>, tensor<16x5xf32>, tensor<1x2x3x8xf32>,
          tensor<1x16xf32>) {
    %0 = graph.softmax %x {axis = -1} : (tensor<1x16x40xf32>) -> tensor<1x16x40xf32>
    %1 = graph.transpose %t {perm = [1, 0]} : (tensor<16x40xf32>) -> tensor<40x16xf32>
    %2 = graph.transpose %u {perm = [2, 0, 1]} : (tensor<3x8x40xf32>) -> tensor<40x3x8xf32>
    %3 = graph.gather %t, %i {axis = 1} : (tensor<16x40xf32>, tensor<5xi32>) -> tensor<16x5xf32>
    %4 = graph.gather %g, %j {axis = 1} : (tensor<1x70x8xf32>, tensor<2x3xi32>) -> tensor<1x2x3x8xf32>
    %5 = graph.reduce_max %x {axes = [2]} : (tensor<1x16x40xf32>) -> tensor<1x16xf32>
    func.return %0, %1, %2, %3, %4, %5
      : tensor<1x16x40xf32>, tensor<40x16xf32>, tensor<40x3x8xf32>, tensor<16x5xf32>, tensor<1x2x3x8xf32>,
        tensor<1x16xf32>
  }
}"""
"""Ops over BINDING's 1024 bytes that are not cut along axis 0: a softmax and a reduction of a batch of one (bands
along axis 1), transposes (each band of the result a slice of the source along another axis, itself taken from
views of the source's rows), a gather along axis 1 (bands of rows) and one from a table of one batch (bands of
its axis 1)."""


def _elsewhere_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    floats = [rng.standard_normal(s).astype(np.float32) for s in ((1, 16, 40), (16, 40), (3, 8, 40), (1, 70, 8))]
    return [*floats, np.array([0, 39, -1, 7, 20], np.int32), np.array([[0, 69, 33], [-70, 34, 1]], np.int32)]


def test_ops_are_cut_along_their_first_axis_over_one() -> None:
    ops = _split_matches(BANDS_ELSEWHERE, _elsewhere_inputs())
    names = [op.name for op in ops]
    assert names.count("graph.softmax") == 3 and names.count("graph.transpose") >= 4  # 16 rows of 160 bytes: 6, 6, 4
    axes = {op.attr("axis") for op in ops if op.name == "graph.concat"}
    assert {0, 1} <= axes, "bands joined along axis 1 where axis 0 is 1"


WINDOWS = """
module {
  func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %y: tensor<1x2x8x8xf32>,
      %v: tensor<6x2x3x3xf32>, %c: tensor<6xf32>, %z: tensor<1x6x8x8xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<1x6x8x8xf32>, tensor<1x6x4x4xf32>, tensor<2x3x4x4xf32>) {
    %0 = graph.conv2d %x, %w, %b {padding = [1, 1, 1, 1]}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %1 = graph.conv2d %y, %v, %c {padding = [1, 1, 1, 1]}
      : (tensor<1x2x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
    %2 = graph.max_pool2d %z {kernel = [2, 2], strides = [2, 2]} : (tensor<1x6x8x8xf32>) -> tensor<1x6x4x4xf32>
    %3 = graph.avg_pool2d %x {kernel = [2, 2], strides = [2, 2]} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    func.return %0, %1, %2, %3 : tensor<2x4x8x8xf32>, tensor<1x6x8x8xf32>, tensor<1x6x4x4xf32>, tensor<2x3x4x4xf32>
  }
}"""
"""Window ops over BINDING's 1024 bytes: a convolution of two images (bands of one image), one of a single image
into 6 channels of 256 bytes (bands of 4 and 2 output channels, each a view of the weight's rows), a max pool of a
single image (bands of its channels), an average pool of two (of its images)."""


def _window_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    shapes = ((2, 3, 8, 8), (4, 3, 3, 3), (4,), (1, 2, 8, 8), (6, 2, 3, 3), (6,), (1, 6, 8, 8))
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_window_ops_are_cut_into_images_channels_or_output_channels() -> None:
    names = [op.name for op in _split_matches(WINDOWS, _window_inputs(), 1e-6)]
    assert names.count("graph.conv2d") == 4 and names.count("graph.max_pool2d") == 2


@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("name", ["elsewhere", "windows"])
def test_ops_cut_along_other_axes_and_windows_run_on_lavapipe_and_dawn(name: str, tmp_path: Path) -> None:
    text, inputs = (BANDS_ELSEWHERE, _elsewhere_inputs()) if name == "elsewhere" else (WINDOWS, _window_inputs())
    module = parse_module(text)
    executable = WebGPUExecutable.build(module, target=parse_target(BINDING))
    assert max(_bound_bytes(executable)) <= 1024
    _matches_on_lavapipe_and_dawn(module, executable, inputs, tmp_path, 1e-5)


PRODUCTS = """
module {
  func.func @main(%q: tensor<1x3x20x8xf32>, %k: tensor<1x3x20x8xf32>, %v: tensor<1x3x20x8xf32>,
      %a: tensor<2x20x8xf32>, %b: tensor<2x8x20xf32>, %c: tensor<4x10x8xf32>, %d: tensor<1x8x10xf32>)
      -> (tensor<1x3x20x8xf32>, tensor<2x20x20xf32>, tensor<4x10x10xf32>) {
    %0 = graph.matmul %q, %k {transpose_b = true}
      : (tensor<1x3x20x8xf32>, tensor<1x3x20x8xf32>) -> tensor<1x3x20x20xf32>
    %1 = graph.softmax %0 {axis = -1} : (tensor<1x3x20x20xf32>) -> tensor<1x3x20x20xf32>
    %2 = graph.matmul %1, %v : (tensor<1x3x20x20xf32>, tensor<1x3x20x8xf32>) -> tensor<1x3x20x8xf32>
    %3 = graph.matmul %a, %b : (tensor<2x20x8xf32>, tensor<2x8x20xf32>) -> tensor<2x20x20xf32>
    %4 = graph.matmul %c, %d : (tensor<4x10x8xf32>, tensor<1x8x10xf32>) -> tensor<4x10x10xf32>
    func.return %2, %3, %4 : tensor<1x3x20x8xf32>, tensor<2x20x20xf32>, tensor<4x10x10xf32>
  }
}"""
"""Batched products over BINDING's 1024 bytes: attention's scores of three heads (4800 bytes, 1600 a head, so each
head is cut again into bands of its rows), their softmax and their product by the values; a batch of two products
(1600 bytes each: bands of rows of each); a batch of four by one broadcast B (bands of two products, B read
whole)."""


def _product_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(9)
    shapes = ((1, 3, 20, 8),) * 3 + ((2, 20, 8), (2, 8, 20), (4, 10, 8), (1, 8, 10))
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_batched_products_are_cut_into_batches_and_rows() -> None:
    ops = _split_matches(PRODUCTS, _product_inputs())
    names = [op.name for op in ops]
    # scores: 3 heads x 2 bands of rows; context: 3 x 2; the batch of two: 2 x 2; the broadcast one: 2 bands
    assert names.count("graph.matmul") == 6 + 6 + 4 + 2 and names.count("graph.softmax") == 6
    joined = [str(v.type) for op in ops for v in op.results if "x20x20x" in str(v.type) and v.type.rank == 4]  # type: ignore[attr-defined]
    assert not joined, "each band of the scores and of their softmax is read as it is: no head or heads joined"


@pytest.mark.usefixtures("gpu")
def test_batched_products_run_in_bands_on_lavapipe_and_dawn(tmp_path: Path) -> None:
    module = parse_module(PRODUCTS)
    executable = WebGPUExecutable.build(module, target=parse_target(BINDING))
    assert max(_bound_bytes(executable)) <= 1024
    _matches_on_lavapipe_and_dawn(module, executable, _product_inputs(), tmp_path, 1e-5)


@pytest.mark.usefixtures("gpu")
def test_the_binding_size_benchmark_runs_its_small_shapes(tmp_path: Path) -> None:
    from benchmarks.webgpu_binding import main

    assert main(["--small", "--runs", "1", "--json", str(tmp_path / "rows.json")]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [r["workload"] for r in rows] == ["log_softmax", "transpose", "attention"]
    assert all(r["largest_tensor_bytes"] > 4096 >= r["largest_bound_bytes"] for r in rows)
    assert rows[2]["largest_buffer_bytes"] < rows[2]["largest_tensor_bytes"], "the attention's scores are never joined"
