"""HuggingFace models exported by torch.onnx compile through the ONNX frontend and match onnxruntime.

Tiny GPT-2 and BERT from their configs (random weights, no downloads), exported by the TorchScript
exporter (``dynamo=False``: the new exporter needs onnxscript) with a dynamic batch and sequence,
compiled for the CPU and run against onnxruntime on the same file (one shape each: every new shape
is a new compile, a few seconds for these models).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
transformers = pytest.importorskip("transformers")

import tensorium  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


class _HiddenStates(torch.nn.Module):
    """The model's last hidden state for (input_ids, attention_mask), as the exporter wants a tensor."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]


def _export(build: Callable[[], torch.nn.Module], path: Path) -> Path:
    torch.manual_seed(0)
    model = _HiddenStates(build()).eval()
    ids = torch.randint(0, 100, (2, 8))
    dims = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (ids, torch.ones_like(ids)),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["hidden"],
            dynamic_axes={"input_ids": dims, "attention_mask": dims, "hidden": dims},
            dynamo=False,
            opset_version=17,
        )
    return path


def _gpt2() -> torch.nn.Module:
    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=32, bos_token_id=0, eos_token_id=0
    )
    return transformers.GPT2Model(config)


def _bert() -> torch.nn.Module:
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=2,
        intermediate_size=128,
        vocab_size=100,
        max_position_embeddings=32,
    )
    return transformers.BertModel(config)


@pytest.mark.parametrize("build", [_gpt2, _bert], ids=["gpt2", "bert"])
def test_exported_huggingface_model_matches_onnxruntime(build: Callable[[], torch.nn.Module], tmp_path: Path) -> None:
    path = _export(build, tmp_path / "model.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    compiled = tensorium.compile(str(path))
    ids = np.random.default_rng(0).integers(0, 100, (2, 6)).astype(np.int64)
    mask = np.ones((2, 6), np.int64)
    mask[0, 4:] = 0  # padding at the end of the first row
    expected = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    out = compiled(ids, mask)
    got = np.asarray(out[0] if isinstance(out, (list, tuple)) else out)
    assert got.shape == expected.shape == (2, 6, 64)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_data_dependent_sizes_compile_and_match_onnxruntime(tmp_path: Path) -> None:
    """NonZero and Unique give outputs whose length the data decides; the compiled model sizes them at run time."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Unique", ["x"], ["u", "first", "inverse", "counts"], sorted=0),
    ]
    outputs = [("nz", TensorProto.INT64, [2, None]), ("u", TensorProto.FLOAT, [None])]
    outputs += [(name, TensorProto.INT64, [None]) for name in ("first", "inverse", "counts")]
    graph = helper.make_graph(
        nodes,
        "data_dependent",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info(*o) for o in outputs],
    )
    path = tmp_path / "data_dependent.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    compiled = tensorium.compile(str(path))
    for x in (np.array([[0, 2, 2, 0, 1], [3, 0, 1, 1, 5]], np.float32), np.zeros((2, 5), np.float32)):
        for expected, got in zip(session.run(None, {"x": x}), compiled(x)):
            np.testing.assert_array_equal(np.asarray(got), expected)
