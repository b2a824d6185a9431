"""Two fixed f16 bugs whose differences (one f16 ulp) are below the fuzzer's f16 tolerance: checked exactly here.

The reference and the CPU kernels must round f16 at the same steps: einsum accumulates in f32 and rounds
once (as matmul does); attention rounds the scores to f16 after the product and after the scale (as the
unfused ops it replaces do).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.interp import run
from tensorium.fuzz.oracle import case_inputs
from tensorium.fuzz.reduce import read_case
from tensorium.ir.parser import parse_module

REGRESSIONS = Path(__file__).parent / "regressions"


@pytest.mark.parametrize("name", ["einsum_f16_accumulates_in_f32", "attention_f16_rounding"])
@pytest.mark.parametrize("seed", range(4))
def test_cpu_and_interpreter_agree_to_the_f16_ulp(name: str, seed: int) -> None:
    module = parse_module(read_case(REGRESSIONS / f"{name}.mlir").module)
    inputs = case_inputs(module, seed)
    (want,) = run(module, inputs)
    (got,) = CpuExecutable.build(module).run(inputs)
    assert want.dtype == got.dtype == np.float16
    np.testing.assert_array_max_ulp(got, want, maxulp=1)
