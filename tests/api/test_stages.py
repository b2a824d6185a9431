"""Turning passes and codegen stages off by name, ``.stats()``, and the IR of each stage (``--dump-ir``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
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
    assert full.pipeline == "canonicalize,fold-batch-norm,cse,fold,dce,layout,pack-weights,fuse"
    stats = full.stats()
    assert stats["kernels"] == 3 and stats["fused_groups"] == 2 and stats["fused_ops"] == 5
    plain = tm.compile(block, cache=False, disable=("fuse", "memory-plan"))
    assert plain.pipeline == "canonicalize,fold-batch-norm,cse,fold,dce,layout,pack-weights"
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
    assert f"IR after each stage: {dump} (11 files)" in capsys.readouterr().err
    names = sorted(p.name for p in dump.iterdir())
    assert (
        names
        == [
            "00-imported.mlir",
            "01-canonicalize.mlir",
            "02-fold-batch-norm.mlir",
            "03-fold.mlir",
            "04-dce.mlir",
            "05-layout.mlir",
            "06-pack-weights.mlir",
            "07-fuse.mlir",
            "08-loops.mlir",
            "09-llvm.ll",
            "10-llvm-O3.ll",
        ][: len(names)]
    )
    assert "graph.fused" in (dump / "07-fuse.mlir").read_text()
    assert "graph.fused" not in (dump / "06-pack-weights.mlir").read_text()
    assert "loop.for" in (dump / "08-loops.mlir").read_text() and "define" in (dump / "09-llvm.ll").read_text()
    assert cli("compile", f"{tmp_path}/f.py:factory", "-o", str(tmp_path / "x.tsm"), "--disable", "fusion") == 1
    assert "disable: 'fusion' is not a pass" in capsys.readouterr().err
