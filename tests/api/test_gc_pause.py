"""The cycle collector skips the objects that existed before a compile, and everything is as before after it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tensorium as tm
from tensorium.gc_pause import old_objects_frozen


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_old_objects_are_frozen_only_within_the_block_and_new_cycles_are_still_collected() -> None:
    assert gc.get_freeze_count() == 0
    with old_objects_frozen():
        assert gc.get_freeze_count() > 0
        _Cycle()
        assert gc.collect() >= 1  # a cycle made inside the block is garbage the collector still finds
    assert gc.get_freeze_count() == 0


def test_objects_someone_else_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with old_objects_frozen():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_a_disabled_collector_is_left_alone() -> None:
    gc.disable()
    try:
        with old_objects_frozen():
            assert gc.get_freeze_count() == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_inside_the_block_unfreezes() -> None:
    with pytest.raises(ValueError, match="boom"), old_objects_frozen():
        raise ValueError("boom")
    assert gc.get_freeze_count() == 0


def test_a_compile_freezes_the_old_objects_and_leaves_nothing_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen_during: list[int] = []
    freeze = gc.freeze

    def spy() -> None:
        freeze()
        frozen_during.append(gc.get_freeze_count())

    monkeypatch.setattr(gc, "freeze", spy)

    def f(x: tm.Tensor) -> tm.Tensor:
        return tm.nn.relu(x) * 2

    compiled = tm.compile(f, cache=False)
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    np.testing.assert_allclose(compiled(x), np.maximum(x, 0) * 2)
    np.testing.assert_allclose(compiled(x), np.maximum(x, 0) * 2)  # no compile: nothing frozen again
    assert len(frozen_during) == 1 and frozen_during[0] > 0
    assert gc.get_freeze_count() == 0 and gc.isenabled()
