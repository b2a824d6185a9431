"""The compile / run / inspect subcommands, called in-process through argparse."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tensorium.cli.model import add_model_commands
from tensorium.errors import TensoriumError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cli(*argv: str) -> int:
    """Parse ``argv`` with only the model commands and run the chosen handler."""
    parser = argparse.ArgumentParser(prog="tensorium")
    add_model_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


TRACED_FACTORY = """
import numpy as np
from tensorium import nn

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def model(x):
    return {"probs": nn.softmax(x @ W, axis=-1), "top": (x @ W).argmax(axis=-1)}


def factory():
    return model, (np.ones((2, 4), np.float32),)


def floats():
    return (lambda x: nn.softmax(x @ W, axis=-1)), (np.ones((2, 4), np.float32),)


def broken():
    raise RuntimeError("no weights")


def wrong():
    return 3
"""


@pytest.fixture
def factory_file(tmp_path: Path) -> Path:
    path = tmp_path / "traced_model.py"
    path.write_text(TRACED_FACTORY)
    return path


def test_compile_run_inspect_a_traced_factory(
    factory_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.tsm"
    assert cli("compile", f"{factory_file}:factory", "-t", "interp", "-o", str(out)) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"[1/3] import: {factory_file}:factory ..."
    assert err[1].startswith("[1/3] import: done in ") and err[1].endswith(" s (tensorium.trace, 6 ops)")
    assert err[2] == "[2/3] passes: canonicalize,fold-batch-norm,cse,fold,dce ..."
    assert err[4] == f"[3/3] write: {out} ..."
    assert err[5].endswith(" s (1 inputs, 2 outputs)")
    x = np.array([[1, 0, 0, 0], [0, 1, 2, 3]], np.float32)
    np.save(tmp_path / "x.npy", x)
    assert cli("run", str(out), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path / "res")) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("output0: shape [2, 3], dtype float32, values [")
    assert printed[1] == "output1: shape [2], dtype int64, values [2, 2]"
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    logits = x @ w
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(np.load(tmp_path / "res" / "output0.npy"), probs / probs.sum(-1, keepdims=True), 1e-5)
    np.testing.assert_array_equal(np.load(tmp_path / "res" / "output1.npy"), [2, 2])
    assert cli("inspect", str(out)) == 0
    text = capsys.readouterr().out
    assert "inputs:\n  x: tensor<2x4xf32>\n" in text
    assert "outputs:\n  output0: tensor<2x3xf32>\n  output1: tensor<2xi64>\n" in text
    assert "  graph.matmul    1\n" in text and "  graph.softmax   1\n" in text
    assert "constants: 1 (48 B): 1 inline (48 B), 0 in files (0 B)" in text


@pytest.mark.parametrize("target", ["cuda:sm_90", "webgpu"])
def test_inspect_describes_a_gpu_executable(
    factory_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    out = tmp_path / "gpu.tsm"
    assert cli("compile", f"{factory_file}:floats", "-t", target, "-o", str(out)) == 0  # WebGPU has no i64
    capsys.readouterr()
    assert cli("inspect", str(out)) == 0  # it used to end with "no CPU executable in the artifact"
    text = capsys.readouterr().out
    kernels = re.search(rf"^kernels: (\d+) \(for {target}\)$", text, re.MULTILINE)
    assert kernels is not None and int(kernels.group(1)) >= 1
    assert "peak intermediate memory: " in text


def test_run_with_random_inputs_and_argn_names(factory_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.tsm"
    cli("compile", f"{factory_file}:factory", "-o", str(out))
    assert cli("run", str(out), "--random-inputs", "--seed", "3", "--output-dir", str(tmp_path / "r")) == 0
    probs = np.load(tmp_path / "r" / "output0.npy")
    np.testing.assert_allclose(probs.sum(-1), [1, 1], rtol=1e-6)
    np.save(tmp_path / "x.npy", np.zeros((2, 4), np.float32))
    assert cli("run", str(out), "--input", f"arg0={tmp_path / 'x.npy'}") == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compile", "model.bin", "-o", "{tmp}/o"], "MODEL must be an .onnx file or path.py:factory, got 'model.bin'"),
        (["compile", "missing.onnx", "-o", "{tmp}/o"], "missing.onnx: no such file"),
        (["compile", "{tmp}/nope.py:factory", "-o", "{tmp}/o"], "nope.py: no such file"),
        (["compile", "{factory}:absent", "-o", "{tmp}/o"], "has no function 'absent'"),
        (["compile", "{factory}:broken", "-o", "{tmp}/o"], "the factory failed: RuntimeError: no weights"),
        (["compile", "{factory}:wrong", "-o", "{tmp}/o"], r"must return \(model, example_inputs\), got int"),
        (["compile", "{factory}:factory", "-t", "cuda:sm_10", "-o", "{tmp}/o"], "unsupported CUDA architecture"),
        (["compile", "{factory}:factory", "--passes", "bogus", "-o", "{tmp}/o"], "bogus"),
        (["compile", "{factory}:factory", "-o", "{tmp}"], "refusing to overwrite an existing folder"),
        (["run", "{tmp}"], "metadata.json: missing"),
        (["inspect", "{tmp}/none"], "none: no such artifact folder"),
        (["run", "{art}"], r"missing input x \(give --input NAME=FILE.npy or --random-inputs\)"),
        (["run", "{art}", "--input", "y={tmp}/x.npy"], "the model has no input 'y'; its inputs are x"),
        (["run", "{art}", "--input", "x"], "--input expects NAME=FILE.npy, got 'x'"),
        (["run", "{art}", "--input", "x={tmp}/absent.npy"], "absent.npy: cannot read"),
        (["run", "{art}", "--input", "x={tmp}/bad.npy"], "bad.npy: not a .npy array file"),
        (["run", "{art}", "--input", "x={tmp}/x64.npy"], r"input 'x' \(.*x64.npy\): expected dtype float32"),
        (["run", "{art}", "--input", "x={tmp}/x.npy", "--input", "arg0={tmp}/x.npy"], "input 'x' is given twice"),
        (["run", "{art}", "--input", "x={tmp}/x3.npy"], r"input 'x': expected rank 2"),
    ],
)
def test_errors_are_one_clear_message(factory_file: Path, tmp_path: Path, argv: list[str], message: str) -> None:
    art = tmp_path / "art.tsm"
    cli("compile", f"{factory_file}:factory", "-o", str(art))
    np.save(tmp_path / "x.npy", np.zeros((2, 4), np.float32))
    np.save(tmp_path / "x64.npy", np.zeros((2, 4), np.float64))
    np.save(tmp_path / "x3.npy", np.zeros((2, 4, 1), np.float32))
    (tmp_path / "bad.npy").write_text("nope")
    filled = [a.format(tmp=tmp_path, factory=factory_file, art=art) for a in argv]
    with pytest.raises(TensoriumError, match=message):
        cli(*filled)


def test_compile_the_onnx_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    out = tmp_path / "cnn.tsm"
    assert cli("compile", str(EXAMPLES / "tiny_cnn.onnx"), "-o", str(out)) == 0
    assert "(onnx, " in capsys.readouterr().err
    image = np.random.default_rng(0).standard_normal((1, 1, 8, 8)).astype(np.float32)
    np.save(tmp_path / "image.npy", image)
    assert cli("run", str(out), "--input", f"image={tmp_path / 'image.npy'}", "--output-dir", str(tmp_path / "o")) == 0
    (want,) = ReferenceEvaluator(onnx.load(str(EXAMPLES / "tiny_cnn.onnx"))).run(None, {"image": image})
    np.testing.assert_allclose(np.load(tmp_path / "o" / "logits.npy"), want, rtol=1e-4, atol=1e-6)
    capsys.readouterr()
    assert cli("inspect", str(out)) == 0
    text = capsys.readouterr().out
    assert "  image: tensor<1x1x8x8xf32>" in text and "  logits: tensor<1x3xf32>" in text
    assert "graph.conv2d" in text and "graph.max_pool2d" in text
    assert "1 in files (4.0 KiB)" in text  # the 64x3 weight packed into one 16-column panel
    assert "views (no kernel, no copy): 2" in text and " from element 0 as tensor<1x64xf32>" in text
    assert " from element 0 as tensor<1x8x8x1xf32>" in text  # to NHWC with one channel: a view
    assert "  conv2d_relu_0 " in text  # the convolution (NHWC after the layout pass) and its activation
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["source"]["framework"] == "onnx"


def test_compile_the_torch_example(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import importlib.util

    out = tmp_path / "mlp.tsm"
    assert cli("compile", f"{EXAMPLES / 'torch_mlp.py'}:factory", "-t", "interp", "-o", str(out)) == 0
    spec = importlib.util.spec_from_file_location("torch_mlp_example", EXAMPLES / "torch_mlp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, _ = module.factory()
    x = torch.randn(2, 16)
    np.save(tmp_path / "x.npy", x.numpy())
    meta = json.loads((out / "metadata.json").read_text())
    (name,) = [i["name"] for i in meta["inputs"]]
    assert cli("run", str(out), "--input", f"{name}={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path / "o")) == 0
    (result,) = list((tmp_path / "o").iterdir())
    np.testing.assert_allclose(np.load(result), model(x).detach().numpy(), rtol=1e-4, atol=1e-6)
