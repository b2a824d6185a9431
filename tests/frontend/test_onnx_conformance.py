"""ONNX's own backend conformance suite (every generated node case) run through import + the interpreter.

Expected failures are listed in onnx_expected_failures.txt and marked xfail(strict=True), so a case
that starts passing or starts failing is noticed.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

from onnx.backend.test import BackendTest  # noqa: E402

from tensorium.frontend.onnx_backend import TensoriumBackend  # noqa: E402
from tensorium.testing import expected_failures  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")

EXPECTED_FAILURES_FILE = Path(__file__).with_name("onnx_expected_failures.txt")


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _backend_test = BackendTest(TensoriumBackend, __name__)
_backend_test.include(r"^test_.*_cpu$")
NodeTests = _backend_test.test_cases["OnnxBackendNodeModelTest"]
setattr(NodeTests, "__test__", False)  # noqa: B010  (run through test_onnx_node_case below, not collected as a unittest class)
NODE_CASES = sorted(name for name in vars(NodeTests) if name.startswith("test_") and name.endswith("_cpu"))
EXPECTED = expected_failures(EXPECTED_FAILURES_FILE)


def _param(name: str) -> object:
    if name in EXPECTED:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=EXPECTED[name]))
    return name


def test_expected_failures_name_real_cases() -> None:
    stale = sorted(set(EXPECTED) - set(NODE_CASES))
    assert stale == []
    assert len(NODE_CASES) > 1800


@pytest.mark.parametrize("name", [_param(n) for n in NODE_CASES])
def test_onnx_node_case(name: str) -> None:
    getattr(NodeTests(name), name)()
