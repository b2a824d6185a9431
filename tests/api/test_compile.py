"""tensorium.compile on traced functions and ONNX files: guards, dynamic dims, targets, the cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.errors import PassError, TensoriumError
from tensorium.frontend.tracer.tensor import Tensor
from tensorium.runtime import cache

RNG = np.random.default_rng(1)
W = RNG.standard_normal((4, 3)).astype(np.float32)


def mlp(x: Tensor) -> Tensor:
    return nn.relu(x @ W + 1.0)


def x_of(n: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal((n, 4)).astype(dtype)


def test_decorator_without_and_with_arguments() -> None:
    @tm.compile
    def f(x: Tensor) -> Tensor:
        return x * 2

    @tm.compile(passes="cse")
    def g(x: Tensor) -> Tensor:
        return x + x

    x = x_of(2)
    np.testing.assert_array_equal(f(x), x * 2)
    np.testing.assert_array_equal(g(x), x + x)
    assert isinstance(f, tm.CompiledModel)
    assert g.pipeline == f"cse,{tm.api.TARGET_PASSES['cpu']}"  # the CPU target appends its own passes
    assert tm.compile(f.model, target="interp", passes="cse").pipeline == "cse"


def test_numpy_in_numpy_out_with_pytree() -> None:
    cm = tm.compile(lambda x, y: {"s": x + y, "p": (x * y, [x - y])})
    x, y = x_of(2), x_of(2)
    out = cm(x, y=y)
    assert set(out) == {"s", "p"}
    assert isinstance(out["p"], tuple) and isinstance(out["p"][1], list)
    np.testing.assert_allclose(out["s"], x + y)
    np.testing.assert_allclose(out["p"][1][0], x - y)


def test_guards_recompile_on_new_shape_or_dtype_only() -> None:
    cm = tm.compile(mlp)
    cm(x_of(2))
    cm(x_of(2))
    assert cm.cache_info().imports == 1
    np.testing.assert_allclose(cm(x_of(3)).shape, (3, 3))
    assert cm.cache_info().imports == 2
    cm(x_of(3, np.float64))
    info = cm.cache_info()
    assert (info.imports, info.compiles, info.specializations) == (3, 3, 3)
    cm(x_of(2))
    assert cm.cache_info().imports == 3


def test_dynamic_dims_do_not_recompile() -> None:
    cm = tm.compile(mlp, dynamic={"x": {0: "batch"}})
    for n in (1, 2, 5, 0):
        x = x_of(n)
        np.testing.assert_allclose(cm(x), np.maximum(x @ W + 1, 0), rtol=1e-5)
    assert cm.cache_info().imports == 1
    assert "tensor<[batch]x4xf32>" in tm.print_module(cm.module)


def test_a_dynamic_name_the_model_does_not_take_is_an_error_not_ignored() -> None:
    cm = tm.compile(mlp, dynamic={"input": {0: "batch"}})  # mlp's argument is x
    with pytest.raises(TensoriumError, match=r"dynamic= names 'input', which the model does not take .*inputs: x"):
        cm(x_of(2))
    assert cm.cache_info().imports == 0  # refused before anything was compiled

    torch = pytest.importorskip("torch", reason="the PyTorch path needs torch")

    class WithOptional(torch.nn.Module):
        def forward(self, x: Any, mask: Any = None) -> Any:
            return x * 2 if mask is None else x * mask

    linear = tm.compile(torch.nn.Linear(4, 4).eval(), dynamic={"x": {0: "batch"}})  # Linear's input is "input"
    with pytest.raises(TensoriumError, match=r"dynamic= names 'x', which the model does not take .*inputs: input"):
        linear(torch.ones(2, 4))
    cm = tm.compile(WithOptional().eval(), dynamic={"x": {0: "batch"}, "mask": {0: "batch"}})
    np.testing.assert_allclose(cm(torch.ones(3, 4)).numpy(), np.full((3, 4), 2.0))  # mask not passed: fine


def test_static_scalar_arguments_are_part_of_the_guard() -> None:
    cm = tm.compile(lambda x, k: x * k)
    x = x_of(2)
    np.testing.assert_allclose(cm(x, 2.0), x * 2)
    np.testing.assert_allclose(cm(x, 2.0), x * 2)
    np.testing.assert_allclose(cm(x, 3.0), x * 3)
    assert cm.cache_info().imports == 2


def test_module_is_the_last_compiled_ir() -> None:
    cm = tm.compile(lambda x: (x + 0.0) * 1.0)
    with pytest.raises(TensoriumError, match="nothing is compiled yet: call the model once first"):
        cm.module  # noqa: B018
    cm(x_of(2))
    text = tm.print_module(cm.module)
    assert "graph.mul" not in text and "graph.add" not in text  # canonicalize removed x + 0 and x * 1


def test_passes_override_the_pipeline() -> None:
    cm = tm.compile(lambda x: (x + 0.0) * 1.0, passes="cse")
    cm(x_of(2))
    assert "graph.mul" in tm.print_module(cm.module)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"target": "cuda:sm_10"}, TensoriumError, "target 'cuda:sm_10': unsupported CUDA architecture"),
        ({"target": "tpu"}, TensoriumError, "unknown target 'tpu'; use 'cpu'"),
        ({"passes": "cse,nope"}, PassError, "nope"),
        ({"params": "weights"}, TensoriumError, "params must be 'constants' or 'inputs', got 'weights'"),
        ({"dynamic": {"x": [0]}}, TensoriumError, "dynamic= must map argument names to {axis: dim name}"),
        ({"dynamic": {"x": {0: "1bad"}}}, TensoriumError, "dynamic= dim name '1bad' is not an identifier"),
    ],
)
def test_bad_compile_options(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace("{", r"\{")):
        tm.compile(mlp, **kwargs)


def test_decorator_form_checks_the_target_too() -> None:
    with pytest.raises(TensoriumError, match="unsupported CUDA architecture"):

        @tm.compile(target="cuda:sm_10")
        def f(x: Tensor) -> Tensor:
            return x


def test_not_a_model() -> None:
    with pytest.raises(TensoriumError, match=r"cannot compile a int: give a torch\.nn\.Module, a function or an"):
        tm.compile(3)
    with pytest.raises(TensoriumError, match=r"model\.txt: expected a path to an \.onnx file"):
        tm.compile("model.txt")


# --- cache -------------------------------------------------------------------------------------------
def entries(folder: Path) -> list[Path]:
    """The compiled-model entries of a cache folder (not the kernel cache's ``kernels/`` beside them)."""
    if not folder.exists():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "kernels")


def test_memory_hit_in_a_fresh_compiled_model(isolated_cache: Path) -> None:
    tm.compile(mlp)(x_of(2))
    cm = tm.compile(mlp)
    cm(x_of(2))
    info = cm.cache_info()
    assert (info.memory_hits, info.disk_hits, info.compiles) == (1, 0, 0)
    assert len(entries(isolated_cache)) == 1


def test_disk_hit_after_the_memory_is_cleared(isolated_cache: Path) -> None:
    x = x_of(2)
    want = tm.compile(mlp)(x)
    cache.clear_memory()
    cm = tm.compile(mlp)
    np.testing.assert_array_equal(cm(x), want)
    info = cm.cache_info()
    assert (info.memory_hits, info.disk_hits, info.compiles) == (0, 1, 0)


def test_corrupt_entry_is_rebuilt_with_a_warning(isolated_cache: Path) -> None:
    x = x_of(2)
    want = tm.compile(mlp)(x)
    (entry,) = entries(isolated_cache)
    (entry / "metadata.json").write_text("{ not json")
    cache.clear_memory()
    cm = tm.compile(mlp)
    with pytest.warns(UserWarning, match="ignoring corrupt cache entry .*metadata.json: not valid JSON"):
        got = cm(x)
    np.testing.assert_array_equal(got, want)
    assert cm.cache_info().compiles == 1
    assert json.loads((entry / "metadata.json").read_text())["format"] == "tensorium-artifact"


def test_cache_false_writes_nothing(isolated_cache: Path) -> None:
    cm = tm.compile(mlp, cache=False)
    cm(x_of(2))
    assert entries(isolated_cache) == []
    assert tm.compile(mlp, cache=False).cache_info().memory_hits == 0


def test_cache_key_depends_on_target_pipeline_and_version(monkeypatch: pytest.MonkeyPatch) -> None:
    key = cache.cache_key("ir", ["x"], ["y"], None, "interp", "cse")
    assert len(key) == 64
    assert key == cache.cache_key("ir", ["x"], ["y"], None, "interp", "cse")
    assert key != cache.cache_key("ir", ["x"], ["y"], None, "cpu", "cse")
    assert key != cache.cache_key("ir", ["x"], ["y"], None, "interp", "dce")
    assert key != cache.cache_key("ir2", ["x"], ["y"], None, "interp", "cse")
    assert key != cache.cache_key("ir", ["x"], ["y"], {"type": "leaf"}, "interp", "cse")
    monkeypatch.setattr(cache, "build_id", lambda: "9.9.9+0")
    assert key != cache.cache_key("ir", ["x"], ["y"], None, "interp", "cse")


def test_build_id_changes_with_the_compiler_source(tmp_path: Path) -> None:
    """The compile cache's key holds a digest of the package's files, so an edited checkout (or a reinstall
    under the same version) does not reuse artifacts the old compiler built."""
    from tensorium.version import __version__, build_id, source_digest

    assert build_id().startswith(__version__ + "+")
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "lowering.py"
    module.write_text("x = 1\n")
    os.utime(module, ns=(1, 1))
    before = source_digest(tmp_path)
    assert source_digest(tmp_path) == before
    module.write_text("x = 2\n")
    os.utime(module, ns=(1, 1))
    assert source_digest(tmp_path) == before  # same size and time: only a real change of either counts
    os.utime(module, ns=(2, 2))
    assert source_digest(tmp_path) != before
    (tmp_path / "pkg" / "new.py").write_text("")
    assert source_digest(tmp_path) != before


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TENSORIUM_CACHE_DIR")
    assert cache.cache_dir() == tmp_path / "xdg" / "tensorium"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "tensorium"


def test_unwritable_cache_only_warns(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(blocker / "sub"))
    with (
        pytest.warns(UserWarning, match="could not write the compile cache entry"),
        pytest.warns(UserWarning, match="cannot write the kernel cache in .*; kernels are compiled without it"),
    ):
        out = tm.compile(mlp)(x_of(2))
    assert out.shape == (2, 3)


def test_no_temporary_folders_are_left_behind(isolated_cache: Path) -> None:
    tm.compile(mlp)(x_of(2))
    assert [p.name for p in isolated_cache.iterdir() if p.name.startswith(".")] == []
    assert os.listdir(isolated_cache)


# --- ONNX --------------------------------------------------------------------------------------------
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_compile_an_onnx_path() -> None:
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    path = EXAMPLES / "tiny_cnn.onnx"
    image = RNG.standard_normal((1, 1, 8, 8)).astype(np.float32)
    (want,) = ReferenceEvaluator(onnx.load(str(path))).run(None, {"image": image})
    cm = tm.compile(str(path))
    np.testing.assert_allclose(cm(image), want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(cm(image=image), want, rtol=1e-4, atol=1e-6)
    assert cm.cache_info().imports == 1
    with pytest.raises(TensoriumError, match="the model has no input 'x'; inputs are image"):
        cm(x=image)
    with pytest.raises(TensoriumError, match="missing input: image"):
        cm()
