"""Quant programs for the fuzzer: what they cover, the layouts' round-trip oracle, and planted bugs in the
packer and in the k-bit lowering."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from tensorium.backends.interp import run
from tensorium.fuzz.oracle import FuzzCase, case_inputs, check
from tensorium.fuzz.quant import layout_problem, quant_pipeline, quant_program
from tensorium.ir.dialects.quant import layouts
from tensorium.ir.printer import print_module
from tensorium.ir.types import QuantizedType, TensorType
from tensorium.ir.verifier import verify
from tensorium.lowering import quant_simple

from .layers import short_run, signatures


def _quant_types(seeds: range) -> list[QuantizedType]:
    found = []
    for seed in seeds:
        for op in quant_program(seed).walk():
            t = op.results[0].type if op.results else None
            if isinstance(t, TensorType) and isinstance(t.element, QuantizedType):
                found.append(t.element)
    return found


def test_programs_cover_widths_signs_granularities_and_ops() -> None:
    types = _quant_types(range(60))
    assert {q.bits for q in types} == set(range(1, 9))
    assert {q.signed for q in types} == {True, False}
    assert {q.granularity for q in types} == {"per_tensor", "per_channel", "per_group"}
    groups = {q.group_size for q in types if q.group_size is not None}
    assert any(g % 32 == 0 for g in groups) and any(g % 32 for g in groups)
    ops = Counter(op.name for seed in range(60) for op in quant_program(seed).walk())
    assert {"quant.matmul", "quant.embedding", "quant.dequantize", "quant.quantize"} <= set(ops)
    rng = np.random.default_rng(0)
    packs = [p for _ in range(40) for p in quant_pipeline(rng) if p.name == "pack-quant"]
    assert len({str(p) for p in packs}) >= 3  # packed for several CPUs: 4, 8 and 16 lanes


def test_programs_verify_and_run_on_the_interpreter_and_the_cpu() -> None:
    statuses: Counter[str] = Counter()
    for seed in range(8):
        module = quant_program(seed)
        verify(module)
        run(module, case_inputs(module, seed))
        text = print_module(module)
        verdict = check(FuzzCase(text, "canonicalize,pack-quant", seed, ("interp", "cpu"), 1))
        assert verdict.failure is None, verdict.failure
        statuses[verdict.status] += 1
    assert statuses["ok"] >= 5  # the rest quantize at run time, which only the interpreter computes


def test_the_layout_oracle_names_a_layout_that_loses_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    module = quant_program(1, steps=3)
    assert layout_problem(module) is None
    monkeypatch.setitem(
        layouts.LAYOUTS, "planes", dataclasses.replace(layouts.LAYOUTS["planes"], pack=lambda c, bits, lanes: 0 * c)
    )
    problem = layout_problem(module)
    assert problem is not None and "layout 'planes'" in problem


def _interleaved_high_word_first(codes: np.ndarray, bits: int, lanes: int) -> np.ndarray:
    rows, cols = codes.shape
    groups, blocks, _, _ = layouts.interleaved_shape(rows, cols, bits, lanes)
    padded = np.zeros((groups * lanes, blocks * layouts.BLOCK), np.uint32)
    padded[:rows, :cols] = codes
    stream = layouts.pack_stream(padded, bits).reshape(groups, lanes, blocks, bits)
    return np.ascontiguousarray(stream.transpose(0, 2, 3, 1)[:, :, ::-1])  # the bug: a block's words high first


def test_a_packer_bug_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = dataclasses.replace(layouts.LAYOUTS["interleaved"], pack=_interleaved_high_word_first)
    monkeypatch.setitem(layouts.LAYOUTS, "interleaved", broken)
    report = short_run(20, seed=0, backends=("interp", "cpu"), quant_fraction=1.0)
    assert report.failures, report.summary()
    assert signatures(report)[0] in ("mismatch:quant layouts", "mismatch:interp", "mismatch:cpu")


def test_a_lowering_bug_in_per_channel_scales_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORIUM_KERNEL_CACHE", "0")
    original = quant_simple.param_indices

    def first_channel_only(k, q, rank, ivs):  # type: ignore[no-untyped-def]
        if q.granularity == "per_channel":
            return [k.index(0)] * rank  # the bug: every channel reads the first channel's scale
        return original(k, q, rank, ivs)

    monkeypatch.setattr(quant_simple, "param_indices", first_channel_only)
    report = short_run(20, seed=1, backends=("interp", "cpu"), quant_fraction=1.0)
    assert signatures(report) == ["mismatch:cpu"], report.summary()


def test_the_int_path_compares_at_the_tolerance_of_its_8_bit_activations() -> None:
    # Regression: the qgemv kernel's int path (8-bit activations, docs/quantization.md) differs from the float
    # reference by up to about 1%; at f32's tolerance every packed quant program failed on hosts where it is
    # the default. Kernels with its ops (APPROXIMATIONS) compare at bf16's tolerance.
    from tensorium.fuzz.schedules import random_configs
    from tensorium.ir import parse_module
    from tensorium.passes.pipeline import parse_pipeline
    from tensorium.targets import parse_target

    text = print_module(quant_program(0, steps=1))
    packed = parse_module(text)
    for p in parse_pipeline("pack-quant"):
        p.run(packed)
    paths = set()
    for seed in range(6):
        configs = random_configs(packed, parse_target("cpu"), seed)
        paths |= {c["path"] for c in configs.values() if c.family == "qgemv"}
        verdict = check(FuzzCase(text, "pack-quant", seed, ("interp", "cpu"), 1, schedule_seed=seed))
        assert verdict.status == "ok", verdict.failure
    assert {"int", "float"} <= paths <= {"int", "float", "lut"}  # lut: 1..3-bit weights only


def test_quant_matmul_overflows_as_f32_does() -> None:
    # Regression (found by a fuzzing campaign with special inputs): the reference computed x @ W^T in float64,
    # where -3.4e38 * 2 + inf is inf; the f32 kernels (and graph.matmul's reference) overflow to -inf + inf, NaN.
    from tensorium.backends.cpu import CpuExecutable
    from tensorium.ir import parse_module

    w = "tensor<1x2x!quant<u3:f32, per_tensor>>"
    text = f"""
module {{
  func.func @main(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {{
    %0 = graph.constant {{value = dense<[[2, 3]]> : {w}}} : () -> {w}
    %1 = graph.constant {{value = dense<1.0> : tensor<f32>}} : () -> tensor<f32>
    %2 = quant.matmul %x, %0, %1 : (tensor<1x2xf32>, {w}, tensor<f32>) -> tensor<1x1xf32>
    func.return %2 : tensor<1x1xf32>
  }}
}}
"""
    module = parse_module(text)
    x = np.array([[-3.4e38, np.inf]], np.float32)
    with np.errstate(all="ignore"):
        (want,) = run(module, [x])
        (got,) = CpuExecutable.build(module, opt_level=1).run([x])
    assert np.isnan(want).all() and np.isnan(got).all()


def test_special_inputs_of_a_quantized_type_are_the_ends_of_its_codes() -> None:
    # Regression: once the reducer cut a quant constant's op, the k-bit value became an input of @main, and
    # drawing special inputs for it raised TypeError out of the oracle, ending the fuzzing session.
    from tensorium.ir import parse_module

    text = """
module {
  func.func @main(%w: tensor<2x4x!quant<i3:f32, per_tensor>>) -> tensor<2x4xf32> {
    %s = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %0 = quant.dequantize %w, %s : (tensor<2x4x!quant<i3:f32, per_tensor>>, tensor<f32>) -> tensor<2x4xf32>
    func.return %0 : tensor<2x4xf32>
  }
}
"""
    (codes,) = case_inputs(parse_module(text), 3, specials=True)
    assert codes.min() >= -4 and codes.max() <= 3
    assert check(FuzzCase(text, "canonicalize", 3, ("interp", "cpu"), 1, specials=True)).status == "ok"
