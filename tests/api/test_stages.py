"""Turning passes and codegen stages off by name, ``.stats()``, and the IR of each stage (``--dump-ir``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.api import DEFAULT_PIPELINE, TARGET_PASSES
from tensorium.cli import main
from tensorium.errors import TensoriumError

RNG = np.random.default_rng(4)
W1 = RNG.standard_normal((16, 32)).astype(np.float32)
B1 = RNG.standard_normal(32).astype(np.float32)
W2 = RNG.standard_normal((32, 16)).astype(np.float32)


def block(x: Any) -> Any:
    h = nn.gelu(x @ W1 + B1)
    return nn.layer_norm(h @ W2 + x)


def test_disabling_passes_and_memory_planning_keeps_the_results() -> None:
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    full = tm.compile(block, cache=False)
    want = full(x)
    assert full.pipeline == f"{DEFAULT_PIPELINE},{TARGET_PASSES['cpu']}"
    stats = full.stats()
    assert stats["kernels"] == 3 and stats["fused_groups"] == 2 and stats["fused_ops"] == 5
    plain = tm.compile(block, cache=False, disable=("fuse", "memory-plan"))
    assert plain.pipeline == full.pipeline.removesuffix(",fuse")
    np.testing.assert_allclose(plain(x), want, rtol=1e-5, atol=1e-6)
    unplanned = plain.stats()
    assert unplanned["kernels"] == 6 and unplanned["fused_groups"] == 0
    assert unplanned["memory_slots"] == 5 and unplanned["peak_intermediate_bytes"] == 8 * (32 * 3 + 16 * 2) * 4
    planned = tm.compile(block, cache=False, disable=("fuse",))
    planned(x)
    assert planned.stats()["peak_intermediate_bytes"] == 8 * 32 * 4 + 8 * 16 * 4  # in place and reused


def test_disabled_stages_travel_with_the_artifact(tmp_path: Path) -> None:
    model = tm.compile(block, cache=False, disable=("memory-plan",))
    x = RNG.standard_normal((2, 16)).astype(np.float32)
    want = model(x)
    model.save(tmp_path / "m.tsm")
    assert json.loads((tmp_path / "m.tsm" / "metadata.json").read_text())["disabled"] == ["memory-plan"]
    assert json.loads((tmp_path / "m.tsm" / "cpu" / "plan.json").read_text())["memory_plan"] is False
    loaded = tm.load(tmp_path / "m.tsm")
    np.testing.assert_allclose(loaded(x), want, rtol=1e-6)
    assert loaded.stats()["memory_slots"] == model.stats()["memory_slots"]


def test_unknown_names_and_stats_before_a_call() -> None:
    with pytest.raises(TensoriumError, match=r"disable: 'fusion' is not a pass or a codegen stage; known: .*fuse"):
        tm.compile(block, disable=("fusion",))
    with pytest.raises(TensoriumError, match="nothing is compiled yet: call the model once first"):
        tm.compile(block).stats()


def test_interpreter_stats_count_ops_and_live_results() -> None:
    model = tm.compile(lambda x: nn.relu(nn.tanh(x) + 1.0) * 2.0, target="interp", cache=False)
    model(np.ones((4, 8), np.float32))
    stats = model.stats()
    assert stats["kernels"] == 4 and stats["fused_groups"] == 0
    assert stats["peak_intermediate_bytes"] == 2 * 4 * 8 * 4  # an op's operand and its result


def cli(*argv: str) -> int:
    return main(list(argv))


def test_cli_dumps_the_ir_of_each_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f.py").write_text(
        "import numpy as np\nfrom tensorium import nn\n\nW = np.ones((4, 3), np.float32)\n\n\n"
        "def factory():\n    return (lambda x: nn.relu(x @ W) - 1.0), (np.ones((2, 4), np.float32),)\n"
    )
    dump = tmp_path / "ir"
    args = ["compile", f"{tmp_path}/f.py:factory", "-o", str(tmp_path / "m.tsm"), "--dump-ir", str(dump)]
    assert cli(*args, "--disable", "cse,memory-plan") == 0
    passes = [p for p in f"{DEFAULT_PIPELINE},{TARGET_PASSES['cpu']}".split(",") if p != "cse"]
    codegen = [f"loops-{s}.mlir" for s in ("lower", "schedule", "decompose")]
    stages = ["imported.mlir", *(f"{p}.mlir" for p in passes), *codegen, "llvm.ll", "llvm-optimized.ll"]
    expected = [f"{n:02d}-{name}" for n, name in enumerate(stages)]
    assert f"IR after each stage: {dump} ({len(expected)} files)" in capsys.readouterr().err
    assert sorted(p.name for p in dump.iterdir()) == expected
    fuse, packed, lowered, scheduled, decomposed, llvm = (
        dump / expected[stages.index(n)] for n in ("fuse.mlir", "pack-weights.mlir", *codegen, "llvm.ll")
    )
    assert "graph.fused" in fuse.read_text() and "graph.fused" not in packed.read_text()
    assert "loop.for" in lowered.read_text() and "define" in llvm.read_text()
    assert 'kind = "parallel"' in scheduled.read_text()  # the relu - 1 kernel gets its default schedule
    assert "loop.tanh" not in decomposed.read_text()
    assert cli("compile", f"{tmp_path}/f.py:factory", "-o", str(tmp_path / "x.tsm"), "--disable", "fusion") == 1
    assert "disable: 'fusion' is not a pass" in capsys.readouterr().err
