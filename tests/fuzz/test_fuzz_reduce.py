"""Reduction of failing cases, and the case file format that replays them."""

from __future__ import annotations

import pytest

import tensorium as tm
from tensorium.errors import ParseError
from tensorium.fuzz.generator import generate_module
from tensorium.fuzz.oracle import Failure, FuzzCase, check
from tensorium.fuzz.reduce import format_case, parse_case, read_case, reduce_case

BIG_ADD = """
module {
  func.func @main(%x: tensor<4x3xf32>, %y: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
    %0 = graph.tanh %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %1 = graph.sigmoid %0 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %2 = graph.mul %1, %0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %3 = graph.add %2, %y : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %4 = graph.relu %3 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %5 = graph.reduce_sum %1 {axes = [1]} : (tensor<4x3xf32>) -> tensor<4xf32>
    %6 = graph.neg %5 : (tensor<4xf32>) -> tensor<4xf32>
    func.return %4, %6 : tensor<4x3xf32>, tensor<4xf32>
  }
}
"""


def test_a_mismatch_reduces_to_the_one_op_and_the_one_pass_that_show_it(drop_adds: str) -> None:
    case = FuzzCase(BIG_ADD, f"canonicalize,cse,{drop_adds},fold{{max-elements=8}},dce", seed=1, backends=("interp",))
    verdict = check(case)
    assert verdict.failure is not None and verdict.failure.kind == "mismatch"
    reduced = reduce_case(case, verdict.failure, seconds=60)
    assert reduced.pipeline == drop_adds
    module = tm.parse_module(reduced.module)
    names = [op.name for op in module.walk() if op.name.startswith("graph.")]
    assert names == ["graph.add"], reduced.module
    again = check(reduced)
    assert again.failure is not None and again.failure.kind == "mismatch"


def test_a_crash_keeps_its_site_while_reducing(crash_on_tanh: str) -> None:
    module = tm.print_module(generate_module(4, 14)).replace("graph.sigmoid", "graph.tanh")
    if "graph.tanh" not in module:
        module = BIG_ADD
    case = FuzzCase(module, f"cse,{crash_on_tanh},dce", seed=2, backends=("interp",))
    failure = check(case).failure
    assert failure is not None and failure.kind == "crash"
    reduced = reduce_case(case, failure, seconds=60)
    assert reduced.pipeline == crash_on_tanh
    names = [op.name for op in tm.parse_module(reduced.module).walk() if op.name.startswith("graph.")]
    assert names == ["graph.tanh"]


def test_case_files_round_trip_with_their_header() -> None:
    case = FuzzCase(BIG_ADD.strip() + "\n", "canonicalize,fuse{max-ops=3}", seed=12, backends=("interp",))
    text = format_case(case, note="a note\non two lines")
    assert text.startswith("// a note\n// on two lines\n// pipeline: canonicalize,fuse{max-ops=3}\n// seed: 12\n")
    back = parse_case(text)
    assert (back.pipeline, back.seed, back.backends) == (case.pipeline, 12, ("interp",))
    assert tm.print_module(tm.parse_module(back.module)) == tm.print_module(tm.parse_module(case.module))


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("", "case.mlir: no '// pipeline: ...' header line"),
        ("// pipeline: cse\n// seed: x\n", "case.mlir: the '// seed:' header must be a non-negative integer, got 'x'"),
        ("// pipeline: cse\n// backends: gpu\n", "case.mlir: unknown backend 'gpu' in '// backends:'"),
        ("// pipeline: cse{nope=1}\n", "pass 'cse' takes no options, got 'nope'"),
    ],
)
def test_bad_case_files_say_what_is_wrong(tmp_path, header: str, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "case.mlir"
    path.write_text(header + BIG_ADD)
    with pytest.raises(Exception) as info:
        read_case(path)
    assert message in str(info.value)
    assert isinstance(info.value, ParseError) or "pipeline column" in str(info.value)


CODES = "tensor<4x!quant<i1:f32, per_tensor>>"
UNSPELLABLE = f"""module {{
  func.func @main() -> {CODES} {{
    %0 = graph.constant {{value = dense<[-4, 4, 0, -1]> : {CODES}}} : () -> {CODES}
    func.return %0 : {CODES}
  }}
}}"""


def test_a_case_whose_text_does_not_parse_is_kept_as_it_is() -> None:
    """The round trip reports a program its own text cannot spell (1-bit codes of -4 and 4, which a generator bug
    made in memory); reducing it must not raise, or the whole fuzzing process dies with the case unrecorded."""
    case = FuzzCase(UNSPELLABLE, "canonicalize", backends=("interp",))
    failure = Failure("roundtrip", "parse", "value -4 is out of range", "")
    assert reduce_case(case, failure, seconds=5) is case
