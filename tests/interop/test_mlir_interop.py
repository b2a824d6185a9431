"""Export to upstream MLIR verified by MLIR's own bindings, import back, and IREE as a second compiler."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler", reason="the mlir extra (iree-base-compiler) is not installed")

sys.path.insert(0, str(Path(__file__).parent))

from models import example_modules, pass_case_modules, sample_inputs

import tensorium as tm
from tensorium.backends.interp import run
from tensorium.interop.bindings import MlirVerifyError, verify_text
from tensorium.interop.export import ExportError, export_text
from tensorium.interop.importer import ImportError_, import_text
from tensorium.ir.dialects.builtin import functions

MODELS = [(name, m) for name, m in [*pass_case_modules(), *example_modules()] if functions(m)]

NOT_EXPORTABLE = {
    "canonicalize.mlir:14": "a slice of part of the symbolic dim 0",
}
"""Suite models outside the exported subset, each with the reason the export error gives."""


def _case(name: str) -> str:
    return name.rsplit(":", 1)[0]


def _equal(got: list[np.ndarray], want: list[np.ndarray], rtol: float = 1e-5) -> bool:
    return all(
        g.shape == w.shape and np.allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True) for g, w in zip(got, want)
    )


@pytest.mark.parametrize("name, module", MODELS, ids=[n for n, _ in MODELS])
def test_suite_model_exports_verifies_and_round_trips(name: str, module: tm.ir.Operation) -> None:
    reason = NOT_EXPORTABLE.get(_case(name))
    if reason is not None:
        with pytest.raises(ExportError, match=reason):
            export_text(module)
        return
    text = export_text(module)
    verify_text(text, name)
    back = import_text(text, name)
    tm.verify(back)
    inputs = sample_inputs(module)
    assert _equal(run(back, inputs), run(module, inputs))


def test_unsupported_ops_are_reported_all_at_once() -> None:
    module = tm.parse_module(
        """module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>, %j: tensor<3x2xi64>)
      -> (tensor<1x3x6x6xf32>, tensor<3x4x4xf32>) {
    %0 = graph.conv_transpose2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x6x6xf32>
    %1 = graph.gather_nd %x, %j : (tensor<1x2x4x4xf32>, tensor<3x2xi64>) -> tensor<3x4x4xf32>
    func.return %0, %1 : tensor<1x3x6x6xf32>, tensor<3x4x4xf32>
  }
}"""
    )
    with pytest.raises(ExportError) as info:
        export_text(module)
    message = str(info.value)
    assert "2 unsupported op(s) of 2 kind(s): graph.conv_transpose2d, graph.gather_nd" in message
    assert "<input>:4:10" in message and "<input>:5:10" in message


def test_a_split_along_a_symbolic_dim_is_refused() -> None:
    """(A split along a static axis takes its symbolic dims whole: the fuse_siblings suite case round-trips.)"""
    along = tm.parse_module(
        """module {
  func.func @main(%x: tensor<[n]x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %0, %1 = graph.split %x {axis = 0, sizes = [2, 2]} : (tensor<[n]x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
    func.return %0, %1 : tensor<2x4xf32>, tensor<2x4xf32>
  }
}"""
    )
    with pytest.raises(ExportError, match="a split along the symbolic dim 0"):
        export_text(along)


DYNAMIC = """module {
  func.func @main(%x: tensor<[batch]x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>)
      -> (tensor<[batch]x4xf32>, tensor<[batch]x4xf32>, tensor<?xf32>) {
    %0 = graph.matmul %x, %w : (tensor<[batch]x8xf32>, tensor<8x4xf32>) -> tensor<[batch]x4xf32>
    %1 = graph.add %0, %b : (tensor<[batch]x4xf32>, tensor<4xf32>) -> tensor<[batch]x4xf32>
    %2 = graph.gelu %1 : (tensor<[batch]x4xf32>) -> tensor<[batch]x4xf32>
    %3 = graph.softmax %2 : (tensor<[batch]x4xf32>) -> tensor<[batch]x4xf32>
    %4 = graph.reduce_max %3 {axes = [1], keepdims = false} : (tensor<[batch]x4xf32>) -> tensor<[batch]xf32>
    %5 = graph.sub %3, %2 : (tensor<[batch]x4xf32>, tensor<[batch]x4xf32>) -> tensor<[batch]x4xf32>
    %6 = graph.slice %x {starts = [2], ends = [6], axes = [1]} : (tensor<[batch]x8xf32>) -> tensor<[batch]x4xf32>
    %7 = graph.reshape %x {shape = [-1, 2, 4]} : (tensor<[batch]x8xf32>) -> tensor<[batch]x2x4xf32>
    %8 = graph.reduce_sum %7 {axes = [2]} : (tensor<[batch]x2x4xf32>) -> tensor<[batch]x2xf32>
    %9 = graph.reshape %8 {shape = [-1]} : (tensor<[batch]x2xf32>) -> tensor<?xf32>
    func.return %5, %6, %9 : tensor<[batch]x4xf32>, tensor<[batch]x4xf32>, tensor<?xf32>
  }
}"""


def test_dynamic_shapes_export_as_question_marks_and_round_trip() -> None:
    module = tm.parse_module(DYNAMIC)
    text = export_text(module)
    assert "tensor<?x8xf32>" in text and "tensor.dim" in text and "tensor.reshape" in text
    verify_text(text)
    back = import_text(text)
    for batch in (1, 5):
        inputs = sample_inputs(module, size=batch)
        assert _equal(run(back, inputs), run(module, inputs))


def test_iree_runs_one_dynamic_build_at_several_batch_sizes() -> None:
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import compile_text, run_vmfb

    module = tm.parse_module(DYNAMIC)
    vmfb = compile_text(export_text(module))
    for batch in (1, 5):
        inputs = sample_inputs(module, size=batch)
        assert _equal(run_vmfb(vmfb, inputs), run(module, inputs), rtol=1e-4)


def test_export_uses_named_linalg_ops_where_they_exist() -> None:
    module = next(m for n, m in MODELS if n == "examples/mlp.mlir")
    text = export_text(module)
    assert text.count("linalg.matmul") == 2 and "linalg.generic" in text and "arith.maximumf" in text


def test_malformed_mlir_names_the_place() -> None:
    with pytest.raises(MlirVerifyError, match=r"model.mlir: MLIR rejects the text: .*:2:"):
        import_text("func.func @main() {\n  %0 = arith.bogus\n}", "model.mlir")


def test_import_reports_every_op_outside_the_subset() -> None:
    text = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  %0 = tosa.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = tosa.sub %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}"""
    with pytest.raises(ImportError_, match=r"2 unsupported op\(s\) of 2 kind\(s\): tosa.add, tosa.sub"):
        import_text(text)


IREE_MODELS = [
    "examples/mlp.mlir",
    "examples/tiny_cnn.onnx",
    "fuse_attention.mlir:2:in",
    "layout.mlir:1:in",
    "quantize.mlir:2:out",  # quant.matmul_packed: 1-bit codes in AVX2's interleaved layout
]


@pytest.mark.parametrize("name", IREE_MODELS)
def test_iree_llvm_cpu_matches_the_interpreter(name: str) -> None:
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import run_text

    found = dict(MODELS)
    if name not in found:
        pytest.skip(f"{name} needs an extra that is not installed")
    module = found[name]
    inputs = sample_inputs(module)
    assert _equal(run_text(export_text(module), inputs), run(module, inputs), rtol=1e-4)


def test_public_api_and_cli_export_then_compile_an_upstream_file(tmp_path: Path) -> None:
    from tensorium.cli import main

    module = tm.parse_module((Path(__file__).parents[2] / "examples" / "mlp.mlir").read_text())
    text = tm.export_mlir(module)
    path = tmp_path / "mlp_upstream.mlir"
    path.write_text(text)
    inputs = sample_inputs(module)
    assert _equal(run(tm.import_mlir(path), inputs), run(module, inputs))
    onnx = Path(__file__).parents[2] / "examples" / "tiny_cnn.onnx"
    if pytest.importorskip("onnx", reason="the onnx extra is not installed"):
        assert main(["export-mlir", str(onnx), "-o", str(tmp_path / "cnn.mlir")]) == 0
        verify_text((tmp_path / "cnn.mlir").read_text())
    assert main(["compile", str(path), "-t", "interp", "-o", str(tmp_path / "mlp.tsm")]) == 0
    loaded = tm.load(tmp_path / "mlp.tsm")
    assert _equal(list(np.atleast_1d(loaded(*inputs))[None]), run(module, inputs))


def test_generated_programs_round_trip_where_they_export() -> None:
    """The fuzzer's random programs over the whole graph dialect: each either exports (then MLIR verifies it
    and the import computes the same) or is refused with an ExportError."""
    from tensorium.fuzz.generator import generate_module
    from tensorium.fuzz.oracle import case_inputs

    exported = 0
    for seed in range(40):
        module = generate_module(seed, num_ops=8)
        try:
            text = export_text(module)
        except ExportError:
            continue
        verify_text(text, f"seed {seed}")
        inputs = case_inputs(module, seed)
        with np.errstate(all="ignore"):
            assert _equal(run(import_text(text), inputs), run(module, inputs), rtol=1e-4), f"seed {seed}"
        exported += 1
    assert exported >= 5


RESULTS = "tensor<3x4xf64>, tensor<6x8xf64>, tensor<5xf32>, tensor<3x4xf64>, tensor<1x1xf32>"
SMALL_OPS = """module {
  func.func @main(%x: tensor<3x4xf64>, %y: tensor<3x4xf64>, %s: tensor<f32>) -> (RESULTS) {
    %0 = graph.tril %x {k = 1} : (tensor<3x4xf64>) -> tensor<3x4xf64>
    %1 = graph.tile %x {repeats = [2, 2]} : (tensor<3x4xf64>) -> tensor<6x8xf64>
    %2 = graph.arange {limit = 5.0, dtype = f32} : () -> tensor<5xf32>
    %3 = graph.mul %x, %y : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
    %t = graph.transpose %s {perm = []} : (tensor<f32>) -> tensor<f32>
    %4 = graph.reshape %t {shape = [1, 1]} : (tensor<f32>) -> tensor<1x1xf32>
    func.return %0, %1, %2, %3, %4 : RESULTS
  }
}""".replace("RESULTS", RESULTS)


def test_mod_round_trips_through_the_truncated_remainder() -> None:
    module = tm.parse_module(
        """module {
  func.func @main(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %0 = graph.mod %x, %y : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    func.return %0 : tensor<3x4xf32>
  }
}"""
    )
    text = export_text(module)
    assert "arith.remf" in text
    x, y = sample_inputs(module)
    y = np.where(np.abs(y) < 0.1, 1.5, y).astype(np.float32)
    assert _equal(run(import_text(text), [x, y]), run(module, [x, y]))


def test_rewritten_ops_f64_and_rank_zero_reshapes_through_iree_and_back() -> None:
    """Also a regression: a rank-0 transpose (fuzz seed 509) is left out, as MLIR's verifier runs out of
    memory on a rank-0 ``linalg.transpose``."""
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import run_text

    module = tm.parse_module(SMALL_OPS)
    text = export_text(module)
    assert "tensor<3x4xf64>" in text and "tensor.expand_shape" in text
    inputs = sample_inputs(module)
    want = run(module, inputs)
    assert _equal(run(import_text(text), inputs), want)
    assert _equal(run_text(text, inputs), want)


QT = "!quant<u4:f32, per_group(axis=1, size=4)>"
QUANT = """module {
  func.func @main(%x: tensor<3x8xf32>, %w: tensor<2x8xf32>, %s: tensor<2x2xf32>, %z: tensor<2x2xf32>)
      -> (tensor<3x2xf32>, tensor<2x8xf32>) {
    %q = quant.quantize %w, %s, %z {type = QT} : (tensor<2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x8xQT>
    %y = quant.matmul %x, %q, %s, %z
      : (tensor<3x8xf32>, tensor<2x8xQT>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    %d = quant.dequantize %q, %s, %z : (tensor<2x8xQT>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
    func.return %y, %d : tensor<3x2xf32>, tensor<2x8xf32>
  }
}""".replace("QT", QT)


def test_quant_dialect_exports_as_integer_arithmetic_through_iree_and_back() -> None:
    """quantize, dequantize and quant.matmul (4-bit codes, a scale and zero point per group of 4) become i8
    tensors of codes with arith casts, rounding and clamping; IREE and the import compute what the
    interpreter does."""
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import run_text

    module = tm.parse_module(QUANT)
    text = export_text(module)
    assert "xi8>" in text and "math.roundeven" in text and "arith.fptoui" in text and "quant" not in text
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((2, 8)).astype(np.float32)
    inputs = [x, w, np.full((2, 2), 0.25, np.float32), np.full((2, 2), 8.0, np.float32)]
    want = run(module, inputs)
    assert _equal(run(import_text(text), inputs), want)
    assert _equal(run_text(text, inputs), want)


GATHER = """module {
  func.func @main(%d: tensor<5x3x4xf32>, %i: tensor<2x2xi64>, %w: tensor<6x3xf32>, %j: tensor<4xi32>,
      %k: tensor<5x2xi64>) -> (tensor<5x2x2x4xf32>, tensor<4x3xf32>, tensor<5x2xf32>) {
    %0 = graph.gather %d, %i {axis = 1} : (tensor<5x3x4xf32>, tensor<2x2xi64>) -> tensor<5x2x2x4xf32>
    %1 = graph.embedding %w, %j : (tensor<6x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
    %2 = graph.gather_elements %w, %k {axis = 1} : (tensor<6x3xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
    func.return %0, %1, %2 : tensor<5x2x2x4xf32>, tensor<4x3xf32>, tensor<5x2xf32>
  }
}"""


def test_gather_embedding_and_gather_elements_as_tensor_extract_through_iree_and_back() -> None:
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import run_text

    module = tm.parse_module(GATHER)
    text = export_text(module)
    assert text.count("tensor.extract ") == 3 and text.count("linalg.index") >= 6
    rng = np.random.default_rng(0)
    data, table = rng.standard_normal((5, 3, 4)).astype(np.float32), rng.standard_normal((6, 3)).astype(np.float32)
    inputs = [data, np.array([[0, -1], [2, 1]], np.int64), table, np.array([5, 0, 2, 2], np.int32)]
    inputs.append(np.array([[0, -1], [2, 2], [1, 1], [-3, 0], [2, 1]], np.int64))
    want = run(module, inputs)
    back = import_text(text)
    names = [op.name for op in back.walk() if op.name.startswith("graph.")]
    assert names == ["graph.gather", "graph.gather", "graph.gather_elements"]
    assert _equal(run(back, inputs), want)
    assert _equal(run_text(text, inputs), want)


def test_reversed_slices_pads_cumsum_and_nearest_resize_through_iree_and_back() -> None:
    """Written as gathers at constant positions (reversed slices, edge/reflect pads, nearest resizes;
    negative pads crop) and as a masked sum over a constant triangle (cumsum, inclusive or exclusive, forward
    or reversed). Also a regression: the cumsum was a matmul by the triangle, so an infinite input made every
    other output along its axis inf * 0 = NaN (found by ``tensorium fuzz --reference iree`` with special
    values)."""
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import run_text
    from tensorium.ir import InsertionPoint, func_body, graph, make_func, make_module, set_results
    from tensorium.ir.types import TensorType, f32, i32

    func = make_func("main", [TensorType((5, 4), f32), TensorType((6,), i32)])
    with InsertionPoint(func_body(func)):
        x, i = func_body(func).args
        results = [
            graph.slice(x, starts=[4, 3], ends=[-100, 0], axes=[0, 1], steps=[-2, -1]),
            graph.pad(x, pads=[1, 2, 1, 2], mode="reflect"),
            graph.pad(x, pads=[-1, 1, -1, 2], mode="edge"),
            graph.pad(x, pads=[0, -1, 1, 0], value=2.0),
            graph.cumsum(x, axis=0),
            graph.cumsum(x, axis=1, exclusive=True, reverse=True),
            graph.cumsum(i, axis=0, reverse=True),
            graph.resize(graph.reshape(x, shape=[1, 1, 5, 4]), size=[7, 3]),
            graph.resize(graph.reshape(x, shape=[1, 5, 4, 1]), size=[3, 9], layout="NHWC", nearest_mode="ceil"),
        ]
    set_results(func, results)
    module = make_module([func])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    x[0, 3], x[3, 0] = np.inf, -np.inf
    inputs = [x, rng.integers(-5, 5, 6).astype(np.int32)]
    text = export_text(module)
    want = run(module, inputs)
    assert all(np.isfinite(w).any() for w in want[4:6])
    assert _equal(run(import_text(text), inputs), want)
    assert _equal(run_text(text, inputs), want)


def test_argmax_and_argmin_keep_first_index_ties_and_nan_through_iree_and_back() -> None:
    pytest.importorskip("iree.runtime", reason="the mlir extra (iree-base-runtime) is not installed")
    from tensorium.interop.iree import run_text
    from tensorium.ir import InsertionPoint, func_body, graph, make_func, make_module, set_results
    from tensorium.ir.types import TensorType, f32, i32

    func = make_func("main", [TensorType((3, 5), f32), TensorType((4, 3), i32)])
    with InsertionPoint(func_body(func)):
        x, i = func_body(func).args
        results = [
            graph.argmax(x, axis=1),
            graph.argmin(x, axis=0, keepdims=True),
            graph.argmax(i, axis=0, select_last_index=True),
            graph.argmin(i, axis=1),
        ]
    set_results(func, results)
    module = make_module([func])
    x = np.array([[1, 3, 3, 0, -1], [np.nan, 2, np.nan, 5, 5], [0, 0, 0, 0, 0]], np.float32)
    i = np.array([[1, 2, 2], [2, 2, 1], [0, 2, 0], [2, 0, 0]], np.int32)
    text = export_text(module)
    want = run(module, [x, i])
    assert [w.tolist() for w in want] == [[1, 0, 0], [[1, 2, 1, 0, 0]], [3, 2, 0], [0, 2, 0, 1]]
    assert _equal(run(import_text(text), [x, i]), want)
    assert _equal(run_text(text, [x, i]), want)


WORKLOADS = ["gemm", "gemv", "mlp", "resnet_block", "encoder"]


@pytest.mark.parametrize("name", WORKLOADS)
def test_benchmark_workloads_export_from_torch_and_round_trip(name: str) -> None:
    """``tensorium.export_mlir(torch_module, *inputs)``: the benchmark workloads at their smoke sizes, verified
    by MLIR; imported back, they compute what PyTorch does."""
    torch = pytest.importorskip("torch", reason="the torch extra is not installed")
    from tensorium.bench.workloads import WORKLOADS as ALL

    workload = ALL[name]
    instance = workload.build(workload.smoke)
    text = tm.export_mlir(instance.module, *[torch.from_numpy(x) for x in instance.inputs])
    with torch.no_grad():
        want = instance.module(*[torch.from_numpy(x) for x in instance.inputs]).numpy()
    (got,) = run(import_text(text, name), list(instance.inputs))
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4)


def test_packed_shards_export_as_their_codes() -> None:
    """A weight that pack-quant stored as ``interleaved_shards`` (Zen 3, 5 bits) exports as its codes: MLIR
    verifies the text and the import computes what the interpreter does."""
    from tensorium.ir import graph
    from tensorium.ir.attributes import DenseAttr
    from tensorium.ir.types import TensorType, f32
    from tensorium.passes import PassManager
    from tensorium.testing import build_module

    weight = np.random.default_rng(5).standard_normal((24, 128)).astype(np.float32)

    def body(x: object) -> object:
        w = graph.constant(value=DenseAttr.adopt(weight, TensorType((24, 128), f32)))
        return graph.matmul(x, w, transpose_b=True)

    module = build_module([TensorType((2, 128), f32)], body)
    PassManager.parse("quantize{bits=5,group=64,min-elements=0},pack-quant{target=cpu:znver3}").run(module)
    assert 'layout = "interleaved_shards"' in tm.ir.print_module(module)
    text = export_text(module)
    verify_text(text)
    inputs = sample_inputs(module)
    assert _equal(run(import_text(text, "shards"), inputs), run(module, inputs))
