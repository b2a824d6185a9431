"""The gemm kernel family: its space per shape and target, the default rule, and random points run against numpy."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.cpu import CpuExecutable
from tensorium.backends.plan_runner import run_plan
from tensorium.errors import ScheduleError
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Operation
from tensorium.ir.dialects import graph
from tensorium.ir.dialects.builtin import func_body, functions
from tensorium.ir.types import Sym, TensorType, f16, f32
from tensorium.lowering import lower_function, lower_op
from tensorium.lowering.linalg import GemmShape, gemm_defaults, space_of
from tensorium.lowering.space import Config, default_config, kernel_key, kernel_space
from tensorium.passes import PassManager
from tensorium.targets import Target, host_target, parse_target
from tensorium.testing import build_module

TARGETS = ["cpu:x86-64", "cpu:x86-64-v3", "cpu:skylake-avx512", "cpu"]
RNG = np.random.default_rng(11)


def matmul_module(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], transpose_a: bool = False, transpose_b: bool = False
) -> Operation:
    types = [TensorType(a_shape, f32), TensorType(b_shape, f32)]
    return build_module(types, lambda x, y: graph.matmul(x, y, transpose_a=transpose_a, transpose_b=transpose_b))


def weight_module(x_shape: tuple[int, ...], w: np.ndarray, target: str) -> Operation:
    """``x @ w`` with ``w`` a constant, packed for ``target`` into a graph.matmul_packed."""
    module = build_module(
        [TensorType(x_shape, f32)],
        lambda v: graph.matmul(v, graph.constant(value=DenseAttr(w, TensorType(w.shape, f32)))),
    )
    PassManager.parse(f'pack-weights{{target="{target}"}}').run(module)
    return module


def product_of(module: Operation) -> Operation:
    return next(o for o in func_body(functions(module)[0]).ops if o.name in ("graph.matmul", "graph.matmul_packed"))


# --- the space and the default rule -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "mr", "nv", "nr"),
    [("cpu:skylake-avx512", 6, 4, 64), ("cpu:znver4", 6, 4, 64), ("cpu:x86-64-v3", 6, 2, 16), ("cpu:x86-64", 6, 2, 8)],
)
def test_default_rule_fills_the_register_file(target: str, mr: int, nv: int, nr: int) -> None:
    t = parse_target(target)
    config = default_config(product_of(matmul_module((256, 256), (256, 256))), t)
    assert config is not None and config.int("mr") == mr and config.int("nv") == nv
    assert config.int("nv") * t.lanes() == nr
    assert mr * nv + nv + 1 <= t.vector_registers  # the tile, a row of B and a broadcast of A
    assert config["pack_b"] == "panel" and config["split"] == "panels" and config.int("kc") == 0


def test_default_kc_keeps_the_panel_in_half_the_l2() -> None:
    t = parse_target("cpu:x86-64-v3")
    deep = gemm_defaults(GemmShape(m=512, n=512, k=1 << 16), t)
    kc = deep["kc"]
    assert isinstance(kc, int) and kc % 64 == 0 and 0 < kc * 16 * 4 <= t.l2 // 2
    assert gemm_defaults(GemmShape(m=512, n=512, k=256), t)["kc"] == 0


def test_narrow_and_short_products_get_narrow_tiles_and_pack_only_when_it_pays() -> None:
    t = parse_target("cpu:skylake-avx512")
    narrow = gemm_defaults(GemmShape(m=512, n=20, k=64), t)
    assert narrow["nv"] == 2 and narrow["split"] == "rows"
    assert narrow["pack_b"] == "global"  # a partial panel read in place would cost the tile its registers
    assert gemm_defaults(GemmShape(m=512, n=64, k=64), t)["pack_b"] == "none"
    assert gemm_defaults(GemmShape(m=4, n=512, k=64), t)["pack_b"] == "none"
    assert gemm_defaults(GemmShape(m=4, n=500, k=64), t)["pack_b"] == "panel"
    assert gemm_defaults(GemmShape(m=4, n=512, k=64, transpose_b=True), t)["pack_b"] == "panel"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    ("a_shape", "b_shape", "attrs"),
    [((13, 70), (70, 37), {}), ((2, 9, 70), (20, 70), {"transpose_b": True}), ((9, 33), (33, 1), {})],
    ids=["plain", "batched_transposed_b", "matvec"],
)
def test_space_enumerates_legal_distinct_points(
    target: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], attrs: dict[str, bool]
) -> None:
    t = parse_target(target)
    op = product_of(matmul_module(a_shape, b_shape, **attrs))
    space = kernel_space(op, t)
    assert space is not None and space.family == "gemm"
    points = list(space.points())
    assert len(points) == len(set(map(str, points))) == space.size() > 10
    default = default_config(op, t)
    assert default is not None and str(default) in set(map(str, points))
    for point in points:
        assert space.check(point) == point
        assert (point.int("nv") * t.lanes()) % t.lanes() == 0
        if attrs.get("transpose_b"):
            assert point["pack_b"] != "none"  # strided columns are always packed
    if b_shape[-1] == 1:
        algorithms = {p["algo"] for p in points}
        assert algorithms == {"blocked", "matvec"} and default["algo"] == "matvec"
        matvec = [p for p in points if p["algo"] == "matvec"]
        aligns = sorted({0, t.lanes() * 4, 64})
        assert len(matvec) == 4 * len(aligns) * 3 and {p.int("unroll") for p in matvec} == {1, 2, 4, 8}
        assert sorted({p.int("align") for p in matvec}) == aligns and {p.int("rows") for p in matvec} == {1, 2, 4}
        assert default.int("align") == (64 if t.lanes() == 16 else 0)
        assert (default.int("rows"), default.int("unroll")) == (4, 2)
        blocked = [p for p in points if p["algo"] == "blocked"]
        assert all(p.int("align") == 0 and p.int("unroll") == 1 and p.int("rows") == 1 for p in blocked)


def test_packed_products_have_their_width_fixed_by_the_constant() -> None:
    w = RNG.standard_normal((70, 40)).astype(np.float32)
    for target, panel in [("cpu:x86-64-v3", 16), ("cpu:skylake-avx512", 48)]:
        op = product_of(weight_module((9, 70), w, target))
        assert op.name == "graph.matmul_packed" and op.operands[1].type.shape[-1] == panel  # type: ignore[attr-defined]
        space = kernel_space(op, parse_target(target))
        assert space is not None
        knobs = {k.name: k.values for k in space.knobs}
        assert knobs["nv"] == (panel // parse_target(target).lanes(),) and "pack_b" not in knobs


def test_other_element_types_have_no_space() -> None:
    module = build_module([TensorType((4, 5), f16), TensorType((5, 3), f16)], lambda x, y: graph.matmul(x, y))
    op = product_of(module)
    assert kernel_space(op, host_target()) is None and default_config(op, host_target()) is None
    assert "config" not in lower_op(op).attributes


# --- configs -----------------------------------------------------------------------------------------------
def test_configs_print_and_parse_back() -> None:
    space = space_of(GemmShape(m=9, n=1, k=33), parse_target("cpu:x86-64-v3"))
    for point in list(space.points())[::7]:
        assert Config.parse(str(point)) == point and str(Config.parse(str(point))) == str(point)
    assert str(Config.parse(" gemm{mr=6, nv=2 ,kc=0,pack_b=panel,split=rows} ")) == (
        "gemm{mr=6,nv=2,kc=0,pack_b=panel,split=rows}"
    )


@pytest.mark.parametrize(
    ("text", "knob"),
    [
        ("gemm{mr=6,nv=5,kc=0,pack_b=panel,split=panels}", "nv=5"),
        ("gemm{mr=0,nv=2,kc=0,pack_b=panel,split=panels}", "mr=0"),
        ("gemm{mr=6,nv=2,kc=100,pack_b=panel,split=panels}", "kc=100"),
        ("gemm{mr=6,nv=2,kc=0,pack_b=none,split=panels}", "pack_b=none"),  # B is transposed
        ("gemm{mr=6,nv=2,kc=0,pack_b=panel,split=columns}", "split=columns"),
        ("gemm{mr=6,nv=2,kc=0,pack_b=panel}", "split"),
        ("gemm{mr=6,nv=2,kc=0,pack_b=panel,split=panels,unroll=4}", "unroll"),
    ],
)
def test_illegal_configs_name_their_knob(text: str, knob: str) -> None:
    op = product_of(matmul_module((9, 33), (20, 33), transpose_b=True))
    with pytest.raises(ScheduleError, match=knob):
        lower_op(op, target=parse_target("cpu:x86-64-v3"), config=Config.parse(text))


def test_kernel_key_is_the_same_in_different_modules() -> None:
    first = matmul_module((9, 33), (33, 20))
    second = build_module(
        [TensorType((9, 33), f32), TensorType((9, 33), f32), TensorType((33, 20), f32)],
        lambda x, y, w: graph.relu(graph.matmul(graph.add(x, y), w)),
    )
    assert kernel_key(product_of(first)) == kernel_key(product_of(second))
    assert kernel_key(product_of(first)) != kernel_key(product_of(matmul_module((9, 33), (33, 21))))


def test_compile_applies_a_schedule_by_kernel_key() -> None:
    def product(x: Any, y: Any) -> Any:
        return x @ y

    a, b = RNG.standard_normal((9, 70)).astype(np.float32), RNG.standard_normal((70, 40)).astype(np.float32)
    plain = tm.compile(product, cache=False)
    plain(a, b)
    (key,) = re.findall(r'key = "(\w+)"', plain.artifact.executable.loop_ir)
    point = "gemm{mr=3,nv=1,kc=64,pack_b=global,split=rows}"
    tuned = tm.compile(product, cache=False, schedules={key: point})
    np.testing.assert_allclose(tuned(a, b), a @ b, rtol=1e-5, atol=1e-4)
    assert f'config = "{point}"' in tuned.artifact.executable.loop_ir
    assert f'config = "{point}"' not in plain.artifact.executable.loop_ir


# --- random points compute the product ------------------------------------------------------------------
CASES: list[tuple[str, Callable[[str], tuple[Operation, list[np.ndarray], np.ndarray]]]] = []


def case(name: str) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    def register(fn: Callable[[str], Any]) -> Callable[[str], Any]:
        CASES.append((name, fn))
        return fn

    return register


@case("plain")
def _plain(target: str) -> tuple[Operation, list[np.ndarray], np.ndarray]:
    a, b = RNG.standard_normal((13, 150)).astype(np.float32), RNG.standard_normal((150, 37)).astype(np.float32)
    return matmul_module(a.shape, b.shape), [a, b], a @ b


@case("batched_transposed")
def _batched(target: str) -> tuple[Operation, list[np.ndarray], np.ndarray]:
    a, b = RNG.standard_normal((2, 7, 70)).astype(np.float32), RNG.standard_normal((2, 19, 70)).astype(np.float32)
    return matmul_module(a.shape, b.shape, transpose_b=True), [a, b], a @ np.swapaxes(b, -1, -2)


@case("transposed_a")
def _transposed_a(target: str) -> tuple[Operation, list[np.ndarray], np.ndarray]:
    a, b = RNG.standard_normal((70, 11)).astype(np.float32), RNG.standard_normal((70, 24)).astype(np.float32)
    return matmul_module(a.shape, b.shape, transpose_a=True), [a, b], a.T @ b


@case("matvec")
def _matvec(target: str) -> tuple[Operation, list[np.ndarray], np.ndarray]:
    a, b = RNG.standard_normal((3, 5, 133)).astype(np.float32), RNG.standard_normal((133, 1)).astype(np.float32)
    return matmul_module(a.shape, b.shape), [a, b], a @ b


@case("packed")
def _packed(target: str) -> tuple[Operation, list[np.ndarray], np.ndarray]:
    x, w = RNG.standard_normal((10, 70)).astype(np.float32), RNG.standard_normal((70, 45)).astype(np.float32)
    return weight_module(x.shape, w, target), [x], x @ w


def run_point(module: Operation, inputs: list[np.ndarray], target: Target, config: Config | None) -> np.ndarray:
    """The product at ``config``: compiled where the host runs the target's code, else on the loop interpreter."""
    configs = {} if config is None else {kernel_key(product_of(module)): config}
    if target.runs_here():
        (got,) = CpuExecutable.build(module, target=target, configs=configs).run(inputs)
    else:
        (got,) = run_plan(lower_function(module, target=target, configs=configs), inputs)
    return got  # type: ignore[no-any-return]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_random_points_compute_the_product(target: str, name: str) -> None:
    t = parse_target(target)
    module, inputs, want = dict(CASES)[name](target)
    space = kernel_space(product_of(module), t)
    assert space is not None
    rng = random.Random(f"{target}/{name}")
    points = [space.sample(rng) for _ in range(2)]
    if name == "matvec":
        points.append(next(p for p in space.points() if p["algo"] == "matvec" and p.int("unroll") == 8))
    for config in [None, *points]:
        got = run_point(module, inputs, t, config)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{target} {config}")


def test_points_on_the_loop_interpreter() -> None:
    t = parse_target("cpu:x86-64-v3")
    module, inputs, want = _batched("cpu:x86-64-v3")
    space = kernel_space(product_of(module), t)
    assert space is not None
    for config in [space.sample(random.Random(3)), Config.parse("gemm{mr=4,nv=1,kc=64,pack_b=panel,split=panels}")]:
        lowered = lower_function(module, target=t, configs={kernel_key(product_of(module)): config})
        (got,) = run_plan(lowered, inputs)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(config))


@pytest.mark.parametrize(
    "point",
    [
        None,
        "gemm{mr=6,nv=2,kc=64,pack_b=panel,split=panels}",
        "gemm{mr=8,nv=1,kc=0,pack_b=none,split=rows}",
    ],
)
def test_symbolic_sizes_take_every_tile_shape(point: str | None) -> None:
    """Rows and columns known only at run time: fewer rows than the tile (clamped), a last tile shifted up,
    a last narrower panel, and several contraction blocks, all from one kernel."""
    n, m = Sym("n"), Sym("m")
    module = matmul_module_of([TensorType((n, 70), f32), TensorType((70, m), f32)])
    configs = {} if point is None else {kernel_key(product_of(module)): Config.parse(point)}
    exe = CpuExecutable.build(module, configs=configs)
    for rows, cols in [(4, 5), (13, 40), (6, 16)]:
        a = RNG.standard_normal((rows, 70)).astype(np.float32)
        b = RNG.standard_normal((70, cols)).astype(np.float32)
        (got,) = exe.run([a, b])
        np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4, err_msg=f"{point} {rows}x{cols}")


def test_a_run_time_column_count_gets_half_as_many_vectors() -> None:
    """Symbolic columns need two copies of the tile (full and last panel), so the rule halves its width: the
    tiny GPT-2's dynamic attention kernel compiled in 1.0 s instead of 1.3 s, and ran as fast."""
    target = parse_target("cpu:skylake-avx512")
    static = gemm_defaults(GemmShape.of((7, 64), (64, 100), (7, 100), False, False, False), target)
    dynamic = gemm_defaults(GemmShape.of((7, 64), (64, Sym("n")), (7, Sym("n")), False, False, False), target)
    assert (static["nv"], dynamic["nv"]) == (4, 2) and static["mr"] == dynamic["mr"] == 6


def matmul_module_of(types: list[TensorType]) -> Operation:
    return build_module(types, lambda x, y: graph.matmul(x, y))


@pytest.mark.parametrize(
    "point", ["gemm{mr=5,nv=2,kc=64,pack_b=panel,split=panels}", "gemm{mr=6,nv=1,kc=128,pack_b=none,split=rows}"]
)
def test_fused_epilogue_with_contraction_blocks(point: str) -> None:
    """With kc blocks the kernel reads its partial sums back, so the bias and relu run once, on the total."""
    a, b = RNG.standard_normal((13, 150)).astype(np.float32), RNG.standard_normal((150, 37)).astype(np.float32)
    bias = RNG.standard_normal(37).astype(np.float32)
    module = build_module(
        [TensorType(a.shape, f32), TensorType(b.shape, f32), TensorType(bias.shape, f32)],
        lambda x, y, z: graph.relu(graph.add(graph.matmul(x, y), z)),
    )
    PassManager.parse("fuse").run(module)
    (fused,) = [o for o in func_body(functions(module)[0]).ops if o.name == "graph.fused"]
    exe = CpuExecutable.build(module, configs={kernel_key(fused): Config.parse(point)})
    (got,) = exe.run([a, b, bias])
    np.testing.assert_allclose(got, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)
