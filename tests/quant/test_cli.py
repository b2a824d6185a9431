"""``tensorium compile MODEL --quantize w4g32``: the artifact's IR holds the k-bit matmul."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tensorium.cli.model import add_model_commands
from tensorium.errors import PassError

FACTORY = """
import numpy as np
from tensorium import nn

W = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)


def factory():
    return (lambda x: nn.relu(x @ W)), (np.ones((1, 64), np.float32),)
"""


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tensorium")
    add_model_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


def test_compile_with_quantize(tmp_path: Path) -> None:
    factory = tmp_path / "model.py"
    factory.write_text(FACTORY)
    out = tmp_path / "out"
    assert cli("compile", f"{factory}:factory", "-t", "interp", "-o", str(out), "--quantize", "w4g32") == 0
    ir = (out / "model.mlir").read_text()
    assert "quant.matmul" in ir and "!quant<u4:f32, per_group(axis=1, size=32)>" in ir


def test_bad_spec_is_named(tmp_path: Path) -> None:
    with pytest.raises(PassError, match="quantize: bad spec 'int4'"):
        cli("compile", "x.onnx", "-o", str(tmp_path / "o"), "--quantize", "int4")
