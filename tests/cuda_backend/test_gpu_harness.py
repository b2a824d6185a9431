"""benchmarks/gpu_cuda.py, the one-command GPU table: every workload compiles for a GPU here (no GPU needed), and
without a GPU the script says why and exits with status 2."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tensorium.backends.cuda.executable import CudaExecutable
from tensorium.targets import parse_target

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_cuda.py"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_cuda", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_cuda"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_workload_of_the_table_compiles_for_a_gpu() -> None:
    harness = _harness()
    rows = harness.workloads(quick=True)
    names = [w.name for w in rows]
    assert any("f32" in n and "gemm" in n for n in names) and any("gemm" in n and "f16" in n for n in names)
    assert any("transformer" in n for n in names) and any("int4" in n for n in names)
    assert any("prefill" in n and "int4" in n for n in names)
    for w in rows:
        module = w.module()
        built = CudaExecutable.build(module, target=parse_target("cuda:sm_90"), configs=w.kernel_configs(module))
        ptx = built.ptx
        assert ptx.ptx.count(".entry") >= 1
        if "int4" in w.name:
            assert list(ptx.launches) == ["matmul_packed_0"]  # the warp-packed GEMV, or the dequantizing GEMM
            family = "gpu_qgemm" if "prefill" in w.name else "gpu_qgemv"
            assert f"{family}{{" in built.loop_ir
            assert ("mma.sync" in ptx.ptx) == ("mma" in w.name.split())
        elif "f16" in w.name and "gemm" in w.name:
            assert "mma.sync" in ptx.ptx


def test_without_a_gpu_the_harness_says_so_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from tensorium.backends.cuda.driver import CudaUnavailable, call

    try:
        call("cuInit", 0)
    except CudaUnavailable:
        assert _harness().main([]) == 2
        assert "needs a GPU" in capsys.readouterr().err
    else:
        pytest.skip("a GPU answers here: the harness would run")
