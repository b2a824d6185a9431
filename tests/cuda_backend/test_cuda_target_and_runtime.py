"""The cuda target, tensorium.compile(target="cuda") without a GPU, artifacts, and runs on a GPU where one is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.cuda.driver import CudaUnavailable, call
from tensorium.backends.cuda.executable import CudaExecutable
from tensorium.runtime.kinds import executable_kind
from tensorium.targets import TargetError, parse_target

from .conftest import needs_ptxas
from .suite import SUITE


def _gpu_missing() -> str | None:
    """Why no GPU runs here (the first failing driver call), or None when one does."""
    try:
        call("cuInit", 0)
        call("cuDeviceGet", 0)
    except CudaUnavailable as e:
        return str(e)
    return None


NO_GPU = _gpu_missing()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA GPU: {NO_GPU}")


def test_cuda_targets_name_their_architecture() -> None:
    target = parse_target("cuda:sm_90")
    assert (target.kind, target.cpu, target.triple, str(target)) == (
        "cuda",
        "sm_90",
        "nvptx64-nvidia-cuda",
        "cuda:sm_90",
    )
    assert "48 KiB shared memory per block" in target.describe()
    assert parse_target("cuda").kind == "cuda"  # the device's architecture, or sm_80 without one
    assert parse_target(str(target)) == target
    assert target.key() != parse_target("cuda:sm_80").key()


def test_an_unsupported_architecture_lists_the_supported_ones() -> None:
    with pytest.raises(
        TargetError, match=r"target 'cuda:sm_61': unsupported CUDA architecture; supported: sm_75, sm_80"
    ):
        parse_target("cuda:sm_61")


def test_the_cuda_kind_has_an_executable() -> None:
    assert executable_kind("cuda") is CudaExecutable


@pytest.mark.skipif(NO_GPU is None, reason="a GPU is present: running succeeds")
def test_compiling_needs_no_gpu_running_says_it_needs_one_and_save_keeps_the_ptx(tmp_path: Path) -> None:
    case = SUITE["mlp_block"]

    def model(x: tm.Tensor, w1: tm.Tensor, w2: tm.Tensor, g: tm.Tensor) -> tm.Tensor:
        return tm.nn.softmax(tm.nn.rms_norm(tm.nn.gelu(x @ w1) @ w2, g), axis=-1)

    compiled = tm.compile(model, target="cuda:sm_90")
    with pytest.raises(CudaUnavailable, match=r"running CUDA code needs .*compiling needs none: CompiledModel.save"):
        compiled(*case.inputs())
    path = compiled.save(tmp_path / "mlp.tsm")
    files = sorted(p.name for p in (Path(path) / "cuda").iterdir())
    assert {"kernels.ptx", "plan.json", "kernels.mlir"} <= set(files)
    assert ".target sm_90" in (Path(path) / "cuda" / "kernels.ptx").read_text()
    loaded = tm.load(path)
    with pytest.raises(CudaUnavailable):
        loaded(*case.inputs())


@needs_ptxas
def test_the_artifact_holds_cubin_where_ptxas_ran(tmp_path: Path) -> None:
    module = SUITE["softmax"].module()
    executable = CudaExecutable.build(module, target=parse_target("cuda:sm_80"))
    assert executable.cubin is not None and executable.cubin[:4] == b"\x7fELF"
    folder = executable.to_files(tmp_path / "cuda")
    again = CudaExecutable.from_files(folder)
    assert again.ptx.ptx == executable.ptx.ptx and again.cubin == executable.cubin
    assert again.ptx.launches == executable.ptx.launches and again.steps == executable.steps
    assert all(step.grid is not None for step in again.steps)


@needs_gpu
@pytest.mark.parametrize("name", sorted(SUITE))
def test_the_op_suite_on_the_gpu_matches_the_interpreter(name: str) -> None:
    from tensorium.backends import interp

    case = SUITE[name]
    module = case.module()
    inputs = case.inputs()
    got = CudaExecutable.build(module).run(inputs)
    for g, w in zip(got, interp.run(module, inputs)):
        np.testing.assert_allclose(g, w, rtol=1e-4 if w.dtype != np.float16 else 1e-3, atol=1e-5)


@needs_gpu
@pytest.mark.parametrize(
    ("element", "point", "transpose_b"),
    [("f32", None, False), ("f32", "gpu_gemv{warps=8,unroll=8}", False), ("f16", None, False), ("f32", None, True)],
)
def test_the_gemv_on_the_gpu_matches_the_interpreter(element: str, point: str | None, transpose_b: bool) -> None:
    from tensorium.backends import interp
    from tensorium.ir import graph
    from tensorium.ir.dialects.builtin import func_body, functions
    from tensorium.ir.types import TensorType, f16, f32
    from tensorium.lowering.space import Config, kernel_key
    from tensorium.testing import build_module

    t = f32 if element == "f32" else f16
    b_shape = (300, 1000) if transpose_b else (1000, 300)
    module = build_module(
        [TensorType((3, 1000), t), TensorType(b_shape, t)], lambda a, b: graph.matmul(a, b, transpose_b=transpose_b)
    )
    op = next(o for o in func_body(functions(module)[0]).ops if o.name == "graph.matmul")
    built = CudaExecutable.build(module, configs={} if point is None else {kernel_key(op): Config.parse(point)})
    assert "gpu_gemv{" in built.loop_ir
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal(s).astype(element.replace("f", "float")) for s in ((3, 1000), b_shape)]
    (got,) = built.run(inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-2)


MMA_POINTS = [
    None,
    "gpu_gemm{bm=64,bn=64,bk=32,tm=2,tn=4,stages=2,mma=true,vector=true,async_copy=true,unroll=false}",
    "gpu_gemm{bm=32,bn=32,bk=16,tm=1,tn=2,stages=1,mma=true,vector=false,async_copy=false,unroll=false}",
]


@needs_gpu
@pytest.mark.parametrize("point", MMA_POINTS)
def test_f16_products_through_ldmatrix_and_mma_on_the_gpu_match_the_interpreter(point: str | None) -> None:
    """The fragment loads (``ldmatrix``, transposed for B) and ``mma.sync`` only run on hardware: an f16 product
    with partial tiles on every edge and a fused bias and relu, at the default and two other points."""
    from tensorium.backends import interp
    from tensorium.ir import graph
    from tensorium.ir.dialects.builtin import func_body, functions
    from tensorium.ir.types import TensorType, f16
    from tensorium.lowering.space import Config, kernel_key
    from tensorium.passes import PassManager
    from tensorium.testing import build_module

    shapes = ((72, 136), (136, 88), (88,))
    module = build_module(
        [TensorType(s, f16) for s in shapes], lambda a, b, c: graph.relu(graph.add(graph.matmul(a, b), c))
    )
    PassManager.parse("fuse").run(module)
    (group,) = [op for op in func_body(functions(module)[0]).ops if op.name == "graph.fused"]
    configs = {} if point is None else {kernel_key(group): Config.parse(point)}
    rng = np.random.default_rng(6)
    inputs = [rng.standard_normal(s).astype(np.float16) for s in shapes]
    built = CudaExecutable.build(module, configs=configs)
    assert "ldmatrix" in built.ptx.ptx and "mma.sync" in built.ptx.ptx
    (got,) = built.run(inputs)
    (want,) = interp.run(module, inputs)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-2)


def test_a_gpu_older_than_the_code_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorium.backends.cuda import executable

    built = CudaExecutable.build(SUITE["softmax"].module(), target=parse_target("cuda:sm_90"))
    monkeypatch.setattr(executable, "device_arch", lambda: "sm_75")
    with pytest.raises(CudaUnavailable, match=r"compiled for sm_90, but GPU 0 is sm_75; compile for 'cuda'"):
        built.run(SUITE["softmax"].inputs())


FLOATS_FACTORY = """
import numpy as np
from tensorium import nn

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def floats():
    return (lambda x: nn.softmax(x @ W, axis=-1)), (np.ones((2, 4), np.float32),)
"""


@pytest.mark.skipif(NO_GPU is None, reason="a GPU is present: running succeeds")
def test_the_cli_writes_ptx_for_cuda_and_running_it_without_a_gpu_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tensorium.cli import main

    factory = tmp_path / "floats.py"
    factory.write_text(FLOATS_FACTORY)
    out = tmp_path / "floats.tsm"
    assert main(["compile", f"{factory}:floats", "-t", "cuda", "-o", str(out)]) == 0
    ptx = (out / "cuda" / "kernels.ptx").read_text()
    assert ".target sm_80" in ptx and ".entry" in ptx  # "cuda" without a device: sm_80
    capsys.readouterr()
    assert main(["run", str(out), "--random-inputs"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1, errors
    assert errors[0].startswith("tensorium: error: running CUDA code needs cuda-bindings")
    assert "`tensorium compile -t cuda` keeps the PTX" in errors[0]
