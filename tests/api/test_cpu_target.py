"""compile(target="cpu") end to end: traced functions, torch, ONNX; artifacts with object code; load errors."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.llvm import jit
from tensorium.backends.llvm.emitter import LLVMEmitter
from tensorium.cli.model import add_model_commands
from tensorium.errors import TensoriumError
from tensorium.lowering import LoweringError
from tensorium.runtime import cache
from tensorium.runtime.artifact import ArtifactError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RNG = np.random.default_rng(3)
W1 = RNG.standard_normal((16, 32)).astype(np.float32)  # 512 elements: a bound parameter, not a kernel constant
B1 = np.linspace(-1, 1, 32, dtype=np.float32)
W2 = RNG.standard_normal((32, 10)).astype(np.float32)


def head(x: Any) -> Any:
    h = nn.gelu(x @ W1 + B1)
    return {"probs": nn.softmax(h @ W2, axis=-1), "top": (h @ W2).argmax(axis=-1)}


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def close(got: Any, want: Any) -> None:
    np.testing.assert_allclose(got["probs"], want["probs"], rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(got["top"], want["top"])


def _generated_once(calls: list[str]) -> bool:
    """One emission of LLVM modules, then their optimization: one optimize call per kernel, none for kernels
    whose optimized code the kernel cache already holds (the same kernels compiled earlier in the process)."""
    return calls[:1] == ["emit"] and calls.count("emit") == 1


@pytest.fixture
def codegen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Counts LLVM code generation from IR: emitting the LLVM modules, then optimizing each (on threads).
    The kernel cache is off, so a rebuilt model optimizes its kernels again."""
    monkeypatch.setenv("TENSORIUM_KERNEL_CACHE", "0")
    calls: list[str] = []
    emit, optimize = LLVMEmitter.emit_modules, jit.optimize

    def counted_emit(self: LLVMEmitter, module: Any) -> Any:
        calls.append("emit")
        return emit(self, module)

    def counted_optimize(*args: Any, **kwargs: Any) -> None:
        calls.append("optimize")
        optimize(*args, **kwargs)

    monkeypatch.setattr(LLVMEmitter, "emit_modules", counted_emit)
    monkeypatch.setattr(jit, "optimize", counted_optimize)
    yield calls


@pytest.fixture
def compiled(codegen: list[str]) -> Any:
    cm = tm.compile(head, dynamic={"x": {0: "batch"}})
    for batch in (1, 4, 0):
        x = rand(batch, 16)
        close(cm(x), tm.compile(head, target="interp")(x))
    return cm


def test_cpu_is_the_default_and_matches_the_interpreter(compiled: Any, codegen: list[str]) -> None:
    assert compiled.artifact.target == tm.targets.host_target()
    assert compiled.cache_info().imports == 1 and _generated_once(codegen)
    assert [n for n, _ in compiled.artifact.params] == ["const0", "const1"]
    assert all(a.size <= 64 for _, a in compiled.artifact.executable.constants)


def test_artifact_round_trip_loads_the_object_code_without_codegen(
    compiled: Any, codegen: list[str], tmp_path: Path
) -> None:
    saved = compiled.save(tmp_path / "head.tsm")
    assert sorted(p.name for p in (saved / "cpu").iterdir()) == ["kernels.mlir", "kernels.o", "plan.json"]
    assert (saved / "cpu" / "kernels.o").read_bytes() == compiled.artifact.executable.kernels.object_code
    codegen.clear()
    loaded = tm.load(saved)
    x = rand(3, 16)
    close(loaded(x), head_reference(x))
    assert codegen == []


def head_reference(x: np.ndarray) -> Any:
    return tm.compile(head, target="interp", cache=False)(x)


def test_disk_cache_hit_needs_no_codegen(compiled: Any, codegen: list[str]) -> None:
    cache.clear_memory()
    codegen.clear()
    again = tm.compile(head, dynamic={"x": {0: "batch"}})
    x = rand(2, 16)
    close(again(x), head_reference(x))
    assert again.cache_info().disk_hits == 1 and codegen == []


def test_a_cache_entry_for_another_cpu_is_rebuilt(compiled: Any, isolated_cache: Path, codegen: list[str]) -> None:
    (entry,) = [p for p in isolated_cache.iterdir() if (p / "cpu").is_dir()]
    plan = entry / "cpu" / "plan.json"
    meta = json.loads(plan.read_text())
    meta["target"]["features"].append("quantum-fma")
    plan.write_text(json.dumps(meta))
    cache.clear_memory()
    codegen.clear()
    with pytest.warns(UserWarning, match="ignoring corrupt cache entry .*lacks: quantum-fma"):
        again = tm.compile(head, dynamic={"x": {0: "batch"}})
        again(rand(2, 16))
    assert again.cache_info().compiles == 1 and _generated_once(codegen)


def _edit_plan(folder: Path, key: str, value: Any) -> None:
    plan = folder / "cpu" / "plan.json"
    meta = json.loads(plan.read_text())
    meta[key] = value
    plan.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: (p / "cpu" / "kernels.o").write_bytes(b"\x7fELF garbage"), r"kernels.o: corrupt object code"),
        (lambda p: shutil.rmtree(p / "cpu"), r"cpu/plan.json: missing"),
        (lambda p: _edit_plan(p, "tensorium_version", "9.9"), r"compiled by Tensorium 9.9, but this is Tensorium"),
        (
            lambda p: _edit_plan(p, "target", {"kind": "cpu", "triple": "x", "cpu": "y", "features": []}),
            r"plan.json was compiled for x, but this host is",
        ),
        (lambda p: _edit_plan(p, "inputs", [1, 0, 2]), r"plan.json: the plan's inputs or outputs do not match @main"),
    ],
)
def test_broken_cpu_artifacts_give_clear_errors(compiled: Any, tmp_path: Path, damage: Any, message: str) -> None:
    saved = compiled.save(tmp_path / "head.tsm")
    damage(saved)
    with pytest.raises(ArtifactError, match=message):
        tm.load(saved)


def test_interp_target_still_works_and_writes_no_object_code(tmp_path: Path) -> None:
    cm = tm.compile(head, target="interp")
    x = rand(2, 16)
    close(cm(x), tm.compile(head, cache=False)(x))
    assert cm.artifact.executable is None
    assert not (cm.save(tmp_path / "i.tsm") / "cpu").exists()
    with pytest.raises(TensoriumError, match="target 'cuda:sm_10': unsupported CUDA architecture"):
        tm.compile(head, target="cuda:sm_10")


def test_lowering_errors_name_the_users_line() -> None:
    cm = tm.compile(lambda x: (x @ W1)[:2], dynamic={"x": {0: "n"}})
    with pytest.raises(LoweringError, match=r"test_cpu_target.py:\d+:\d+: cannot lower 'graph.slice' to loops"):
        cm(rand(4, 16))


def test_onnx_cnn_on_the_cpu() -> None:
    pytest.importorskip("onnx")
    x = RNG.random((1, 1, 8, 8)).astype(np.float32)
    got = tm.compile(EXAMPLES / "tiny_cnn.onnx")(x)
    want = tm.compile(EXAMPLES / "tiny_cnn.onnx", target="interp")(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_torch_mlp_on_the_cpu_with_params_as_inputs() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorium.frontend.pytorch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()
    cm = tm.compile(model, params="inputs", dynamic={"input": {0: "batch"}})
    for batch in (2, 5):
        x = torch.randn(batch, 16)
        got = cm(x)
        assert isinstance(got, torch.Tensor) and isinstance(cm.artifact.executable, CpuExecutable)
        np.testing.assert_allclose(got.numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-6)
    with torch.no_grad():
        model[0].bias.add_(1.0)  # parameters are inputs: the update is seen without recompiling
    x = torch.randn(3, 16)
    np.testing.assert_allclose(cm(x).numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-6)
    assert cm.cache_info().compiles == 1


# --- the command line ------------------------------------------------------------------------------
def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tensorium")
    add_model_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


FACTORY = """
import numpy as np
from tensorium import nn

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def factory():
    return (lambda x: nn.softmax(nn.relu(x @ W) - 1.0, axis=-1)), (np.ones((2, 4), np.float32),)
"""


def test_cli_compile_inspect_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], codegen: list[str]) -> None:
    (tmp_path / "f.py").write_text(FACTORY)
    out = tmp_path / "m.tsm"
    assert cli("compile", f"{tmp_path}/f.py:factory", "-o", str(out)) == 0
    err = capsys.readouterr().err
    assert "[3/4] codegen: done in" in err and "(2 kernels, " in err
    assert cli("inspect", str(out)) == 0
    text = capsys.readouterr().out
    assert "  target: cpu (" in text
    assert "kernels: 2 (" in text and "  matmul_packed_relu_sub_0  (#0, #1, #2) -> (#3)  [3 fused ops: " in text
    assert "peak intermediate memory: 24 B (1 intermediate buffers in 1 slots)\n" in text
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.save(tmp_path / "x.npy", x)
    codegen.clear()
    assert cli("run", str(out), "--input", f"x={tmp_path}/x.npy", "--output-dir", str(tmp_path / "o")) == 0
    assert codegen == []
    h = np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10), 0) - 1.0
    want = np.exp(h - h.max(-1, keepdims=True))
    np.testing.assert_allclose(np.load(tmp_path / "o" / "output0.npy"), want / want.sum(-1, keepdims=True), rtol=1e-5)


def test_cli_run_refuses_a_mismatched_artifact(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text(FACTORY)
    out = tmp_path / "m.tsm"
    cli("compile", f"{tmp_path}/f.py:factory", "-t", "cpu", "-o", str(out))
    _edit_plan(out, "tensorium_version", "0.0.0")
    with pytest.raises(ArtifactError, match=r"plan.json: compiled by Tensorium 0.0.0, but this is Tensorium"):
        cli("run", str(out), "--random-inputs")


def test_compiling_never_prints_large_weights_as_text(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Large constants are hashed for the cache key, cloned (not printed and parsed) for the executable and
    written as .npy files; printing megabytes of hex made compiles of real models take seconds."""
    from tensorium.ir import printer

    weight = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32)
    original = printer.format_dense

    def guarded(attr: Any, digest: bool = False) -> str:
        assert digest or attr.array.size <= printer.DENSE_HEX_THRESHOLD or attr.is_splat, "printed a large constant"
        return original(attr, digest)

    monkeypatch.setattr(printer, "format_dense", guarded)
    model = tm.compile(lambda x: x @ weight, cache=False)
    x = np.ones((3, 300), np.float32)
    np.testing.assert_allclose(model(x), x @ weight, rtol=1e-4)
    model.save(tmp_path / "m.tsm")
    np.testing.assert_allclose(tm.load(tmp_path / "m.tsm")(x), x @ weight, rtol=1e-4)
