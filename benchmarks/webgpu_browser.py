"""Tensorium's WebGPU runtime against onnxruntime-web in the same headless chromium, on the same ONNX models.

    python benchmarks/webgpu_browser.py                 # 30 timed runs per engine and model
    python benchmarks/webgpu_browser.py --runs 100 --json out.json

Needs the webgpu extra (wgpu-py, lavapipe), Debian's chromium, Node and ``npm ci`` in
tensorium/backends/webgpu/js (which installs playwright-core and onnxruntime-web 1.30.0). For each model
(an MLP 32x256 -> 512 -> 256 with ReLU and softmax; one 512x512x512 f32 GEMM; a MiniLM-sized encoder layer,
64 tokens of 384 with 12 heads and an FFN of 1536; examples/tiny_cnn.onnx; a ``transformers`` GPT-2 LM of 2
layers of 128 on 32 int64 token ids, exported by PyTorch; ``--model NAME`` picks) it runs
``tensorium compile MODEL.onnx -t webgpu -o site/NAME``, then one page in chromium (WebGPU on SwiftShader,
a CPU) times, on the same random input, Tensorium's runtime (``tensorium-webgpu.js``), onnxruntime-web's
``webgpu`` execution provider and its ``wasm`` one (one thread: the page is not cross-origin isolated), and
checks their outputs agree. The same artifact is also timed through wgpu-py on lavapipe. Times are the mean
of ``--runs`` runs after three warm-up runs, each run awaited to its outputs: a software adapter, noisy on a
shared machine; compare engines within one run of this script.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "webgpu"))

from js_harness import serve  # noqa: E402

from tensorium.backends.webgpu.site import JS_FOLDER  # noqa: E402
from tensorium.cli import main as cli  # noqa: E402
from tensorium.runtime.artifact import read_artifact  # noqa: E402

PAGE = """<!doctype html>
<meta charset="utf-8"><title>Tensorium vs onnxruntime-web</title>
<script type="module">
import * as ort from "./ort/ort.webgpu.min.mjs";
import { loadArtifact, randomInputs } from "./tensorium-webgpu.js";

const params = new URLSearchParams(location.search);
const name = params.get("model"), runs = Number(params.get("runs"));
async function time(run) {
  for (let n = 0; n < 3; n++) await run();
  const start = performance.now();
  let out;
  for (let n = 0; n < runs; n++) out = await run();
  return { ms: (performance.now() - start) / runs, out };
}
async function bench() {
  const model = await loadArtifact(`./${name}/`, navigator.gpu);
  const [x] = randomInputs(model, 3);
  const result = { model: name, runs, input: model.inputs[0].type };
  const mine = await time(() => model.run([x]));
  result.tensorium = mine.ms;
  const reference = mine.out[0];
  ort.env.wasm.wasmPaths = new URL("./ort/", location.href).href;
  ort.env.wasm.numThreads = 1;
  for (const provider of ["webgpu", "wasm"]) {
    const session = await ort.InferenceSession.create(`./${name}/model.onnx`, { executionProviders: [provider] });
    const dtype = model.inputs[0].dtype === "int64" ? "int64" : "float32";
    const feed = { [session.inputNames[0]]: new ort.Tensor(dtype, x, model.inputs[0].shape) };
    const theirs = await time(async () => (await session.run(feed))[session.outputNames[0]].getData());
    let diff = 0;
    for (let i = 0; i < reference.length; i++) diff = Math.max(diff, Math.abs(reference[i] - theirs.out[i]));
    result[`ort_${provider}`] = theirs.ms;
    result[`ort_${provider}_max_abs_diff`] = diff;
  }
  window.benchResult = result;
}
bench().catch((e) => { window.benchError = String(e.stack ?? e); });
</script>
"""


def mlp_onnx(path: Path) -> None:
    """An MLP 32x256 -> 512 -> 256 with ReLU and softmax, built with onnx.helper (seeded weights)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.normal(0, 0.05, (256, 512)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.normal(0, 0.05, (512,)).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.normal(0, 0.05, (512, 256)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.normal(0, 0.05, (256,)).astype(np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["o"]),
        helper.make_node("Add", ["o", "b2"], ["ob"]),
        helper.make_node("Softmax", ["ob"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 256])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what onnxruntime-web 1.30 reads (newer onnx writes 14)
    onnx.save(model, path)


def gemm_onnx(path: Path, n: int = 512) -> None:
    """One f32 GEMM ``x[n, n] @ w[n, n]`` (``w`` a seeded constant), built with onnx.helper."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(1).normal(0, 0.05, (n, n)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def encoder_onnx(path: Path, seq: int = 64, hidden: int = 384, heads: int = 12, ffn: int = 1536) -> None:
    """A MiniLM-sized post-norm transformer encoder layer on ``x[seq, hidden]`` (batch 1, no mask): Q/K/V
    projections, ``heads`` heads of scaled dot-product attention, the output projection, residual and
    LayerNormalization, an erf-GELU FFN of width ``ffn``, residual and LayerNormalization; seeded weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    head = hidden // heads
    inits = []

    def weight(name: str, shape: tuple[int, ...], scale: float = 0.05) -> str:
        inits.append(numpy_helper.from_array(rng.normal(0, scale, shape).astype(np.float32), name))
        return name

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def ln(prefix: str, x: str, out: str) -> list[onnx.NodeProto]:
        gamma = const(f"{prefix}_g", (1 + rng.normal(0, 0.05, hidden)).astype(np.float32))
        beta = const(f"{prefix}_b", rng.normal(0, 0.05, hidden).astype(np.float32))
        return [helper.make_node("LayerNormalization", [x, gamma, beta], [out], axis=-1, epsilon=1e-12)]

    split = const("split_shape", np.array([seq, heads, head], np.int64))
    merge = const("merge_shape", np.array([seq, hidden], np.int64))
    nodes = []
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", ["x", weight(f"w{p}", (hidden, hidden))], [f"{p}0"]),
            helper.make_node("Add", [f"{p}0", weight(f"b{p}", (hidden,))], [f"{p}1"]),
            helper.make_node("Reshape", [f"{p}1", split], [f"{p}2"]),
            helper.make_node("Transpose", [f"{p}2"], [f"{p}h"], perm=[1, 2, 0] if p == "k" else [1, 0, 2]),
        ]
    nodes += [
        helper.make_node("MatMul", ["qh", "kh"], ["s0"]),
        helper.make_node("Mul", ["s0", const("scale", np.array(head**-0.5, np.float32))], ["s1"]),
        helper.make_node("Softmax", ["s1"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vh"], ["c0"]),
        helper.make_node("Transpose", ["c0"], ["c1"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["c1", merge], ["c2"]),
        helper.make_node("MatMul", ["c2", weight("wo", (hidden, hidden))], ["o0"]),
        helper.make_node("Add", ["o0", weight("bo", (hidden,))], ["o1"]),
        helper.make_node("Add", ["o1", "x"], ["r1"]),
        *ln("ln1", "r1", "h1"),
        helper.make_node("MatMul", ["h1", weight("w1", (hidden, ffn))], ["f0"]),
        helper.make_node("Add", ["f0", weight("b1", (ffn,))], ["f1"]),
        helper.make_node("Div", ["f1", const("sqrt2", np.array(2**0.5, np.float32))], ["g0"]),
        helper.make_node("Erf", ["g0"], ["g1"]),
        helper.make_node("Add", ["g1", const("one", np.array(1.0, np.float32))], ["g2"]),
        helper.make_node("Mul", ["f1", "g2"], ["g3"]),
        helper.make_node("Mul", ["g3", const("half", np.array(0.5, np.float32))], ["g4"]),
        helper.make_node("MatMul", ["g4", weight("w2", (ffn, hidden))], ["f2"]),
        helper.make_node("Add", ["f2", weight("b2", (hidden,))], ["f3"]),
        helper.make_node("Add", ["f3", "h1"], ["r2"]),
        *ln("ln2", "r2", "y"),
    ]
    graph = helper.make_graph(
        nodes,
        "encoder_layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def gpt2_onnx(
    path: Path, layers: int = 2, width: int = 128, heads: int = 4, vocab: int = 1000, tokens: int = 32
) -> None:
    """A ``transformers`` GPT-2 LM (``layers`` blocks of ``width`` with ``heads`` heads, a vocabulary of ``vocab``;
    seeded weights) exported by PyTorch's TorchScript ONNX exporter for ``tokens`` int64 token ids, its logits the
    output: the embedding lookups take int64 ids, which Tensorium's WebGPU backend holds in i32 (needs torch and
    transformers)."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab, n_positions=64)
    model = transformers.GPT2LMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = model

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            positions = torch.arange(ids.shape[1]).unsqueeze(0)  # explicit: the exporter lacks aten::diff
            return self.lm(ids, position_ids=positions, attention_mask=torch.ones_like(ids)).logits

    ids = torch.zeros((1, tokens), dtype=torch.long)
    torch.onnx.export(Logits(), (ids,), str(path), dynamo=False, input_names=["input_ids"], output_names=["logits"])


MODELS = {"mlp": mlp_onnx, "gemm512": gemm_onnx, "encoder": encoder_onnx, "tiny_cnn": None, "gpt2": gpt2_onnx}
"""The models by name: built here, or (None) examples/NAME.onnx."""


def lavapipe_ms(site: Path, runs: int) -> float:
    """Mean time per run of the artifact at ``site`` through wgpu-py (lavapipe), after three warm-up runs."""
    artifact = read_artifact(site)
    t = artifact.inputs[0][1]
    rng = np.random.default_rng(3)
    shape = t.static_shape  # type: ignore[attr-defined]
    x: np.ndarray = (
        rng.integers(0, 10, shape, dtype=np.int64)  # token ids
        if str(t).endswith("i64>")
        else rng.standard_normal(shape).astype(np.float32)
    )
    for _ in range(3):
        artifact.run([x])
    start = time.perf_counter()
    for _ in range(runs):
        artifact.run([x])
    return (time.perf_counter() - start) / runs * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per engine and model (30)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--model", action="append", choices=sorted(MODELS), help="run only these models (repeatable; default all)"
    )
    parser.add_argument("--no-lavapipe", action="store_true", help="skip the wgpu-py (lavapipe) timing")
    args = parser.parse_args(argv)
    ort_dist = JS_FOLDER / "node_modules" / "onnxruntime-web" / "dist"
    if not ort_dist.is_dir():
        print(f"onnxruntime-web is not installed: npm ci in {JS_FOLDER}", file=sys.stderr)
        return 1
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        models = {}
        for name in args.model or list(MODELS):
            build = MODELS[name]
            models[name] = root / f"{name}.onnx" if build is not None else ROOT / "examples" / f"{name}.onnx"
            if build is not None:
                build(models[name])
        for name, path in models.items():
            site = root / "site" / name
            if cli(["compile", str(path), "-t", "webgpu", "-o", str(site)]) != 0:
                return 1
            (site / "model.onnx").write_bytes(path.read_bytes())
        (root / "site" / "ort").symlink_to(ort_dist)
        (root / "site" / "tensorium-webgpu.js").write_bytes((JS_FOLDER / "tensorium-webgpu.js").read_bytes())
        (root / "site" / "bench.html").write_text(PAGE)
        env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
        with serve(root / "site") as url:
            for name in models:
                done = subprocess.run(
                    ["node", str(JS_FOLDER / "bench-chromium.mjs"), f"{url}bench.html?model={name}&runs={args.runs}"],
                    cwd=JS_FOLDER,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
                if done.returncode != 0:
                    print(f"{name}: the page failed: {done.stderr.strip()}", file=sys.stderr)
                    return 1
                result = json.loads(done.stdout)
                lavapipe = math.nan if args.no_lavapipe else lavapipe_ms(root / "site" / name, args.runs)
                result["tensorium_lavapipe_wgpu_py"] = lavapipe
                results.append(result)
    header = ("model", "input", "tensorium chromium", "ort-web webgpu", "ort-web wasm", "lavapipe")
    print(f"{header[0]:10} {header[1]:22} {header[2]:>19} {header[3]:>15} {header[4]:>13} {header[5]:>9}")
    for r in results:
        print(
            f"{r['model']:10} {r['input']:22} {r['tensorium']:16.2f} ms {r['ort_webgpu']:12.2f} ms "
            f"{r['ort_wasm']:10.2f} ms {r['tensorium_lavapipe_wgpu_py']:6.2f} ms"
            f"   (max |diff| webgpu {r['ort_webgpu_max_abs_diff']:.1e}, wasm {r['ort_wasm_max_abs_diff']:.1e})"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
