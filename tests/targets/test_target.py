"""Targets: parsing, what each CPU name means, stable keys, JSON records, and code that refuses foreign hosts."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.errors import TensoriumError
from tensorium.runtime.artifact import ArtifactError
from tensorium.targets import Target, TargetError, host_target, parse_target


def test_the_host_is_what_llvm_reports() -> None:
    from llvmlite import binding as llvm

    host = parse_target("cpu")
    assert host.kind == "cpu" and host.host and str(host) == "cpu"
    assert host.cpu == llvm.get_host_cpu_name()
    assert host.triple == llvm.get_process_triple()
    enabled = {f[1:] for f in llvm.get_host_cpu_features().flatten().split(",") if f.startswith("+")}
    assert set(host.features) == enabled
    assert host.vector_bits == (512 if "avx512f" in enabled else 256 if "avx" in enabled else 128)
    assert host.vector_registers == (32 if host.vector_bits == 512 else 16)
    assert host.fma == ("fma" in enabled)
    assert 0 < host.l1d <= host.l2 <= host.l3
    assert host.threads >= 1
    assert parse_target("cpu:host") == host


@pytest.mark.parametrize(
    ("name", "bits", "registers", "fma", "dots"),
    [
        ("x86-64", 128, 16, False, ()),
        ("x86-64-v2", 128, 16, False, ()),
        ("x86-64-v3", 256, 16, True, ()),
        ("znver3", 256, 16, True, ()),
        ("alderlake", 256, 16, True, ("avxvnni",)),
        ("x86-64-v4", 512, 32, True, ()),
        ("skylake-avx512", 512, 32, True, ()),
        ("cascadelake", 512, 32, True, ("avx512vnni",)),
        ("znver4", 512, 32, True, ("avx512vnni",)),
        ("sandybridge", 256, 16, False, ()),
    ],
)
def test_named_cpus(name: str, bits: int, registers: int, fma: bool, dots: tuple[str, ...]) -> None:
    t = parse_target(f"cpu:{name}")
    assert (t.kind, t.cpu, str(t), t.host) == ("cpu", name, f"cpu:{name}", False)
    assert (t.vector_bits, t.vector_registers, t.fma, t.dot_product) == (bits, registers, fma, dots)
    assert t.lanes() == bits // 32 and t.lanes(64) == bits // 64 and t.lanes(8) == bits // 8


def test_a_cpu_llvm_knows_but_the_table_does_not_is_probed() -> None:
    t = parse_target("cpu:bdver4")  # AMD Excavator: AVX2 and FMA, no AVX-512
    assert (t.vector_bits, t.fma) == (256, True)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cpu:pentium9000", "unknown CPU 'pentium9000': LLVM does not know it"),
        ("tpu", "unknown target 'tpu'; use 'cpu'"),
        ("interp:x", "unknown target 'interp:x'"),
        ("cuda:sm_61", "target 'cuda:sm_61': unsupported CUDA architecture; supported: sm_75, sm_80, sm_86"),
        ("webgpu:max_bananas=1", "target 'webgpu:max_bananas=1': unknown WebGPU limit 'max_bananas'"),
    ],
)
def test_bad_targets_say_what_is_accepted(spec: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse_target(spec)


def test_targets_are_frozen_hashable_and_printable() -> None:
    a, b = parse_target("cpu:x86-64-v3"), parse_target("cpu:x86-64-v3")
    assert a == b and hash(a) == hash(b) and len({a, b, parse_target("cpu:znver4")}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.cpu = "x"  # type: ignore[misc]
    assert "16 x 256-bit vectors, FMA" in a.describe()
    assert repr(a).startswith("Target(kind='cpu', cpu='x86-64-v3'")


def test_keys_ignore_threads_and_differ_between_cpus() -> None:
    v3 = parse_target("cpu:x86-64-v3")
    assert v3.key() == v3.with_threads(7).key()
    assert v3.key() != parse_target("cpu:x86-64-v4").key() != parse_target("interp").key()


def test_the_key_is_the_same_in_another_process() -> None:
    code = "from tensorium.targets import parse_target; print(parse_target('cpu:znver3').key())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == parse_target("cpu:znver3").key()


def test_json_records_round_trip_and_bad_ones_are_refused() -> None:
    for spec in ("cpu", "cpu:x86-64-v3", "interp"):
        t = parse_target(spec)
        assert Target.from_json(json.loads(json.dumps(t.to_json()))) == t
    with pytest.raises(TargetError, match="malformed target record"):
        Target.from_json({"kind": "quantum"})
    with pytest.raises(TargetError, match="malformed target record"):
        Target.from_json({"kind": "cpu", "wings": 2})


def test_llvm_features_keep_512_bit_vectors_whole() -> None:
    assert parse_target("cpu:skylake-avx512").llvm_features.endswith("-prefer-256-bit")
    assert "+avx2" in parse_target("cpu:x86-64-v3").llvm_features
    assert "prefer" not in parse_target("cpu:x86-64-v3").llvm_features


def test_missing_features_are_named() -> None:
    host = host_target()
    future = dataclasses.replace(host, cpu="future", features=(*host.features, "hyper-fma"), host=False)
    assert future.missing_on(host) == ["hyper-fma"]
    with pytest.raises(TargetError, match=r"compiled for CPU 'future' with features this host .* lacks: hyper-fma"):
        future.check_runs_here()
    host.check_runs_here()
    parse_target("interp").check_runs_here()


def _mlp(x: tm.Tensor, w: tm.Tensor) -> tm.Tensor:
    return nn.gelu(x @ w)


@pytest.mark.parametrize("spec", ["cpu", "cpu:x86-64", "cpu:x86-64-v3", "cpu:skylake-avx512"])
def test_compile_for_named_cpus_runs_what_this_host_supports(spec: str) -> None:
    target = parse_target(spec)
    x, w = np.random.rand(5, 24).astype(np.float32), np.random.rand(24, 40).astype(np.float32)
    compiled = tm.compile(_mlp, target=spec, cache=False)
    want = tm.compile(_mlp, target="interp", cache=False)(x, w)
    if target.missing_on(host_target()):
        with pytest.raises(TargetError, match="lacks"):
            compiled(x, w)
        return
    np.testing.assert_allclose(compiled(x, w), want, rtol=1e-5, atol=1e-6)
    assert compiled.target == target
    assert compiled.artifact.executable.kernels.target == target


def test_an_artifact_for_a_cpu_this_host_lacks_is_refused_on_load(tmp_path: Path) -> None:
    x, w = np.random.rand(5, 24).astype(np.float32), np.random.rand(24, 40).astype(np.float32)
    compiled = tm.compile(_mlp, cache=False)
    compiled(x, w)
    saved = compiled.save(tmp_path / "m.tsm")
    meta_file = saved / "metadata.json"
    meta = json.loads(meta_file.read_text())
    meta["target_record"]["features"].append("hyper-fma")
    meta["target_record"]["cpu"] = "future"
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(TensoriumError, match=r"with features this host .* lacks: hyper-fma"):
        tm.load(saved)
    plan_file = saved / "cpu" / "plan.json"
    plan = json.loads(plan_file.read_text())
    plan["target"]["features"].append("mega-vec")
    plan_file.write_text(json.dumps(plan))
    with pytest.raises(ArtifactError, match="lacks: mega-vec"):
        tm.load(saved)


def test_the_cli_takes_target_strings(tmp_path: Path) -> None:
    from tensorium.api import check_target

    assert check_target("cpu:x86-64-v3") == parse_target("cpu:x86-64-v3")
    with pytest.raises(TensoriumError, match="unknown CPU 'nope'"):
        check_target("cpu:nope")
