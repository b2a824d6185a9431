"""Stored WebGPU executables that cannot be loaded say which file is at fault (no GPU needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tensorium.backends.webgpu import WebGPUExecutable
from tensorium.runtime.executable import ExecutableError


def test_missing_plan_is_named(tmp_path: Path) -> None:
    with pytest.raises(ExecutableError, match=r"plan.json: missing"):
        WebGPUExecutable.from_files(tmp_path)


def test_foreign_plan_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text(json.dumps({"format": "tensorium-cpu-executable"}))
    with pytest.raises(ExecutableError, match=r"not a Tensorium WebGPU executable"):
        WebGPUExecutable.from_files(tmp_path)


def test_plan_that_is_not_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plan.json").write_text("{")
    with pytest.raises(ExecutableError, match=r"plan.json: not valid JSON"):
        WebGPUExecutable.from_files(tmp_path)
