"""The kernel cache: identical kernels are optimized once across modules and processes, per target; corrupt
entries are rebuilt with a warning; an unwritable folder or a disabled cache never breaks compilation.
Hits are counted by the cache's stats, never by timing."""

from __future__ import annotations

import ast
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.llvm import compile_module
from tensorium.backends.llvm.kernel_cache import (
    KERNEL_CACHE_ENV,
    PLACEHOLDER,
    KernelCache,
    default_kernel_cache,
    normalize,
)
from tensorium.targets import host_target, parse_target

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "loop" / "kernels"
ADD = (KERNELS / "elementwise_add.mlir").read_text()
SCALE = """
  func.func @scale(%a: buffer<[n]xf32, global>, %c: buffer<[n]xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %two = loop.const {value = 2.0, dtype = f32} : () -> f32
    %n = loop.dim %a {axis = 0} : (buffer<[n]xf32, global>) -> index
    loop.for %c0, %n, %c1 (
      {
      ^bb0(%i: index):
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %s = loop.mul %x, %two : (f32, f32) -> f32
        loop.store %s, %c, %i : (f32, buffer<[n]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) : (index, index, index) -> ()
    func.return
  }
"""


def _functions(text: str) -> str:
    """The functions of a one-module text, without the ``module { }`` around them."""
    body = text.strip()
    return body[body.index("{") + 1 : body.rindex("}")]


def _text(*functions: str) -> str:
    return "module {\n" + "\n".join(functions) + "\n}"


def _module(*functions: str) -> tm.ir.Operation:
    return tm.parse_module(_text(*functions))


def _line(text: str, fragment: str) -> int:
    """The 1-based number of the line of ``text`` holding ``fragment``."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def _add_ok(kernels: object, name: str = "add") -> None:
    a, b = np.arange(100, dtype=np.float32), np.full(100, 0.5, np.float32)
    c = np.zeros(100, np.float32)
    kernels.run(name, a, b, c)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(c, a + b)


def test_normalize_replaces_the_kernel_symbol_and_drops_the_module_name() -> None:
    text = '; ModuleID = "tensorium.add"\ndefine i32 @"tensorium.kernel.add"() {\n'
    text += '  call @"tensorium.kernel.add.parallel"\n}'
    out = normalize(text, "tensorium.kernel.add")
    assert "ModuleID" not in out and "tensorium.kernel.add" not in out
    assert f'@"{PLACEHOLDER}"' in out and f'@"{PLACEHOLDER}.parallel"' in out
    assert normalize(text.replace("add", "plus"), "tensorium.kernel.plus") == out


def test_a_second_compile_of_the_same_kernel_hits_the_cache(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path / "kernels")
    first = compile_module(tm.parse_module(ADD), kernel_cache=cache)
    assert (cache.stats.misses, cache.stats.hits, cache.stats.stores) == (1, 0, 1)
    assert first.stats is not None and first.stats.cache_hits == 0
    second = compile_module(tm.parse_module(ADD), kernel_cache=cache)
    assert (cache.stats.misses, cache.stats.memory_hits) == (1, 1)
    assert second.stats is not None and second.stats.cache_hits == 1
    assert not first.stats.object_cached and second.stats.object_cached  # the same kernels: no code generation
    assert cache.stats.object_hits == 1 and len(list((tmp_path / "kernels").glob("*.o"))) == 1
    _add_ok(second)
    fresh = KernelCache(tmp_path / "kernels")  # an empty memory layer over the same folder
    _add_ok(compile_module(tm.parse_module(ADD), kernel_cache=fresh))
    assert (fresh.stats.misses, fresh.stats.disk_hits) == (0, 1)


def test_modules_sharing_a_kernel_under_other_names_compile_it_once(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path / "kernels")
    compile_module(_module(_functions(ADD), SCALE), kernel_cache=cache)
    assert (cache.stats.misses, cache.stats.hits) == (2, 0)
    renamed = _functions(ADD).replace("@add", "@plus")
    other = compile_module(_module(SCALE.replace("@scale", "@twice"), renamed), kernel_cache=cache)
    assert (cache.stats.misses, cache.stats.hits) == (2, 2)
    assert other.stats is not None and other.stats.cache_hits == 2 and not other.stats.object_cached
    _add_ok(other, "plus")
    a, c = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    other.run("twice", a, c)
    np.testing.assert_array_equal(c, 2 * a)
    assert "tensorium.kernel.plus" in other.optimized_ir and PLACEHOLDER not in other.optimized_ir


STRIDE = """
  func.func @stride(%a: buffer<[n]xf32, global>, %c: buffer<[n]xf32, global>, %step: index) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %n = loop.dim %a {axis = 0} : (buffer<[n]xf32, global>) -> index
    loop.for %c0, %n, %step (
      {
      ^bb0(%i: index):
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        loop.store %x, %c, %i : (f32, buffer<[n]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) : (index, index, index) -> ()
    func.return
  }
"""


def test_a_shared_kernel_reports_its_own_failed_checks(tmp_path: Path) -> None:
    """Checks are numbered across a module: a kernel taken from the cache at another place in another module
    still reports its own message (here: the line of its own loop)."""
    cache = KernelCache(tmp_path)
    first = compile_module(_module(STRIDE), kernel_cache=cache)
    second = compile_module(_module(SCALE, _functions(ADD), STRIDE), kernel_cache=cache)
    assert second.stats is not None and second.stats.cache_hits == 1
    a, c = np.arange(6, dtype=np.float32), np.zeros(6, np.float32)
    second.run("stride", a, c, 2)
    np.testing.assert_array_equal(c, [0, 0, 2, 0, 4, 0])
    for kernels, text in ((first, _text(STRIDE)), (second, _text(SCALE, _functions(ADD), STRIDE))):
        line = _line(text, "%step (")
        with pytest.raises(tm.InterpreterError, match=rf"^<input>:{line}:5: 'loop.for' step must be positive"):
            kernels.run("stride", a, c, 0)


def test_a_corrupt_entry_warns_naming_the_file_and_is_rebuilt(tmp_path: Path) -> None:
    compile_module(tm.parse_module(ADD), kernel_cache=KernelCache(tmp_path))
    (entry,) = tmp_path.glob("*.bc")
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    cache = KernelCache(tmp_path)
    with pytest.warns(UserWarning, match=entry.name):
        kernels = compile_module(tm.parse_module(ADD), kernel_cache=cache)
    _add_ok(kernels)
    assert (cache.stats.corrupt, cache.stats.misses, cache.stats.stores) == (1, 1, 1)
    entry.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="not a kernel cache entry"):
        _add_ok(compile_module(tm.parse_module(ADD), kernel_cache=KernelCache(tmp_path)))
    again = KernelCache(tmp_path)
    _add_ok(compile_module(tm.parse_module(ADD), kernel_cache=again))
    assert again.stats.disk_hits == 1


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 CPU names")
def test_different_targets_do_not_share_entries(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    compile_module(tm.parse_module(ADD), target=host_target(), kernel_cache=cache)
    compile_module(tm.parse_module(ADD), target=parse_target("cpu:x86-64-v3"), kernel_cache=cache)
    assert (cache.stats.misses, cache.stats.hits) == (2, 0)
    assert len(list(tmp_path.glob("*.bc"))) == 2


def test_the_cache_can_be_disabled_and_cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = KernelCache(tmp_path)
    compile_module(tm.parse_module(ADD), kernel_cache=False)
    assert not list(tmp_path.glob("*.bc"))
    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv(KERNEL_CACHE_ENV, "0")
    before = default_kernel_cache().stats.misses + default_kernel_cache().stats.hits
    _add_ok(compile_module(tm.parse_module(ADD)))
    assert default_kernel_cache().stats.misses + default_kernel_cache().stats.hits == before
    assert not (tmp_path / "root").exists()
    monkeypatch.setenv(KERNEL_CACHE_ENV, "1")
    compile_module(tm.parse_module(ADD), kernel_cache=cache)
    assert len(list(tmp_path.glob("*.bc"))) == 1
    cache.clear()
    assert not list(tmp_path.glob("*.bc"))
    compile_module(tm.parse_module(ADD), kernel_cache=cache)
    assert (cache.stats.misses, cache.stats.hits) == (2, 0)


def test_an_unwritable_folder_never_breaks_compilation(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = KernelCache(blocker / "kernels")
    with pytest.warns(UserWarning, match="cannot write the kernel cache"):
        _add_ok(compile_module(tm.parse_module(ADD), kernel_cache=cache))
    _add_ok(compile_module(_module(SCALE, _functions(ADD)), kernel_cache=cache))  # warned once per folder
    assert cache.stats.stores == 0 and cache.stats.memory_hits == 1


SECOND_PROCESS = """
import json, sys
import tensorium as tm
from tensorium.backends.llvm import compile_module
from tensorium.backends.llvm.kernel_cache import default_kernel_cache
kernels = compile_module(tm.parse_module(open(sys.argv[1]).read()))
stats = default_kernel_cache().stats
print(json.dumps({"misses": stats.misses, "disk_hits": stats.disk_hits, "hits": kernels.stats.cache_hits}))
"""


def test_a_second_process_hits_the_disk_cache(tmp_path: Path) -> None:
    env = dict(os.environ, TENSORIUM_CACHE_DIR=str(tmp_path), **{KERNEL_CACHE_ENV: "1"})
    command = [sys.executable, "-c", SECOND_PROCESS, str(KERNELS / "elementwise_add.mlir")]

    def run() -> dict[str, int]:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=True)
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    assert run() == {"misses": 1, "disk_hits": 0, "hits": 0}
    assert len(list((tmp_path / "kernels").glob("*.bc"))) == 1
    assert run() == {"misses": 0, "disk_hits": 1, "hits": 1}


def test_runtime_does_not_import_jit() -> None:
    """Imports go one way: jit -> runtime -> machine."""
    source = (ROOT / "tensorium" / "backends" / "llvm" / "runtime.py").read_text()
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert "jit" not in imported and "machine" in imported


def test_a_corrupt_object_entry_is_rebuilt(tmp_path: Path) -> None:
    compile_module(tm.parse_module(ADD), kernel_cache=KernelCache(tmp_path))
    (entry,) = tmp_path.glob("*.o")
    entry.write_bytes(entry.read_bytes()[:-1])
    cache = KernelCache(tmp_path)
    with pytest.warns(UserWarning, match=entry.name):
        kernels = compile_module(tm.parse_module(ADD), kernel_cache=cache)
    assert kernels.stats is not None and not kernels.stats.object_cached
    _add_ok(kernels)
    again = compile_module(tm.parse_module(ADD), kernel_cache=KernelCache(tmp_path))
    assert again.stats is not None and again.stats.object_cached
    _add_ok(again)


def test_two_compiled_models_share_a_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through tensorium.compile: the softmax kernel of the first model is not optimized again for the second,
    where it has another name (it comes after a matmul)."""
    from tensorium import nn

    monkeypatch.setenv("TENSORIUM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(KERNEL_CACHE_ENV, "1")
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 24), dtype=np.float32), rng.standard_normal((24, 5), dtype=np.float32)
    stats = default_kernel_cache().stats

    def first(x: object) -> object:
        return nn.softmax(x, axis=-1)

    def second(x: object, w: object) -> object:
        return x @ w, nn.softmax(x, axis=-1)  # type: ignore[operator]

    tm.compile(first, cache=False)(x)
    hits = stats.hits
    y, s = tm.compile(second, cache=False)(x, w)
    assert stats.hits > hits
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(s, e / e.sum(axis=-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4)
