"""f16 end to end on WebGPU: f16 storage and arithmetic with ``webgpu:shader-f16``, on lavapipe (wgpu-py) and
under Node on Dawn, against the interpreter; an adapter without the feature named by the JavaScript runtime; without
it in the target, f16 held packed in ``u32`` words and computed in f32."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.ir.core import Operation
from tensorium.ir.parser import parse_module
from tensorium.targets import parse_target

from .js_harness import require_dawn, run_node
from .models import reference

TEXT = """
module {
  func.func @main(%a: tensor<5x33xf16>, %b: tensor<33x7xf16>, %c: tensor<5x7xf16>)
      -> (tensor<5x7xf16>, tensor<5xf16>, tensor<5x33xf16>) {
    %0 = graph.matmul %a, %b : (tensor<5x33xf16>, tensor<33x7xf16>) -> tensor<5x7xf16>
    %1 = graph.add %0, %c : (tensor<5x7xf16>, tensor<5x7xf16>) -> tensor<5x7xf16>
    %2 = graph.reduce_sum %a {axes = [1]} : (tensor<5x33xf16>) -> tensor<5xf16>
    %3 = graph.softmax %a {axis = 1} : (tensor<5x33xf16>) -> tensor<5x33xf16>
    %4 = graph.tanh %3 : (tensor<5x33xf16>) -> tensor<5x33xf16>
    func.return %1, %2, %4 : tensor<5x7xf16>, tensor<5xf16>, tensor<5x33xf16>
  }
}"""
F16 = "webgpu:shader-f16"


def _module() -> Operation:
    return parse_module(TEXT)


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float16) for s in [(5, 33), (33, 7), (5, 7)]]


def _check(got: list[np.ndarray]) -> None:
    want = reference(_module(), _inputs())
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float16 and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_f16_without_the_feature_is_held_packed() -> None:
    """Without ``shader-f16`` f16 is stored two to a word and computed in f32 (test_webgpu_packed.py runs it)."""
    shaders = WebGPUExecutable.build(_module(), target=parse_target("webgpu")).shaders.values()
    assert not any(s.wgsl.startswith("enable f16;") for s in shaders)
    assert any("half_round(" in s.wgsl for s in shaders)


def test_f16_shaders_enable_f16_and_store_halves() -> None:
    shaders = WebGPUExecutable.build(_module(), target=parse_target(F16)).shaders.values()
    assert all(s.wgsl.startswith("enable f16;") for s in shaders)
    assert any("array<f16>" in s.wgsl for s in shaders)


@pytest.mark.usefixtures("gpu")
def test_f16_runs_on_lavapipe() -> None:
    from tensorium.backends.webgpu.device import _adapter

    if "shader-f16" not in _adapter().features:
        pytest.skip("the WebGPU adapter lacks shader-f16")
    _check(WebGPUExecutable.build(_module(), target=parse_target(F16)).run(_inputs()))


def test_f16_on_dawn_runs_or_names_the_missing_feature(tmp_path: Path) -> None:
    """SwiftShader under Dawn lacks shader-f16: the runtime says so; an adapter with it runs the model."""
    require_dawn()
    WebGPUExecutable.build(_module(), target=parse_target(F16)).to_files(tmp_path / "exe")
    done: subprocess.CompletedProcess[str] = run_node(tmp_path / "exe", _inputs(), tmp_path)
    if done.returncode != 0:
        assert "lacks the feature shader-f16" in done.stderr, done.stderr
        return
    _check([np.load(tmp_path / "out" / f"out{n}.npy") for n in range(3)])
