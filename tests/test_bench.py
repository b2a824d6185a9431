"""The benchmark harness: a smoke run at tiny sizes checks every runner and the report's structure, never timings."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tensorium import bench
from tensorium.cli import bench as bench_cli

pytest.importorskip("torch")

HEADER = "| workload | runner | median | x best | rate | % of peak | round spread | cold compile | check |"


@pytest.fixture(scope="module")
def benchmarks() -> ModuleType:
    return bench.load_benchmarks()


def _runner_classes(benchmarks: ModuleType) -> list[type]:
    base = benchmarks.runners.Runner
    prepared = benchmarks.runners.Prepared

    class Broken(base):  # type: ignore[misc, valid-type]
        name = "broken"

        def prepare(self, inst: Any) -> Any:
            raise RuntimeError("inductor exploded\nsecond line")

    class Wrong(base):  # type: ignore[misc, valid-type]
        name = "wrong"

        def prepare(self, inst: Any) -> Any:
            fn = benchmarks.runners.TorchEagerRunner().prepare(inst)
            return prepared(fn.call, lambda out: fn.to_numpy(out) * 1.01 + 1.0, 0.5)

    class Flaky(base):  # type: ignore[misc, valid-type]
        """Fails on its third call: after the check and the time estimate, in the first round."""

        name = "flaky"

        def prepare(self, inst: Any) -> Any:
            calls = iter([np.zeros(1), np.zeros(1)])
            reference = benchmarks.harness.reference_output(inst)

            def call() -> Any:
                if next(calls, None) is None:
                    raise ValueError("out of calls")
                return reference

            return prepared(call, lambda out: out)

    return [Broken, Wrong, Flaky]


@pytest.fixture(scope="module")
def report(benchmarks: ModuleType) -> Any:
    keys = ["numpy", "eager", "onnxruntime", "tensorium"]
    runners, missing = benchmarks.runners.make_runners(keys, ["interp"], 2)
    runners += [cls() for cls in _runner_classes(benchmarks)]
    log = io.StringIO()
    parks = []
    park = benchmarks.harness.let_threads_park
    benchmarks.harness.let_threads_park = lambda: parks.append(1)  # counted, not slept: the smoke run stays fast
    try:
        result = benchmarks.harness.run(
            runners, rounds=1, min_time=1e-4, smoke=True, command="test", missing=missing, stream=log
        )
    finally:
        benchmarks.harness.let_threads_park = park
    result.log = log.getvalue()
    result.parks = len(parks)
    return result


def test_each_runner_waits_for_the_last_ones_threads_to_park(report: Any) -> None:
    timed = sum(len(row.round_medians) for row in report.rows)
    failed_in_a_round = sum("in round" in (row.detail or "") for row in report.rows)
    assert timed > 0 and report.parks == timed + failed_in_a_round


def test_workload_names_match_the_cli(benchmarks: ModuleType) -> None:
    assert tuple(benchmarks.workloads.WORKLOADS) == bench.WORKLOADS


def test_every_runner_gets_a_row_per_workload(report: Any) -> None:
    names = [row.runner for row in report.rows]
    runners = list(dict.fromkeys(names))
    assert runners[:2] == ["numpy", "torch eager"] and runners[-4:] == [
        "tensorium (interp)",
        "broken",
        "wrong",
        "flaky",
    ]
    assert [row.workload for row in report.rows[:: len(runners)]] == list(bench.WORKLOADS)
    assert len(report.rows) == len(runners) * len(bench.WORKLOADS)


def test_real_runners_agree_with_float64_eager(report: Any) -> None:
    for row in report.rows:
        if row.runner == "numpy" and row.workload in ("resnet_block", "encoder"):
            assert (row.status, row.detail) == ("n/a", "no numpy version")
        elif row.runner not in ("broken", "wrong", "flaky"):
            assert row.status == "ok", row
            assert row.error < 1e-5
            assert len(row.round_medians) == 1 and row.reps >= 3
            assert row.best_s == row.round_medians[0] and row.ratio >= 1.0
            assert row.unit == ("GB/s" if row.workload == "gemv" else "GFLOP/s")
            assert row.rate > 0 and row.percent > 0


def test_failures_and_mismatches_are_reported_not_hidden(report: Any) -> None:
    broken = [row for row in report.rows if row.runner == "broken"]
    assert {row.status for row in broken} == {"failed"}
    assert broken[0].detail == "RuntimeError: inductor exploded"
    assert broken[0].best_s is None and broken[0].round_medians == []
    wrong = [row for row in report.rows if row.runner == "wrong"]
    assert {row.status for row in wrong} == {"mismatch"}
    assert all(row.best_s is not None and row.compile_s == 0.5 and row.error > 1e-3 for row in wrong)
    flaky = [row for row in report.rows if row.runner == "flaky"]
    assert {(row.status, row.detail) for row in flaky} == {("failed", "in round 1: ValueError: out of calls")}
    assert all(row.best_s is None and row.ratio is None for row in flaky)
    assert "[gemm] broken: FAILED RuntimeError: inductor exploded" in report.log
    assert "[gemm] round 1/1: numpy" in report.log


def test_compile_times_only_for_compiling_runners(report: Any) -> None:
    for row in report.rows:
        if row.runner in ("numpy", "torch eager"):
            assert row.compile_s is None
        elif row.runner in ("onnxruntime", "tensorium (interp)"):
            assert row.compile_s > 0


def test_markdown_table_structure(report: Any) -> None:
    text = report.to_markdown()
    lines = text.splitlines()
    assert lines[0] == "# Tensorium benchmark results"
    assert "- Command: `test`" in lines
    table = lines[lines.index(HEADER) :]
    rows = table[2 : 2 + len(report.rows)]
    assert all(line.count(" | ") == 8 for line in rows)
    cells = {(c[0], c[1]): c for c in (line.strip("| ").split(" | ") for line in rows)}
    assert cells[("GEMM 8x6x5", "broken")][-1] == "failed: RuntimeError: inductor exploded"
    assert cells[("GEMM 8x6x5", "wrong")][-1].startswith("**MISMATCH**")
    assert cells[("ResNet basic block 4ch 6x6", "numpy")][2:] == ["-"] * 6 + ["n/a: no numpy version"]
    assert cells[("GEMM 8x6x5", "tensorium (interp)")][7].endswith(" s")
    assert sum(line.startswith("- Both probes run before and after the workloads") for line in lines) == 1
    summary = lines[lines.index("| workload | Tensorium | best peer | Tensorium / best peer |") :]
    mine = [line for line in summary if line.startswith("| ") and line.endswith("x |")]
    assert [line.split(" | ")[1].split(" ")[:2] for line in mine] == [["tensorium", "(interp)"]] * len(bench.WORKLOADS)


def test_json_has_the_machine_and_every_row(report: Any) -> None:
    data = json.loads(report.to_json())
    assert data["command"] == "test" and data["rounds"] == 1 and data["smoke"] is True
    assert data["machine"]["threads"] == 2 and data["machine"]["peak_gflops"] > 0
    assert data["machine"]["read_gbps"] > 0 and "FMA chains" in data["machine"]["peak_probe"]
    assert data["machine"]["gemm_proxy_gflops"] > 0 and data["machine"]["clock_ghz"] > 0
    assert [r["runner"] for r in data["rows"]] == [row.runner for row in report.rows]


def test_check_output(benchmarks: ModuleType) -> None:
    check = benchmarks.harness.check_output
    ref = np.array([[100.0, 0.0], [-50.0, 1e-9]])
    assert check(ref.astype(np.float32) + np.float32(0.05), ref) == (True, pytest.approx(5e-4, rel=1e-3))
    ok, error = check(np.array([[100.3, 0.0], [-50.0, 0.0]], np.float32), ref)
    assert not ok and error == pytest.approx(3e-3, rel=1e-3)
    assert check(np.zeros((2, 1), np.float32), ref) == (False, math.inf)
    assert check(np.zeros((0, 3), np.float32), np.zeros((0, 3))) == (True, 0.0)


def test_numpy_erf_and_gelu(benchmarks: ModuleType) -> None:
    x = np.linspace(-6, 6, 241).astype(np.float32)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    erf = benchmarks.workloads.erf(x)
    assert erf.dtype == np.float32 and np.max(np.abs(erf - exact)) < 4e-7
    gelu = benchmarks.workloads.gelu(np.array([-1.0, 0.0, 2.0], np.float32))
    assert np.allclose(gelu, [-0.15865525, 0.0, 1.95449974], atol=1e-6)


def test_flop_counts(benchmarks: ModuleType) -> None:
    w = benchmarks.workloads.WORKLOADS
    assert w["gemm"].build({"m": 3, "n": 4, "k": 5}).flops == 2 * 3 * 4 * 5
    gemv = w["gemv"].build({"m": 3, "n": 4})
    assert (gemv.flops, gemv.bytes) == (24, 4 * (12 + 4 + 3))
    mlp = w["mlp"].build({"d0": 2, "d1": 3, "d2": 4, "d3": 5, "batch": 6})
    assert mlp.flops == 2 * 6 * (2 * 3 + 3 * 4 + 4 * 5)
    enc = w["encoder"].build({"d": 8, "heads": 2, "ffn": 16, "seq": 4})
    assert enc.flops == 2 * 4 * (3 * 64 + 64 + 2 * 8 * 16) + 4 * 4 * 4 * 8
    assert w["resnet_block"].build({"channels": 2, "size": 3}).flops == 2 * 2 * 2 * 2 * 9 * 9


def test_cli_writes_markdown_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setenv("TENSORIUM_NUM_THREADS", "2")
    out = tmp_path / "RESULTS.md"
    argv = ["--smoke", "--rounds", "1", "--only", "gemm", "--runners", "numpy,eager", "--min-time", "0.001"]
    assert bench_cli.main([*argv, "--out", str(out)]) == 0
    text = out.read_text()
    assert capsys.readouterr().out == text
    command = "python -m benchmarks --rounds 1 --target interp --threads 2 --min-time 0.001 --params constants"
    assert f"- Command: `{command} --only gemm --runners numpy,eager --smoke --out {out}`" in text
    assert HEADER in text and "| GEMM 8x6x5 | torch eager |" in text
    assert [row["runner"] for row in json.loads(out.with_suffix(".json").read_text())["rows"]] == [
        "numpy",
        "torch eager",
    ]


def test_cli_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_cli.main(["--target", "nope", "--smoke"]) == 1
    assert capsys.readouterr().err.startswith("python -m benchmarks: error: unknown target 'nope'")
    with pytest.raises(SystemExit) as exit_info:
        bench_cli.main(["--only", "gemm,fft"])
    assert exit_info.value.code == 2
    assert "unknown workload 'fft'; choose from gemm,gemv,mlp,resnet_block,encoder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench_cli.main(["--rounds", "0"])
    assert "expected a positive number, got '0'" in capsys.readouterr().err


def test_bench_subcommand_parses() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="tensorium")
    bench_cli.add_bench_command(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", "--only", "gemm,gemv", "--target", "interp,cpu,interp", "--rounds", "3"])
    assert (args.only, args.target, args.rounds) == (["gemm", "gemv"], ["interp", "cpu"], 3)
    assert (args.handler, args.bench_prog) == (bench_cli.cmd_bench, "tensorium bench")
    assert bench_cli.command_line(args, args.bench_prog) == (
        "tensorium bench --rounds 3 --target interp,cpu --threads 2 --min-time 0.25 --params constants --only gemm,gemv"
    )


def test_ablations_add_runners_and_a_configuration_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    monkeypatch.setenv("TENSORIUM_NUM_THREADS", "2")
    out = tmp_path / "RESULTS.md"
    argv = ["--smoke", "--rounds", "1", "--only", "mlp", "--runners", "tensorium", "--target", "cpu"]
    assert (
        bench_cli.main(
            [*argv, "--min-time", "0.001", "--ablate", "fuse", "--ablate", "fuse,memory-plan", "--out", str(out)]
        )
        == 0
    )
    text = out.read_text()
    assert "--ablate fuse --ablate fuse,memory-plan" in text
    lines = [line for line in text.splitlines() if line.startswith("| MLP 8-16-16-4 GELU, batch 2 | tensorium (cpu")]
    configurations = [line.split(" | ") for line in lines if line.count("|") == 7]
    assert [c[1] for c in configurations] == [
        "tensorium (cpu)",
        "tensorium (cpu, -fuse)",
        "tensorium (cpu, -fuse, -memory-plan)",
    ]
    assert [c[2] for c in configurations] == ["3", "8", "8"]  # kernels: fused, then one per op
    assert [c[3] for c in configurations] == ["256 B", "256 B", "800 B"]  # planning shares memory
    assert configurations[-1][5] == "1.00x |"
    assert bench_cli.main([*argv, "--ablate", "fusion"]) == 1
    assert "disable: 'fusion' is not a pass" in capsys.readouterr().err
