"""PyTorch's OpInfo database run through torch.export and ``tensorium.compile`` (see
tensorium/frontend/pytorch_conformance.py).

Every op takes about a second (two exports and compiles), so the suite runs a fixed, deterministic
slice of the ops (every ``SUITE_STRIDE``-th key in sorted order) on the CPU target; the full set runs with
``python -m tensorium.frontend.pytorch_conformance --report``. Ops still failing are listed in
pytorch_expected_failures.txt with a reason per group and run as strict xfails, so an op that starts
passing or starts failing is noticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the PyTorch conformance suite needs torch")
pytest.importorskip("expecttest", reason="PyTorch's OpInfo database needs the expecttest package")

from tensorium.frontend import pytorch_conformance as conformance
from tensorium.testing import expected_failures

pytestmark = pytest.mark.filterwarnings("ignore")

EXPECTED_FAILURES_FILE = Path(__file__).with_name("pytorch_expected_failures.txt")
SUITE_STRIDE = 24


ALL_KEYS = sorted(conformance.opinfos())
SUITE_KEYS = ALL_KEYS[::SUITE_STRIDE]
EXPECTED = expected_failures(EXPECTED_FAILURES_FILE)


def _param(key: str) -> object:
    if key in EXPECTED:
        return pytest.param(key, marks=pytest.mark.xfail(strict=True, reason=EXPECTED[key]))
    return key


def test_expected_failures_name_real_ops() -> None:
    assert sorted(set(EXPECTED) - set(ALL_KEYS)) == []
    assert len(ALL_KEYS) > 600


def test_families_and_summary() -> None:
    assert conformance.family("nn.functional.interpolate.bilinear") == "nn.functional"
    assert conformance.family("linalg.svd") == "linalg"
    assert conformance.family("add") == "torch"
    results = [
        conformance.Result("add", conformance.Outcome.PASSED),
        conformance.Result("linalg.svd", conformance.Outcome.FAILED, "no converter"),
        conformance.Result("equal", conformance.Outcome.NOT_COUNTED, "torch cannot export it"),
    ]
    lines = conformance.summary(results)
    assert "  linalg           0 / 1 (0.0%)" in lines
    assert "overall: 1 / 2 (50.0%); not counted: 1" in lines
    assert lines[-1] == "outside linalg, special, fft, sparse, masked: 1 / 1 (100.0%)"


@pytest.mark.parametrize("key", [_param(k) for k in SUITE_KEYS])
def test_opinfo_op_on_cpu(key: str) -> None:
    result = conformance.run_op(key, "cpu")
    if result.outcome is conformance.Outcome.NOT_COUNTED:
        pytest.skip(f"not counted: {result.reason}")
    assert result.outcome is conformance.Outcome.PASSED, result.reason
