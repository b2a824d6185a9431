"""benchmarks/gpu_cuda.py, the one-command GPU table: every row of issue 17's point 6 is there, its dry run compiles
every row's kernels and every check's program without a GPU (PTX through ptxas, registers and spills), and without a
GPU the plain run says why and exits with status 2."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import needs_ptxas
from .suite import SUITE

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_cuda.py"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_cuda", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_cuda"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_table_has_every_row_of_point_6() -> None:
    names = [w.name for w in _harness().workloads(quick=False)]
    assert names == [
        "gemm 4096^3 f32",
        "gemm 4096^3 f16",
        "transformer layer 2048x1024",
        "decode gemv 1x4096x4096 f32",
        "decode gemv 1x4096x4096 f32, W^T",
        "decode gemv 1x4096x4096 int4 (vs f16)",
        "prefill gemm 2048x4096x4096 int4 (vs f16)",
        "prefill gemm 2048x4096x4096 int4 mma (vs f16)",
        "prefill gemm sx4096x4096 int4 (vs f16)",
    ]


def test_the_checks_hold_the_op_suite_and_the_models() -> None:
    harness = _harness()
    suite = harness.op_suite()
    assert len(suite) == len(SUITE) and all(c.name.startswith("op ") for c in suite)
    names = [c.name for c in harness.models()]
    assert "model 4-bit mlp (decode)" in names and "model 4-bit projection (s=77 rows)" in names


@needs_ptxas
def test_the_dry_run_compiles_every_row_and_check_without_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    assert _harness().main(["--dry-run", "--quick", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "dry run for cuda:sm_90: no GPU used; ptxas checks every kernel" in text
    assert re.search(r"op suite and models: \d+ programs compiled for cuda:sm_90 and assembled", text)
    kernels = json.loads(out.read_text())["kernels"]
    by_row: dict[str, list[dict[str, object]]] = {}
    for kernel in kernels:
        by_row.setdefault(str(kernel["workload"]), []).append(kernel)
    assert len(by_row) == 9
    for name, row in by_row.items():
        assert all(isinstance(k["registers"], int) and 0 < k["registers"] <= 255 for k in row), row
        if name.startswith("decode gemv") and "int4" not in name:
            (kernel,) = row  # the float GEMV, B transposed or not
            assert str(kernel["config"]).startswith("gpu_gemv{") and kernel["spill_bytes"] == 0
        if "int4" in name:
            (kernel,) = row  # the warp-packed GEMV, or the dequantizing GEMM
            family = "gpu_qgemm" if "prefill" in name else "gpu_qgemv"
            assert str(kernel["config"]).startswith(f"{family}{{") and kernel["spill_bytes"] == 0
            assert ("mma=true" in str(kernel["config"])) == ("mma" in name.split())
            assert ("row_blocks=" in str(kernel["config"])) == name.startswith("prefill gemm sx")
        elif "gemm" in name:
            (kernel,) = row
            assert str(kernel["config"]).startswith("gpu_gemm{") and kernel["spill_bytes"] == 0
            assert ("mma=true" in str(kernel["config"])) == ("f16" in name)


def test_without_a_gpu_the_harness_says_so_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from tensorium.backends.cuda.driver import CudaUnavailable, call

    try:
        call("cuInit", 0)
    except CudaUnavailable:
        assert _harness().main([]) == 2
        assert "needs a GPU" in capsys.readouterr().err
    else:
        pytest.skip("a GPU answers here: the harness would run")
