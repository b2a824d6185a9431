"""Artifact folders: round trip, externalized constants, atomic overwrite and every corruption error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.errors import TensoriumError
from tensorium.frontend.tracer.tensor import Tensor
from tensorium.runtime.artifact import FORMAT_VERSION, ArtifactError, flatten_tree, read_artifact, unflatten_tree

RNG = np.random.default_rng(2)
BIG = RNG.standard_normal((16, 8)).astype(np.float32)  # 128 elements: stored in constants/
SMALL = np.arange(8, dtype=np.float32)  # 8 elements: stays inline


def model(x: Tensor) -> Any:
    h = x @ BIG + SMALL
    return {"h": nn.relu(h), "stats": (h.max(axis=-1), h.argmax(axis=-1))}


def reference(x: np.ndarray) -> Any:
    h = x @ BIG + SMALL
    return {"h": np.maximum(h, 0), "stats": (h.max(axis=-1), h.argmax(axis=-1))}


X = RNG.standard_normal((3, 16)).astype(np.float32)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    cm = tm.compile(model, target="interp")
    cm(X)
    return cm.save(tmp_path / "model.tsm")


def test_round_trip(saved: Path) -> None:
    loaded = tm.load(saved)
    got, want = loaded(X), reference(X)
    np.testing.assert_allclose(got["h"], want["h"], rtol=1e-5)
    np.testing.assert_allclose(got["stats"][0], want["stats"][0], rtol=1e-5)
    np.testing.assert_array_equal(got["stats"][1], want["stats"][1])
    assert isinstance(got["stats"], tuple)
    np.testing.assert_allclose(loaded(x=X)["h"], want["h"], rtol=1e-5)


def test_layout_and_metadata(saved: Path) -> None:
    assert sorted(p.name for p in saved.iterdir()) == ["constants", "metadata.json", "model.mlir"]
    assert [p.name for p in (saved / "constants").iterdir()] == ["const0.npy"]
    np.testing.assert_array_equal(np.load(saved / "constants" / "const0.npy", allow_pickle=False), BIG)
    meta = json.loads((saved / "metadata.json").read_text())
    assert meta["format"] == "tensorium-artifact"
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["tensorium_version"] == tm.__version__
    assert meta["target"] == "interp"
    assert meta["pipeline"] == "canonicalize,fold-batch-norm,cse,fold,dce"
    assert meta["inputs"] == [{"name": "x", "type": "tensor<3x16xf32>"}]
    assert meta["outputs"] == [
        {"name": "output0", "type": "tensor<3x8xf32>"},
        {"name": "output1", "type": "tensor<3xf32>"},
        {"name": "output2", "type": "tensor<3xi64>"},
    ]
    assert meta["constants"] == [
        {"name": "const0", "file": "constants/const0.npy", "shape": [16, 8], "dtype": "float32"}
    ]
    assert meta["output_tree"]["keys"] == ["h", "stats"]
    assert meta["source"]["framework"] == "tensorium.trace"
    assert meta["created"].endswith("Z")
    text = (saved / "model.mlir").read_text()
    assert "%const0: tensor<16x8xf32>" in text
    assert 'dense<"0x' not in text
    assert "dense<[0.0, 1.0, 2.0" in text


def test_loaded_model_checks_inputs(saved: Path) -> None:
    loaded = tm.load(saved)
    with pytest.raises(TensoriumError, match="the model takes 1 inputs, got 2 positional arguments"):
        loaded(X, X)
    with pytest.raises(TensoriumError, match=r"input 'x': expected dtype float32 \(tensor<3x16xf32>\), got float64"):
        loaded(X.astype(np.float64))
    with pytest.raises(TensoriumError, match=r"input 'x': expected rank 2 \(tensor<3x16xf32>\), got shape \[16\]"):
        loaded(X[0])
    with pytest.raises(TensoriumError, match="input 'x' given twice"):
        loaded(X, x=X)


def test_overwrite_an_artifact_and_refuse_anything_else(saved: Path, tmp_path: Path) -> None:
    cm = tm.compile(lambda x: x + 1.0)
    cm(X)
    cm.save(saved)
    assert json.loads((saved / "metadata.json").read_text())["outputs"] == [
        {"name": "output0", "type": "tensor<3x16xf32>"}
    ]
    assert not (saved / "constants" / "const0.npy").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    other = tmp_path / "data"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(ArtifactError, match="data: refusing to overwrite an existing folder that is not a Tensorium"):
        cm.save(other)
    assert (other / "keep.txt").read_text() == "mine"
    file = tmp_path / "file.tsm"
    file.write_text("x")
    with pytest.raises(ArtifactError, match=r"file\.tsm: refusing to overwrite an existing file"):
        cm.save(file)


def _edit_meta(path: Path, **changes: Any) -> None:
    meta = json.loads((path / "metadata.json").read_text())
    meta.update(changes)
    (path / "metadata.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda p: (p / "metadata.json").unlink(), r"metadata.json: missing \(not a Tensorium artifact\?\)"),
        (lambda p: (p / "metadata.json").write_text("{"), "metadata.json: not valid JSON"),
        (lambda p: _edit_meta(p, format="zip"), "metadata.json: not a Tensorium artifact"),
        (lambda p: _edit_meta(p, format_version=99), "metadata.json: artifact format version 99 is not supported"),
        (lambda p: _edit_meta(p, inputs="x"), "metadata.json: field 'inputs' is missing or malformed"),
        (lambda p: _edit_meta(p, inputs=[{"name": "x"}]), "metadata.json: malformed entry in 'inputs'"),
        (
            lambda p: _edit_meta(p, inputs=[{"name": "x", "type": "tensor<3x16xf33>"}]),
            "metadata.json: bad type in 'inputs' entry 'x'",
        ),
        (
            lambda p: _edit_meta(p, inputs=[{"name": "x", "type": "tensor<2x16xf32>"}]),
            "model.mlir: input 'x' is tensor<3x16xf32> but metadata.json says tensor<2x16xf32>",
        ),
        (lambda p: _edit_meta(p, outputs=[]), "model.mlir: @main results do not match the outputs in metadata.json"),
        (lambda p: _edit_meta(p, output_tree={"type": "set"}), "metadata.json: malformed output tree"),
        (
            lambda p: _edit_meta(p, output_tree={"type": "leaf"}),
            "metadata.json: the output tree has 1 leaves for 3 outputs",
        ),
        (lambda p: _edit_meta(p, target=3), "metadata.json: field 'target' is missing or malformed"),
        (lambda p: _edit_meta(p, target="cuda:sm_10"), "target 'cuda:sm_10': unsupported CUDA architecture"),
        (lambda p: (p / "model.mlir").unlink(), "model.mlir: missing"),
        (
            lambda p: (p / "model.mlir").write_text("module {\n  func.func @main( {\n}"),
            r"model.mlir: invalid IR:\n.*model.mlir:2:",
        ),
        (
            lambda p: (p / "model.mlir").write_text("func.func @f() {\n  func.return\n}\n"),
            "model.mlir: the module has no @main",
        ),
        (lambda p: (p / "constants" / "const0.npy").unlink(), "const0.npy: missing constant 'const0'"),
        (lambda p: (p / "constants" / "const0.npy").write_bytes(b"junk"), "const0.npy: not a readable .npy file"),
        (
            lambda p: np.save(p / "constants" / "const0.npy", np.zeros((8, 16), np.float32)),
            r"const0.npy: constant 'const0' has shape \[8, 16\] and dtype float32, but the model expects "
            r"tensor<16x8xf32>",
        ),
        (
            lambda p: np.save(p / "constants" / "const0.npy", np.zeros((16, 8), np.float64)),
            "const0.npy: constant 'const0' has shape .16, 8. and dtype float64",
        ),
        (
            lambda p: np.save(p / "constants" / "const0.npy", np.array([{"a": 1}], dtype=object)),
            "const0.npy: not a readable .npy file",
        ),
        (lambda p: _edit_meta(p, constants=[]), "metadata.json: lists 0 constants but @main takes 1 arguments beyond"),
        (
            lambda p: _edit_meta(p, constants=[{"name": "c", "file": "../../etc/passwd"}]),
            "metadata.json: constant 'c' points outside the artifact",
        ),
    ],
)
def test_corrupt_artifacts_name_the_file(saved: Path, corrupt: Any, message: str) -> None:
    corrupt(saved)
    with pytest.raises(TensoriumError, match=message):
        tm.load(saved)


def test_missing_folder() -> None:
    with pytest.raises(ArtifactError, match=r"nowhere\.tsm: no such artifact folder"):
        read_artifact("nowhere.tsm")


@pytest.mark.parametrize(
    "value",
    [1, (1, 2), [1, (2, None)], {"a": 1, "b": [2, 3]}, {0: (1,)}, (), None],
)
def test_tree_round_trip(value: Any) -> None:
    leaves, tree = flatten_tree(value)
    assert json.loads(json.dumps(tree)) == tree
    assert unflatten_tree(tree, leaves) == value


def test_flat_outputs_without_a_tree() -> None:
    assert unflatten_tree(None, [1]) == 1
    assert unflatten_tree(None, [1, 2]) == (1, 2)


def test_weights_and_kernel_buffers_start_on_cache_lines(tmp_path: Path) -> None:
    """numpy's large arrays start 16 bytes past a page: packed weights there made every AVX-512 load of the
    GEMM's panels straddle two cache lines (a 768 x 3072 GEMM: 118 against 150 GFLOP/s on one thread). The
    weights a compile binds, those a loaded artifact reads and the arrays the CPU runtime allocates start on a
    64-byte boundary."""
    weight = RNG.standard_normal((256, 160)).astype(np.float32)  # past malloc's mmap threshold

    def linear(x: Tensor) -> Any:
        return x @ weight

    x = RNG.standard_normal((5, 256)).astype(np.float32)
    compiled = tm.compile(linear, cache=False)
    np.testing.assert_allclose(compiled(x), x @ weight, rtol=1e-5, atol=1e-5)
    artifact = compiled.artifact
    assert artifact is not None and artifact.params
    assert all(a.ctypes.data % 64 == 0 for _, a in artifact.params)
    out = artifact.run([x])[0]
    assert out.ctypes.data % 64 == 0
    loaded = read_artifact(compiled.save(tmp_path / "linear.tsm"))
    assert loaded.params and all(a.ctypes.data % 64 == 0 for _, a in loaded.params)


def test_aligned_copies_only_what_is_not_aligned() -> None:
    from tensorium.ir.storage import aligned, aligned_empty

    fresh = aligned_empty((3, 5), np.float64)
    assert fresh.shape == (3, 5) and fresh.dtype == np.float64 and fresh.ctypes.data % 64 == 0
    assert aligned(fresh) is fresh
    raw = np.zeros(100, np.uint8)
    offset = (16 - raw.ctypes.data) % 64
    shifted = raw[offset : offset + 64].view(np.float32)
    copy = aligned(shifted)
    assert copy is not shifted and copy.ctypes.data % 64 == 0
    np.testing.assert_array_equal(copy, shifted)
    assert aligned_empty(0, np.float32).shape == (0,)
