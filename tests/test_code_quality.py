"""The code base stays lint-clean (ruff) and type-clean (mypy); skipped where the tools are absent."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (pip install -e '.[dev]')")
def test_ruff_check_is_clean() -> None:
    result = _run(["ruff", "check", "tensorium", "tests", "examples", "benchmarks"])
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (pip install -e '.[dev]')")
def test_ruff_format_is_clean() -> None:
    result = _run(["ruff", "format", "--check", "tensorium", "tests", "examples", "benchmarks"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[dev]')")
    result = _run([sys.executable, "-m", "mypy"])
    assert result.returncode == 0, result.stdout + result.stderr
