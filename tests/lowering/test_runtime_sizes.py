"""Sizes known only at run time: ``graph.compress`` binds a named dim when it runs, and the host plan
allocates its results at their bound, binds the dim from the size result and keeps the leading rows,
on the graph interpreter, the loop interpreter and the CPU (also after an artifact round trip)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.interp import run
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import VerifyError
from tensorium.lowering import lower_function, plan_of
from tensorium.lowering.plan import RuntimeDim

PROGRAM = """
func.func @main(%m: tensor<5xi1>, %x: tensor<5x2xf32>, %y: tensor<5xi32>)
    -> (tensor<[n]x2xf32>, tensor<[n]xi32>, tensor<i64>, tensor<f32>) {
  %0:3 = graph.compress %m, %x, %y {dim = "n"} : (tensor<5xi1>, tensor<5x2xf32>, tensor<5xi32>)
      -> (tensor<[n]x2xf32>, tensor<[n]xi32>, tensor<i64>)
  %1 = graph.neg %0#0 : (tensor<[n]x2xf32>) -> tensor<[n]x2xf32>
  %2 = graph.transpose %0#0 {perm = [1, 0]} : (tensor<[n]x2xf32>) -> tensor<2x[n]xf32>
  %3 = graph.reduce_sum %2 {axes = [0, 1]} : (tensor<2x[n]xf32>) -> tensor<f32>
  func.return %1, %0#1, %0#2, %3 : tensor<[n]x2xf32>, tensor<[n]xi32>, tensor<i64>, tensor<f32>
}
"""

MASKS = [np.array([1, 0, 1, 1, 0], bool), np.zeros(5, bool), np.ones(5, bool)]
X = np.arange(10, dtype=np.float32).reshape(5, 2)
Y = np.arange(5, dtype=np.int32) * 10


def _expected(mask: np.ndarray) -> list[np.ndarray]:
    kept = X[mask]
    return [-kept, Y[mask], np.array(mask.sum(), np.int64), np.array(kept.sum(), np.float32)]


def _module() -> tm.ir.Operation:
    return tm.parse_module(PROGRAM)


def _check(outputs: list[np.ndarray], mask: np.ndarray) -> None:
    for got, want in zip(outputs, _expected(mask), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_compress_prints_parses_and_binds_its_dim_in_the_interpreter() -> None:
    module = _module()
    text = tm.print_module(module)
    assert 'graph.compress %m, %x, %y {dim = "n"}' in text
    assert tm.print_module(tm.parse_module(text)) == text
    for mask in MASKS:
        _check(run(module, [mask, X, Y]), mask)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("(tensor<5xf32>, tensor<5xf32>) -> (tensor<[n]xf32>, tensor<i64>)", "mask element type must be i1"),
        ("(tensor<5xi1>, tensor<4xf32>) -> (tensor<[n]xf32>, tensor<i64>)", "has 4 rows, but the mask has 5"),
        ("(tensor<5xi1>, tensor<f32>) -> (tensor<[n]xf32>, tensor<i64>)", "data operand #0 is 0-d"),
    ],
)
def test_compress_type_errors_name_the_operand(source: str, message: str) -> None:
    mask_t, data_t = source[1:].split(") ->")[0].split(", ")
    text = f"""
func.func @main(%m: {mask_t}, %x: {data_t}) -> tensor<i64> {{
  %0:2 = graph.compress %m, %x {{dim = "n"}} : {source}
  func.return %0#1 : tensor<i64>
}}
"""
    with pytest.raises(VerifyError, match=message):
        tm.parse_module(text)


def test_compress_refuses_a_dim_an_operand_already_has() -> None:
    text = """
func.func @main(%m: tensor<[n]xi1>, %x: tensor<[n]xf32>) -> tensor<i64> {
  %0:2 = graph.compress %m, %x {dim = "n"} : (tensor<[n]xi1>, tensor<[n]xf32>) -> (tensor<[n]xf32>, tensor<i64>)
  func.return %0#1 : tensor<i64>
}
"""
    with pytest.raises(VerifyError, match=r"dim \[n\] is bound by this op"):
        tm.parse_module(text)


def test_the_plan_records_the_runtime_dim_and_round_trips() -> None:
    lowered = lower_function(_module())
    plan = plan_of(lowered)
    compress = plan.steps[0]
    assert plan.dims == (RuntimeDim("n", compress.outputs[2], 5, compress.outputs[:2]),)
    assert plan_of(tm.parse_module(tm.print_module(lowered))).dims == plan.dims


@pytest.mark.parametrize("mask", MASKS, ids=["some", "none", "all"])
def test_loop_interpreter_runs_the_plan(mask: np.ndarray) -> None:
    _check(run_plan(lower_function(_module()), [mask, X, Y]), mask)


def test_cpu_runs_the_plan_and_its_artifact(tmp_path: Path) -> None:
    executable = CpuExecutable.build(_module())
    for mask in MASKS:
        _check(executable.run([mask, X, Y]), mask)
    loaded = CpuExecutable.from_files(executable.to_files(tmp_path))
    assert loaded.dims == executable.dims
    _check(loaded.run([MASKS[0], X, Y]), MASKS[0])


def test_cuda_refuses_runtime_sizes_with_the_dim_named() -> None:
    from tensorium.backends.cuda.executable import CudaExecutable
    from tensorium.errors import CompileError
    from tensorium.targets import parse_target

    with pytest.raises(CompileError, match=r"sizes are computed at run time \(\[n\]\)"):
        CudaExecutable.build(_module(), target=parse_target("cuda:sm_90"))
