"""The CPU executable: plans run on LLVM kernels equal the interpreter; memory plan; files; load errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium import nn
from tensorium.backends import cpu, interp
from tensorium.backends.cpu import CpuExecutable, ExecutableError, MemoryPlan
from tensorium.backends.llvm import jit
from tensorium.backends.llvm.emitter import LLVMEmitter
from tensorium.errors import CompileError, InterpreterError
from tensorium.ir.types import Sym, TensorType, f32
from tensorium.lowering import LoweringError, Step
from tensorium.targets import Target, host_target

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def build(fn: Callable[..., Any], *args: np.ndarray, dynamic: dict[str, dict[int, str]] | None = None) -> Any:
    """The traced module of ``fn`` and its CPU executable."""
    module = tm.trace(fn, *args, dynamic=dynamic).module
    return module, CpuExecutable.build(module)


def same(module: Any, executable: CpuExecutable, args: list[np.ndarray]) -> None:
    want = interp.run(module, args)
    got = executable.run(args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def mlp(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
    return nn.log_softmax(nn.gelu(x @ w1 + b1) @ w2, axis=-1)


MLP_WEIGHTS = [rand(16, 32), rand(32), rand(32, 10)]


@pytest.fixture(scope="module")
def mlp_exe() -> tuple[Any, CpuExecutable]:
    return build(mlp, rand(4, 16), *MLP_WEIGHTS, dynamic={"x": {0: "batch"}})  # type: ignore[no-any-return]


@pytest.mark.parametrize("batch", [1, 5, 0])
def test_mlp_with_a_symbolic_batch_equals_the_interpreter(mlp_exe: tuple[Any, CpuExecutable], batch: int) -> None:
    module, exe = mlp_exe
    same(module, exe, [rand(batch, 16), *MLP_WEIGHTS])


def test_kernel_by_kernel_runs_each_kernel_through_kernels_run_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = [np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32), *MLP_WEIGHTS]
    _module, exe = build(mlp, *args)  # static shapes: one native call runs every kernel
    whole = exe.run(args)
    seen: list[str] = []
    run = exe.kernels.run
    monkeypatch.setattr(exe.kernels, "run", lambda name, *a, **kw: seen.append(name) or run(name, *a, **kw))
    exe.kernel_by_kernel = True
    each = exe.run(args)
    assert seen == [step.kernel for step in exe.steps] and len(seen) >= 2
    for w, e in zip(whole, each):
        np.testing.assert_array_equal(w, e)
    exe.kernel_by_kernel, seen[:] = False, []
    exe.run(args)
    assert seen == []


def test_attention_with_layer_norm_equals_the_interpreter() -> None:
    def block(x: Any, wq: Any, wk: Any, wv: Any, g: Any, b: Any) -> Any:
        h = nn.layer_norm(x, g, b, axis=-1)
        q, k, v = h @ wq, h @ wk, h @ wv
        attn = nn.softmax((q @ k.transpose(0, 2, 1)) * 0.25, axis=-1) @ v
        return x + attn, attn.sum(axis=-1)

    args = [rand(2, 6, 16), rand(16, 16), rand(16, 16), rand(16, 16), rand(16), rand(16)]
    module, exe = build(block, *args)
    same(module, exe, args)


def test_small_cnn_equals_the_interpreter() -> None:
    def cnn(x: Any, w1: Any, b1: Any, w2: Any, fc: Any) -> Any:
        h = nn.max_pool2d(nn.relu(nn.conv2d(x, w1, b1, padding=1)), 2)
        h = nn.global_avg_pool2d(nn.relu(nn.conv2d(h, w2, stride=2, groups=2)))
        return h.reshape(h.shape[0], -1) @ fc

    args = [rand(2, 3, 8, 8), rand(4, 3, 3, 3), rand(4), rand(6, 2, 1, 1), rand(6, 5)]
    module, exe = build(cnn, *args)
    assert [s.kernel.rsplit("_", 1)[0] for s in exe.steps][:3] == ["conv2d", "relu", "max_pool2d"]
    same(module, exe, args)


def test_constants_of_every_layout_and_rank_zero() -> None:
    f_order = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))

    def fn(x: Any) -> Any:
        return (x @ f_order) * np.float32(0.5) + np.full((4,), 2, np.float32), (x > 0).astype(np.int32)

    module, exe = build(fn, rand(2, 3))
    assert sorted(a.shape for _, a in exe.constants) == [(), (), (3, 4), (4,)]
    assert all(a.flags.c_contiguous for _, a in exe.constants)
    same(module, exe, [rand(2, 3)])


def test_inputs_are_passed_without_copies(mlp_exe: tuple[Any, CpuExecutable], monkeypatch: pytest.MonkeyPatch) -> None:
    _, exe = mlp_exe
    seen: list[np.ndarray] = []
    real = cpu._address

    def spy(array: np.ndarray) -> int:
        seen.append(array)
        return real(array)

    monkeypatch.setattr(cpu, "_address", spy)
    x = rand(3, 16)
    for _ in range(2):  # the first run with these shapes also takes the constants' and arenas' addresses
        seen.clear()
        exe.run([x, *MLP_WEIGHTS])
    assert seen[0] is x and seen[1] is MLP_WEIGHTS[0]  # the pointers the kernels get are the caller's arrays'
    strided = rand(16, 3).T  # not C-contiguous: copied once, then correct
    np.testing.assert_allclose(exe.run([strided, *MLP_WEIGHTS])[0], exe.run([strided.copy(), *MLP_WEIGHTS])[0])


def test_memory_plan_reuses_slots_of_dead_buffers() -> None:
    def chain(x: Any) -> Any:
        return nn.exp(nn.relu(nn.sigmoid(nn.tanh(x) + 1.0)))

    module, exe = build(chain, rand(8, 4))
    kinds = [s.kernel.rsplit("_", 1)[0] for s in exe.steps]
    assert kinds == ["tanh", "add", "sigmoid", "relu", "exp"]
    pooled = [exe.memory.slots[b] for s in exe.steps[:-1] for b in s.outputs]
    assert pooled == [0, 0, 0, 0]  # each elementwise kernel writes over the input that dies with it
    assert exe.memory.slots[exe.outputs[0]] is None
    assert exe.peak_bytes() == 8 * 4 * 4
    assert exe.memory.describe(exe.buffers) == "128 bytes"
    same(module, exe, [rand(8, 4)])
    separate = CpuExecutable.build(module, memory_plan=False)
    assert separate.peak_bytes() == 4 * 8 * 4 * 4 and separate.memory.count == 4
    same(module, separate, [rand(8, 4)])


def test_in_place_needs_the_input_to_die_and_to_be_read_where_it_is_written() -> None:
    def fn(x: Any, w: Any) -> Any:
        a = nn.tanh(x)
        b = nn.sigmoid(a)  # a is read again below: no in place
        c = b @ w  # a matmul reads a whole row of b for each output: no in place
        return nn.relu(c) + a

    module, exe = build(fn, rand(6, 6), rand(6, 6))
    slots = {s.kernel.rsplit("_", 1)[0]: exe.memory.slots[s.outputs[0]] for s in exe.steps}
    assert slots["tanh"] != slots["sigmoid"] and slots["sigmoid"] != slots["matmul"]
    assert slots["relu"] == slots["matmul"]  # relu reads c only at the element it writes
    assert exe.kernels.kernels[exe.steps[0].kernel].inplace == frozenset({(0, 1)})
    assert exe.kernels.kernels[exe.steps[2].kernel].inplace == frozenset()
    same(module, exe, [rand(6, 6), rand(6, 6)])


def test_memory_plan_with_named_dims_and_mixed_slots() -> None:
    n = Sym("n")
    buffers = [TensorType((n, 4), f32), TensorType((n, 4), f32), TensorType((2, 3), f32), TensorType((n, 4), f32)]
    steps = [Step("a", (0,), (1,)), Step("b", (1,), (2,)), Step("c", (2,), (3,))]
    plan = MemoryPlan.build(buffers, steps, outputs=(3,))
    assert plan.slots == (None, 0, 1, None)
    assert plan.describe(buffers) == "24 + 16*n bytes"
    assert plan.slot_bytes(buffers, {"n": 10}) == [160, 24]
    shared = MemoryPlan.build(buffers, [Step("a", (0,), (2,)), Step("b", (2,), (1,)), Step("c", (1,), (3,))], (3,))
    assert shared.slots == (None, 1, 0, None)
    reuse = MemoryPlan.build(buffers, [*steps, Step("d", (3,), (1,))][1:], outputs=(1,))
    assert reuse.slots == (None, None, 0, 1)


def test_views_read_their_source_without_copies() -> None:
    def heads(x: Any) -> Any:
        qkv = nn.exp(x).reshape(3, 2, 4)  # a view of the exp's buffer
        q, k = qkv[0], qkv[1]  # views from elements 0 and 8
        return nn.softmax(q @ k.T, axis=-1) + 1.0

    module, exe = build(heads, rand(6, 4))
    assert [s.kernel.rsplit("_", 1)[0] for s in exe.steps] == ["exp", "transpose", "matmul", "softmax", "add"]
    assert len(exe.views) >= 3
    same(module, exe, [rand(6, 4)])


def test_views_with_named_dims() -> None:
    def fn(x: Any) -> Any:
        return nn.relu(nn.tanh(x).reshape(x.shape[0], 2, 4)) * 2.0

    module, exe = build(fn, rand(3, 8), dynamic={"x": {0: "n"}})
    assert exe.views and not exe._static
    for n in (1, 5):
        same(module, exe, [rand(n, 8)])


def test_a_view_keeps_its_source_alive_in_the_memory_plan() -> None:
    def fn(x: Any) -> Any:
        a = nn.exp(x)
        flat = a.reshape(32)  # read again at the very end
        b = nn.tanh(nn.sigmoid(nn.relu(x)))
        return b.reshape(32) + flat

    module, exe = build(fn, rand(8, 4))
    exp_out = exe.steps[0].outputs[0]
    view = next(v for v in exe.views if v.source == exp_out)
    others = [exe.memory.slots[b] for s in exe.steps[1:-1] for b in s.outputs]
    assert exe.memory.slots[exp_out] not in others
    assert exe.steps[-1].inputs[-1] == view.buffer
    same(module, exe, [rand(8, 4)])


def test_runs_reuse_their_arenas_and_may_overlap() -> None:
    def chain(x: Any) -> Any:
        return nn.exp(nn.relu(nn.sigmoid(nn.tanh(x) + 1.0)))

    module, exe = build(chain, rand(64, 32))
    inputs = [rand(64, 32) for _ in range(8)]
    first = exe.run([inputs[0]])[0]
    arenas = exe._arena_pool[0]
    second = exe.run([inputs[1]])[0]
    assert exe._arena_pool[0] is arenas and len(exe._arena_pool) == 1  # kept, not allocated again
    assert first is not second and not np.shares_memory(first, second)
    np.testing.assert_allclose(first, interp.run(module, [inputs[0]])[0], rtol=1e-5)
    results: dict[int, np.ndarray] = {}

    def work(n: int) -> None:
        for _ in range(20):
            results[n] = exe.run([inputs[n]])[0]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in range(8):
        np.testing.assert_allclose(results[n], interp.run(module, [inputs[n]])[0], rtol=1e-5)
    assert 1 <= len(exe._arena_pool) <= 8


def test_poisoned_buffers_show_elements_no_kernel_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    def chain(x: Any) -> Any:
        return nn.exp(nn.tanh(x) * 2.0) + 1.0

    module, exe = build(chain, rand(5, 7))
    exe.poison = True
    x = rand(5, 7)
    for _ in range(2):  # the second run refills the kept arenas
        same(module, exe, [x])
    assert exe.loop_ir.startswith("module")

    launch = exe._launch
    assert launch is not None
    monkeypatch.setattr(launch, "count", launch.count - 1)  # the last kernel never runs: its output keeps the poison
    assert np.isnan(exe.run([x])[0]).all()
    exe.poison = False
    monkeypatch.undo()
    same(module, exe, [x])


def test_run_checks_the_inputs(mlp_exe: tuple[Any, CpuExecutable]) -> None:
    _, exe = mlp_exe
    with pytest.raises(InterpreterError, match="the plan takes 4 inputs, got 1"):
        exe.run([rand(2, 16)])
    with pytest.raises(InterpreterError, match=r"input #0: expected dtype float32 for tensor<\[batch\]x16xf32>"):
        exe.run([rand(2, 16).astype(np.float64), *MLP_WEIGHTS])
    with pytest.raises(InterpreterError, match=r"input #1: expected shape tensor<16x32xf32>, got \[16, 31\]"):
        exe.run([rand(2, 16), rand(16, 31), *MLP_WEIGHTS[1:]])


def test_static_plans_give_new_outputs_every_run() -> None:
    w = rand(8)

    def fn(x: Any) -> Any:
        return nn.tanh(x) + w, x, np.arange(3, dtype=np.float32)

    module, exe = build(fn, rand(4, 8))
    x1, x2 = rand(4, 8), rand(4, 8)
    first = exe.run([x1])
    want = [a.copy() for a in first]
    second = exe.run([x2])
    assert not np.shares_memory(first[0], second[0])
    assert first[1] is x1 and second[1] is x2  # an input returned as is, as the interpreter does
    assert not np.shares_memory(first[2], second[2])  # a constant output is a copy
    first[2][:] = -1
    for got, expected in zip(first[:2], want[:2]):
        np.testing.assert_array_equal(got, expected)  # the second run left the first one's outputs alone
    same(module, exe, [x2])


def test_static_plans_check_and_convert_every_kind_of_input() -> None:
    _, exe = build(lambda x, y: x * y + 1.0, rand(3, 4), rand(3, 4))
    y = rand(3, 4)
    with pytest.raises(InterpreterError, match=r"input #1: expected shape tensor<3x4xf32>, got \[3, 5\] \(axis 1\)"):
        exe.run([rand(3, 4), rand(3, 5)])
    with pytest.raises(InterpreterError, match=r"input #0: expected dtype float32 for tensor<3x4xf32>, got float64"):
        exe.run([rand(3, 4).astype(np.float64), y])
    with pytest.raises(InterpreterError, match=r"input #0: expected rank 2 \(tensor<3x4xf32>\), got shape \[12\]"):
        exe.run([rand(12), y])
    with pytest.raises(InterpreterError, match="num_threads must be at least 1, got 0"):
        exe.run([rand(3, 4), y], num_threads=0)
    readonly = np.broadcast_to(rand(4), (3, 4))  # read-only and not C-ordered: copied
    frozen = rand(3, 4)
    frozen.flags.writeable = False
    for x in (rand(4, 3).T, readonly, frozen):
        np.testing.assert_allclose(exe.run([x, y])[0], x * y + 1.0, rtol=1e-6)
    _, empty = build(lambda x: x + 1.0, rand(0, 3))
    assert empty.run([rand(0, 3)])[0].shape == (0, 3)


def test_plans_with_named_dims_keep_a_launch_per_input_shapes(mlp_exe: tuple[Any, CpuExecutable]) -> None:
    module, exe = mlp_exe
    exe._launches.clear()
    for batch in (3, 5, 3, 1):
        same(module, exe, [rand(batch, 16), *MLP_WEIGHTS])
        assert exe.last_bindings == {"batch": batch}
    assert sorted(shapes[0] for shapes in exe._launches) == [(1, 16), (3, 16), (5, 16)]
    for batch in range(6, 6 + cpu.LAUNCHES_KEPT):
        exe.run([rand(batch, 16), *MLP_WEIGHTS])
    assert len(exe._launches) == cpu.LAUNCHES_KEPT and ((1, 16), *[w.shape for w in MLP_WEIGHTS]) not in exe._launches
    same(module, exe, [rand(2, 16), *MLP_WEIGHTS])


def test_an_anonymous_input_dim_gets_its_own_launch_on_shared_arenas() -> None:
    text = """
    func.func @main(%x: tensor<?x4xf32>) -> tensor<4xf32> {
      %0 = graph.reduce_sum %x {axes = [0]} : (tensor<?x4xf32>) -> tensor<4xf32>
      %1 = graph.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
      %2 = graph.tanh %1 : (tensor<4xf32>) -> tensor<4xf32>
      func.return %2 : tensor<4xf32>
    }
    """
    exe = CpuExecutable.build(tm.parse_module(text), disable=("fuse",))
    assert any(slot is not None for slot in exe.memory.slots)
    for rows in (3, 7, 3, 2):  # one set of arenas (no named dims), a program per launch
        x = rand(rows, 4)
        np.testing.assert_allclose(exe.run([x])[0], np.tanh(np.exp(x.sum(axis=0))), rtol=1e-5)
        assert exe.last_bindings == {}
    assert len(exe._launches) == 3 and len(exe._arena_pool) == 1


def test_named_dims_must_agree_across_inputs() -> None:
    module, exe = build(lambda a, b: a + b, rand(2, 3), rand(2, 3), dynamic={"a": {0: "n"}, "b": {0: "n"}})
    with pytest.raises(InterpreterError, match=r"input #1: dimension \[n\] is 4 here but 3 elsewhere"):
        exe.run([rand(3, 3), rand(4, 3)])
    same(module, exe, [rand(3, 3), rand(3, 3)])


def test_ops_the_lowering_refuses_name_the_op_and_location() -> None:
    module = tm.trace(lambda x: x[:2] * 2.0, rand(4, 3), dynamic={"x": {0: "n"}}).module
    with pytest.raises(LoweringError, match=r"test_cpu_runtime.py:\d+:\d+: cannot lower 'graph.slice' to loops"):
        CpuExecutable.build(module)


def test_result_dims_the_host_cannot_size_are_refused() -> None:
    text = """
    func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %0 = graph.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
      func.return %0 : tensor<?x4xf32>
    }
    """
    with pytest.raises(CompileError, match=r"step 'exp_0' writes buffer #1 of type tensor<\?x4xf32>: the host cannot"):
        CpuExecutable.build(tm.parse_module(text))


# --- files -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, mlp_exe: tuple[Any, CpuExecutable]) -> Path:
    return mlp_exe[1].to_files(tmp_path_factory.mktemp("exe") / "cpu")


def test_files_round_trip_without_code_generation(
    stored: Path, mlp_exe: tuple[Any, CpuExecutable], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(LLVMEmitter, "emit_modules", lambda *a: calls.append(a))
    monkeypatch.setattr(jit, "optimize", lambda *a: calls.append(a))
    assert sorted(p.name for p in stored.iterdir()) == ["kernels.mlir", "kernels.o", "plan.json"]
    loaded = CpuExecutable.from_files(stored)
    assert calls == []
    module, exe = mlp_exe
    assert loaded.kernels.object_code == exe.kernels.object_code
    assert loaded.loop_ir == exe.loop_ir and "func.func @matmul_0" in loaded.loop_ir
    assert loaded.steps == exe.steps and loaded.memory == exe.memory and loaded.target == host_target()
    same(module, loaded, [rand(6, 16), *MLP_WEIGHTS])


def test_constants_round_trip_through_files(tmp_path: Path) -> None:
    def fn(x: Any) -> Any:
        return x * np.arange(3, dtype=np.float32) + np.float32(7) + np.ones((2, 3), np.float32)

    module, exe = build(fn, rand(2, 3))
    loaded = CpuExecutable.from_files(exe.to_files(tmp_path))
    entries = json.loads((tmp_path / "plan.json").read_text())["constants"]
    assert [e["splat"] for e in entries] == [False, False, True]
    same(module, loaded, [rand(2, 3)])


def _copy(stored: Path, tmp_path: Path) -> Path:
    target = tmp_path / "cpu"
    target.mkdir()
    for p in stored.iterdir():
        (target / p.name).write_bytes(p.read_bytes())
    return target


def _edit(folder: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads((folder / "plan.json").read_text())
    edit(meta)
    (folder / "plan.json").write_text(json.dumps(meta))


def _flip(folder: Path) -> None:
    code = bytearray((folder / "kernels.o").read_bytes())
    code[len(code) // 2] ^= 0xFF
    (folder / "kernels.o").write_bytes(bytes(code))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_flip, r"kernels.o: corrupt object code \(its sha256 does not match plan.json\)"),
        (lambda p: (p / "kernels.o").unlink(), r"kernels.o: unreadable object code"),
        (lambda p: (p / "plan.json").unlink(), r"plan.json: missing"),
        (lambda p: (p / "plan.json").write_text("{"), r"plan.json: not valid JSON"),
        (lambda p: _edit(p, lambda m: m.update(format="x")), "not a Tensorium CPU executable"),
        (
            lambda p: _edit(p, lambda m: m.update(tensorium_version="0.0.1")),
            r"compiled by Tensorium 0.0.1, but this is Tensorium .*; compile the model again",
        ),
        (
            lambda p: _edit(p, lambda m: m["target"].update(cpu="future", features=["avx", "hyper-fma", "mega-vec"])),
            r"compiled for CPU 'future' with features this host \('.*'\) lacks: hyper-fma, mega-vec; compile",
        ),
        (lambda p: _edit(p, lambda m: m["target"].update(triple="riscv64-unknown-linux")), "compiled for riscv64"),
        (lambda p: _edit(p, lambda m: m["steps"][0].__setitem__(0, "nope")), "step 'nope' does not match"),
        (lambda p: _edit(p, lambda m: m["steps"][0][1].__setitem__(0, 2)), r"step 'matmul_0' passes buffer #2"),
        (lambda p: _edit(p, lambda m: m["kernels"][0].update(symbol="missing")), "the object code has no kernel"),
        (lambda p: _edit(p, lambda m: m.pop("buffers")), r"malformed plan \(KeyError: 'buffers'\)"),
        (lambda p: _edit(p, lambda m: m["object"].update(file="../x.o")), "the object file must lie in"),
        (lambda p: _edit(p, lambda m: m.update(views=[[0, 99, 0]])), "a view names a buffer that does not exist"),
    ],
)
def test_broken_files_give_clear_errors(stored: Path, tmp_path: Path, damage: Any, message: str) -> None:
    folder = _copy(stored, tmp_path)
    damage(folder)
    with pytest.raises(ExecutableError, match=message):
        CpuExecutable.from_files(folder)


def test_missing_features_are_the_enabled_ones_the_host_lacks() -> None:
    recorded = Target("cpu", "a", "t", ("x", "z"))
    assert recorded.missing_on(Target("cpu", "b", "t", ("x", "y"))) == ["z"]
    assert recorded.missing_on(Target("cpu", "b", "t", ("w", "x", "z"))) == []
