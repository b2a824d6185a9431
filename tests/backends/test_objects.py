"""Object code bundles: one object per kernel made on the LLVM threads, packed as an ``ar`` archive."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.llvm import compile_module
from tensorium.backends.llvm.objects import pack_objects, unpack_objects
from tensorium.errors import TensoriumError
from tensorium.lowering.codegen import lower_and_schedule
from tensorium.targets import host_target


def test_pack_and_unpack_are_inverse_for_odd_and_even_sizes() -> None:
    objects = [b"\x7fELF" + bytes(range(n % 256)) * (n // 256 + 1) for n in (0, 1, 7, 300)]
    packed = pack_objects(objects)
    assert packed.startswith(b"!<arch>\n")
    assert unpack_objects(packed) == objects


def test_a_single_object_is_kept_as_it_is() -> None:
    assert pack_objects([b"\x7fELFabc"]) == b"\x7fELFabc"
    assert unpack_objects(b"\x7fELFabc") == [b"\x7fELFabc"]


def test_a_damaged_archive_is_a_clear_error() -> None:
    packed = pack_objects([b"one", b"two"])
    with pytest.raises(TensoriumError, match="archive member at byte 8 runs past the end"):
        unpack_objects(packed[:70])
    with pytest.raises(TensoriumError, match="damaged archive member header"):
        unpack_objects(packed[:8] + b"x" * 60)


RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((16, 32)).astype(np.float32)
W2 = RNG.standard_normal((32, 8)).astype(np.float32)


def _mlp(v):
    return nn.softmax(nn.relu(v @ W1) @ W2, axis=-1)


def _mlp_module():
    x = np.zeros((4, 16), np.float32)
    return lower_and_schedule(tm.trace(_mlp, x).module, host_target())


def _reference(x: np.ndarray) -> np.ndarray:
    h = np.maximum(x @ W1, 0) @ W2
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.skipif(shutil.which("ar") is None, reason="binutils' ar is not installed")
def test_a_cold_compile_bundles_one_object_per_kernel_that_ar_can_list(tmp_path) -> None:
    lowered = _mlp_module()
    kernels = compile_module(lowered, kernel_cache=False)
    objects = unpack_objects(kernels.object_code)
    assert len(objects) >= len(kernels.names) - (kernels.stats.shared if kernels.stats else 0)
    archive = tmp_path / "kernels.a"
    archive.write_bytes(kernels.object_code)
    listed = subprocess.run(["ar", "t", str(archive)], capture_output=True, text=True, check=True).stdout.split()
    assert listed == [f"k{i}.o" for i in range(len(objects))]


def test_an_executable_with_bundled_objects_runs_after_a_round_trip_through_files(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TENSORIUM_KERNEL_CACHE", "0")
    lowered = _mlp_module()
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    executable = CpuExecutable.from_lowered(lowered)
    assert executable.kernels.object_code.startswith(b"!<arch>\n")
    loaded = CpuExecutable.from_files(executable.to_files(tmp_path / "exe"))
    np.testing.assert_allclose(loaded.run([x])[0], executable.run([x])[0], rtol=0, atol=0)
    np.testing.assert_allclose(loaded.run([x])[0], _reference(x), rtol=1e-4, atol=1e-6)
