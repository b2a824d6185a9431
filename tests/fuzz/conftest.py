"""Broken passes for the fuzzer's own tests, registered only for the test that asks for one.

Each fixture puts a pass with a known bug into the pass registry under a ``test-`` name (monkeypatch removes
it afterwards, so other tests never see it in ``pass_names()``) and returns that name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tensorium.ir.core import Operation
from tensorium.ir.types import TensorType, f32
from tensorium.passes import base
from tensorium.passes.base import Pass

SIMPLE = """
module {
  func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = graph.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.tanh %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %1 : tensor<2x3xf32>
  }
}
"""


def _register(monkeypatch: pytest.MonkeyPatch, name: str, body: Callable[[Operation], None]) -> str:
    @dataclass(frozen=True)
    class Broken(Pass):
        def run(self, module: Operation) -> None:
            body(module)

    Broken.name = name  # type: ignore[misc]
    monkeypatch.setitem(base._PASSES, name, Broken)
    return name


def _drop_adds(module: Operation) -> None:
    """The bug: ``add(x, y)`` is replaced by ``x`` whatever ``y`` is."""
    for op in list(module.walk()):
        if op.name == "graph.add" and op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()


def _crash_on_tanh(module: Operation) -> None:
    if any(op.name == "graph.tanh" for op in module.walk()):
        raise IndexError("list index out of range")


def _retype_tanh(module: Operation) -> None:
    for op in module.walk():
        if op.name == "graph.tanh":
            op.results[0].type = TensorType((7,), f32)


_counter = [0]


def _stamp(module: Operation) -> None:
    """Names the first value differently on every run (non-deterministic output IR)."""
    _counter[0] += 1
    for op in module.walk():
        if op.name == "graph.tanh":
            op.results[0].name_hint = f"t{_counter[0]}"


@pytest.fixture
def drop_adds(monkeypatch: pytest.MonkeyPatch) -> str:
    """A pass that computes something else: the mismatch oracle's prey."""
    return _register(monkeypatch, "test-drop-adds", _drop_adds)


@pytest.fixture
def crash_on_tanh(monkeypatch: pytest.MonkeyPatch) -> str:
    """A pass that raises an undocumented exception when the program has a tanh."""
    return _register(monkeypatch, "test-crash-on-tanh", _crash_on_tanh)


@pytest.fixture
def retype_tanh(monkeypatch: pytest.MonkeyPatch) -> str:
    """A pass that leaves IR the verifier rejects."""
    return _register(monkeypatch, "test-retype-tanh", _retype_tanh)


@pytest.fixture
def stamp(monkeypatch: pytest.MonkeyPatch) -> str:
    """A pass whose output differs from run to run."""
    return _register(monkeypatch, "test-stamp", _stamp)
