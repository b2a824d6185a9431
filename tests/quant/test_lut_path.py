"""The qgemv kernel's lut path (1 to 3 bits: nibbles of the packed words index tables of partial sums of 8-bit
activations) on odd shapes at groups 32 and 128: the same integer computation as the int path (its numpy
reference), within the activations' rounding of the interpreter's float matmul, on this host through LLVM
(``vpermb`` where the host has AVX-512 VBMI), lane by lane on a target without it, and on the loop interpreter;
signed and unsigned codes end to end; the knob's legality and the instructions it compiles to."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends import interp
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import TensoriumError
from tensorium.ir.dialects.loop.bits import _lookup_reference
from tensorium.ir.dialects.quant.config import QuantConfig
from tensorium.lowering import lower_function
from tensorium.lowering.quant_lut import LutPath
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.targets import host_target, parse_target

from .conftest import run_on_path
from .test_int_path import _expected
from .test_kernels import _op, packed_case

LUT = "qgemv{{path=lut,mr={mr},chains={chains},prefetch={prefetch}}}"


def _check(got: np.ndarray, inputs: list[np.ndarray], bits: int, cols: int, group: int, lanes: int) -> None:
    want, floats, bound = _expected(inputs, bits, cols, group, lanes)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert np.all(np.abs(got - floats) <= bound), np.abs(got - floats).max()


@pytest.mark.parametrize("bits", [1, 2, 3])
@pytest.mark.parametrize(
    ("rows", "cols", "depth", "group", "mr", "chains"),
    [(1, 37, 128, 32, 1, 8), (3, 19, 256, 128, 2, 4), (5, 40, 384, 128, 4, 2), (2, 53, 96, 32, 2, 1)],
)
def test_every_width_matches_the_integer_reference_and_the_interpreter(
    bits: int, rows: int, cols: int, depth: int, group: int, mr: int, chains: int
) -> None:
    target = host_target()
    module, inputs = packed_case(bits, rows, cols, depth, group, target.lanes())
    inputs[0][0, :32] = 0.0  # a block of zeros: scale 0, table of zeros
    inputs[0][-1, -32:] *= 1e3  # a block of large values: the table entries reach 11 * 127 at k = 3
    config = Config.parse(LUT.format(mr=mr, chains=chains, prefetch=4096 * (chains % 2)))
    space = kernel_space(_op(module), target)
    assert space is not None and space.check(config) == config
    (got,) = CpuExecutable.build(module, configs={kernel_key(_op(module)): config}).run(inputs)
    _check(got, inputs, bits, cols, group, target.lanes())
    (reference,) = interp.run(module, inputs)
    _, floats, bound = _expected(inputs, bits, cols, group, target.lanes())
    np.testing.assert_allclose(reference, floats, rtol=1e-4, atol=1e-4 * np.abs(floats).max())
    assert np.all(np.abs(got - reference) <= bound + 1e-4 * np.abs(floats).max())


def test_the_lut_path_equals_the_int_path() -> None:
    """Both form the same integer dot per block and add it the same way: the results agree to f32 rounding."""
    target = host_target()
    module, inputs = packed_case(3, 2, 70, 256, 128, target.lanes())
    results = {}
    for path in ("int", "lut"):
        config = Config.parse(f"qgemv{{path={path},mr=2,chains=4,prefetch=0}}")
        (results[path],) = CpuExecutable.build(module, configs={kernel_key(_op(module)): config}).run(inputs)
    np.testing.assert_allclose(results["lut"], results["int"], rtol=1e-6, atol=1e-6 * np.abs(results["int"]).max())


def test_loop_interpreter_runs_the_lut_kernel() -> None:
    module, inputs = packed_case(2, 3, 9, 64, 32, 4)
    configs = {kernel_key(_op(module)): Config.parse(LUT.format(mr=2, chains=2, prefetch=2048))}
    (got,) = run_plan(lower_function(module, configs=configs), inputs)
    _check(got, inputs, 2, 9, 32, 4)


@pytest.mark.parametrize("cpu", ["skylake-avx512", "x86-64-v3"])
def test_targets_without_vpermb_compute_the_same_lane_by_lane(cpu: str) -> None:
    """AVX-512 without VBMI (16 lanes) and AVX2 (8 lanes): the lookups are four byte loads per lane."""
    target = parse_target(f"cpu:{cpu}")
    if not target.runs_here():
        pytest.skip(f"this host cannot run code for {cpu}")
    module, inputs = packed_case(3, 2, 21, 128, 32, target.lanes())
    configs = {kernel_key(_op(module)): Config.parse(LUT.format(mr=2, chains=4, prefetch=0))}
    executable = CpuExecutable.build(module, target=target, configs=configs)
    assert "vpermb" not in executable.kernels.assembly()
    (got,) = executable.run(inputs)
    _check(got, inputs, 3, 21, 32, target.lanes())


@pytest.mark.parametrize("bits", [1, 3])
def test_sapphirerapids_gets_vpermb_and_vpdpbusd(bits: int) -> None:
    """Cross-compiled: per weight word and row four ``vpermb`` lookups and four ``vpdpbusd``, no lane inserts."""
    target = parse_target("cpu:sapphirerapids")
    module, _ = packed_case(bits, 1, 32, 128, 128, target.lanes())
    configs = {kernel_key(_op(module)): Config.parse(LUT.format(mr=1, chains=8, prefetch=0))}
    text = CpuExecutable.build(module, target=target, configs=configs).kernels.assembly()
    assert re.search(r"vpermb.*%zmm", text) and re.search(r"vpdpbusd.*%zmm", text)
    assert not re.search(r"vpinsr|vpextr", text)


@pytest.mark.parametrize("spec", ["w1g128", "w2g32", "w3g128", "w2g128s", "w3g32s"])
def test_signed_and_unsigned_codes_end_to_end(spec: str) -> None:
    """A quantized Linear-GELU-Linear compiled with every qgemv kernel on the lut path, against the interpreter
    (signed codes reach the kernel shifted to unsigned ones with shifted zero points)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).eval()
    x = torch.randn(3, 256)
    config = QuantConfig.parse(spec)
    config = QuantConfig(bits=config.bits, group=config.group, signed=config.signed, min_elements=4096)
    want = tm.compile(model, quantize=config, target="interp", cache=False)(x).numpy()
    got = run_on_path(model, [x], "lut", quantize=config)
    floats = run_on_path(model, [x], "float", quantize=config)
    np.testing.assert_allclose(floats, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    assert np.abs(got - want).max() <= 3e-2 * np.abs(want).max()
    ints = run_on_path(model, [x], "int", quantize=config)
    np.testing.assert_allclose(got, ints, rtol=1e-5, atol=1e-5 * np.abs(ints).max())


def test_the_knob_takes_lut_only_up_to_3_bits() -> None:
    target = host_target()
    for bits in range(1, 9):
        module, _ = packed_case(bits, 1, 16, 64, 32, target.lanes())
        space = kernel_space(_op(module), target)
        assert space is not None
        assert ("lut" in space.knobs[0].values) == (bits <= 3)
    module, inputs = packed_case(4, 1, 16, 64, 32, target.lanes())
    config = Config.parse(LUT.format(mr=1, chains=8, prefetch=0))
    with pytest.raises(TensoriumError, match="lut"):
        CpuExecutable.build(module, configs={kernel_key(_op(module)): config}).run(inputs)


def test_cost_needs_vbmi_and_16_lanes() -> None:
    path = LutPath()
    assert path.cost(parse_target("cpu:sapphirerapids"), 1, 1) is not None
    assert path.cost(parse_target("cpu:skylake-avx512"), 1, 1) is None  # no VBMI
    assert path.cost(parse_target("cpu:x86-64-v3"), 1, 1) is None  # 8 lanes
    assert path.cost(parse_target("cpu:sapphirerapids"), 3, 1) is None  # measured slower at group 32


@pytest.mark.parametrize(
    ("cpu", "bits", "path"),
    [("sapphirerapids", 1, "lut"), ("znver4", 1, "lut"), ("sapphirerapids", 2, "int"), ("sapphirerapids", 3, "int")]
    + [("skylake-avx512", 1, "int"), ("cascadelake", 1, "int"), ("x86-64-v3", 1, "int")],
)
def test_default_rule_takes_lut_at_1_bit_with_vpermb(cpu: str, bits: int, path: str) -> None:
    target = parse_target(f"cpu:{cpu}")
    for rows in (1, 3):
        module, _ = packed_case(bits, rows, 16, 64, 32, target.lanes())
        config = default_config(_op(module), target)
        assert config is not None and config["path"] == path


def test_lookup_bytes_reference() -> None:
    """Byte b of the result is table byte (index byte b & 63); the table is 16 little-endian words."""
    table = np.arange(64, dtype=np.uint8).view("<i4").reshape(1, 16) * 1
    table = np.concatenate([np.zeros((1, 2), np.int32), table], axis=1)
    index = np.uint32(0x3F_41_02_00)  # bytes 0, 2, 0x41 (& 63 = 1), 63
    got = _lookup_reference(index, table, [np.int64(0), np.int64(2)])
    assert int(got) == 0x3F_01_02_00
    with pytest.raises(IndexError):
        _lookup_reference(index, table, [np.int64(0), np.int64(3)])
