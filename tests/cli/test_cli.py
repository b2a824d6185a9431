"""The command line: opt round trips and pipelines, run-ir inputs and outputs, ops, and one-line errors."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorium as tm
from tensorium.backends.interp import round_to_bf16
from tensorium.cli import main

ROOT = Path(__file__).resolve().parents[2]

MODEL = """\
// a tiny model
func.func @main(%x: tensor<[n]x3xf32>, %w: tensor<3x2xf32>) -> (tensor<[n]x2xf32>, tensor<[n]x2xi1>) {
  %0 = graph.matmul %x, %w : (tensor<[n]x3xf32>, tensor<3x2xf32>) -> tensor<[n]x2xf32>
  %1 = graph.relu %0 : (tensor<[n]x2xf32>) -> tensor<[n]x2xf32>
  %2 = graph.lt %0, %1 : (tensor<[n]x2xf32>, tensor<[n]x2xf32>) -> tensor<[n]x2xi1>
  func.return %1, %2 : tensor<[n]x2xf32>, tensor<[n]x2xi1>
}
"""

REDUNDANT = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}
"""

OPTIMIZED = """\
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %1 : tensor<4xf32>
  }
}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def save(tmp_path: Path, name: str, array: np.ndarray) -> str:
    path = tmp_path / name
    np.save(path, array)
    return str(path)


# --- opt ----------------------------------------------------------------------------------------
def test_opt_without_passes_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "opt", write(tmp_path, "m.mlir", MODEL))
    assert (code, err) == (0, "")
    assert out == tm.print_module(tm.parse_module(MODEL))
    assert out.startswith("module {\n  func.func @main(%x: tensor<[n]x3xf32>, %w: tensor<3x2xf32>)")
    assert tm.print_module(tm.parse_module(out)) == out


def test_opt_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(REDUNDANT))
    code, out, _ = run_cli(capsys, "opt", "-", "--passes", "cse,dce")
    assert (code, out) == (0, OPTIMIZED)


def test_opt_stdin_errors_name_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("func.func @main() {\n  %0 = graph.relux : () -> ()\n}\n"))
    code, out, err = run_cli(capsys, "opt", "-")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == "<stdin>:2:8: error: unknown operation 'graph.relux' (did you mean 'graph.relu'?)"


def test_opt_runs_a_pipeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "opt", write(tmp_path, "m.mlir", REDUNDANT), "--passes", "cse,dce")
    assert (code, out, err) == (0, OPTIMIZED, "")


def test_opt_writes_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", REDUNDANT)
    out_path = tmp_path / "sub" / "o.mlir"
    out_path.parent.mkdir()
    out_path.write_text("old contents")
    code, out, err = run_cli(capsys, "opt", src, "--passes", "cse,dce", "-o", str(out_path))
    assert (code, out, err) == (0, "", "")
    assert out_path.read_text() == OPTIMIZED
    assert Path(src).read_text() == REDUNDANT
    assert sorted(p.name for p in out_path.parent.iterdir()) == ["o.mlir"]
    out_path.chmod(0o640)
    assert run_cli(capsys, "opt", src, "-o", str(out_path))[0] == 0
    assert out_path.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "fresh.mlir"
    assert run_cli(capsys, "opt", src, "-o", str(fresh))[0] == 0
    assert fresh.stat().st_mode & 0o777 == Path(src).stat().st_mode & 0o777


def test_opt_overwrites_its_input_only_when_told(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", REDUNDANT)
    assert run_cli(capsys, "opt", src, "--passes", "cse,dce")[0] == 0
    assert Path(src).read_text() == REDUNDANT
    assert run_cli(capsys, "opt", src, "--passes", "cse,dce", "-o", src)[:2] == (0, "")
    assert Path(src).read_text() == OPTIMIZED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]


def test_opt_output_error_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", REDUNDANT)
    code, out, err = run_cli(capsys, "opt", src, "-o", str(tmp_path / "missing" / "o.mlir"))
    assert (code, out) == (1, "")
    assert err.startswith("tensorium: error: ") and "No such file or directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]
    code, _, err = run_cli(capsys, "opt", src, "-o", str(tmp_path))
    assert (code, err) == (1, f"tensorium: error: {tmp_path}: is a directory\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mlir"]


def test_print_ir_after_all_and_timing_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", REDUNDANT)
    code, out, err = run_cli(capsys, "opt", src, "--passes", "cse,dce", "--print-ir-after-all", "--timing")
    assert (code, out) == (0, OPTIMIZED)
    dumps = err.split("// -----// IR Dump After ")
    assert dumps[0] == ""
    assert dumps[1].startswith("cse //----- //\nmodule {\n")
    assert "graph.relu" in dumps[1] and "%1 = graph.add %0, %0" in dumps[1]
    assert dumps[2].startswith("dce //----- //\n" + OPTIMIZED)
    table = dumps[2][len("dce //----- //\n" + OPTIMIZED) :].strip().splitlines()
    assert table[0].split() == ["pass", "wall", "(ms)", "%"]
    assert [row.split()[0] for row in table[1:]] == ["cse", "dce", "total"]
    assert table[-1].split()[-1] == "100.0"


def test_verify_each_adds_a_verify_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", REDUNDANT)
    code, out, err = run_cli(capsys, "opt", src, "--passes", "cse", "--verify-each", "--timing")
    assert code == 0 and "graph.relu" in out
    assert [row.split()[0] for row in err.splitlines()[1:]] == ["cse", "(verify)", "total"]


INVALID = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def test_no_verify_prints_invalid_ir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "bad.mlir", INVALID)
    code, out, err = run_cli(capsys, "opt", src, "--no-verify")
    assert (code, err) == (0, "")
    assert "%0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>" in out
    code, out, err = run_cli(capsys, "opt", src)
    assert (code, out) == (1, "")
    assert err == (
        f"{src}:2:8: error: 'graph.cast' op requires attribute 'dtype' (an element type)\n"
        "    %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf32>\n"
        "         ^\n"
    )


# --- errors -------------------------------------------------------------------------------------
def test_malformed_ir_gives_one_located_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "bad.mlir", "func.func @main(%x: tensor<4xf32>) {\n  %0 = graph.relux %x : () -> ()\n}\n")
    code, out, err = run_cli(capsys, "opt", src)
    assert (code, out) == (1, "")
    assert err == (
        f"{src}:2:8: error: unknown operation 'graph.relux' (did you mean 'graph.relu'?)\n"
        "    %0 = graph.relux %x : () -> ()\n"
        "         ^\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["opt", "{dir}/nope.mlir"], "tensorium: error: {dir}/nope.mlir: No such file or directory"),
        (["opt", "{dir}"], "tensorium: error: {dir}: Is a directory"),
        (["opt", "{dir}/binary.mlir"], "tensorium: error: {dir}/binary.mlir: not UTF-8 text"),
        (["run-ir", "{dir}/nope.mlir"], "tensorium: error: {dir}/nope.mlir: No such file or directory"),
    ],
)
def test_file_and_request_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "binary.mlir").write_bytes(b"\xff\xfe\x00")
    code, out, err = run_cli(capsys, *[a.format(dir=tmp_path) for a in argv])
    assert (code, out, err) == (1, "", message.format(dir=tmp_path) + "\n")


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("cse,bogus", "pipeline column 5: unknown pass 'bogus'"),
        ("cse{max=1}", "pipeline column 5: pass 'cse' takes no options, got 'max'"),
        ("cse,", "pipeline column 5: expected a pass name"),
    ],
)
def test_bad_pipeline(tmp_path: Path, capsys: pytest.CaptureFixture[str], pipeline: str, message: str) -> None:
    code, out, err = run_cli(capsys, "opt", write(tmp_path, "m.mlir", REDUNDANT), "--passes", pipeline)
    assert (code, out) == (1, "")
    assert err.startswith("tensorium: error: " + message)
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["opt"], "the following arguments are required: FILE"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        (["opt", "m.mlir", "--bogus"], "unrecognized arguments: --bogus"),
        (["run-ir", "m.mlir", "--input", "x"], "argument --input: expected NAME=VALUE, got 'x'"),
        (["run-ir", "m.mlir", "--input", "=a.npy"], "argument --input: expected NAME=VALUE, got '=a.npy'"),
        (["run-ir", "m.mlir", "--dim", "n=-3"], "argument --dim: dimension size must be a non-negative integer"),
        (["run-ir", "m.mlir", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: tensorium") and message in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"tensorium {tm.__version__}\n"


# --- run-ir -------------------------------------------------------------------------------------
def _expected(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = x @ w
    r = np.maximum(y, 0)
    return r, y < r


def test_run_ir_with_named_and_positional_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", MODEL)
    x = np.array([[1, -2, 3], [0.5, 0, -1]], np.float32)
    w = np.array([[1, -1], [2, 0], [0, 1]], np.float32)
    out_dir = tmp_path / "out"
    argv = [
        "run-ir",
        src,
        "--input",
        f"x={save(tmp_path, 'x.npy', x)}",
        "--input",
        f"arg1={save(tmp_path, 'w.npy', w)}",
    ]
    code, out, err = run_cli(capsys, *argv, "--output-dir", str(out_dir))
    assert (code, err) == (0, "")
    relu, gt = _expected(x, w)
    assert out == (
        "output0: shape [2, 2], dtype f32, values [0.0, 2.0, 0.5, 0.0]\n"
        "output1: shape [2, 2], dtype i1, values [true, false, false, true]\n"
    )
    np.testing.assert_array_equal(np.load(out_dir / "output0.npy"), relu)
    np.testing.assert_array_equal(np.load(out_dir / "output1.npy"), gt)
    assert np.load(out_dir / "output1.npy").dtype == np.bool_


def test_run_ir_random_inputs_are_deterministic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = """\
func.func @main(%x: tensor<[n]x3xf32>, %k: tensor<[n]xu5>, %b: tensor<2xbf16>) -> (tensor<[n]x3xf32>, \
tensor<[n]xu5>, tensor<2xbf16>, tensor<[n]x3xf32>) {
  %0 = graph.relu %x : (tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
  func.return %x, %k, %b, %0 : tensor<[n]x3xf32>, tensor<[n]xu5>, tensor<2xbf16>, tensor<[n]x3xf32>
}
"""
    src = write(tmp_path, "m.mlir", text)
    outs = []
    for seed, name in ((7, "a"), (7, "b"), (8, "c")):
        code, out, err = run_cli(
            capsys,
            "run-ir",
            src,
            "--random-inputs",
            "--dim",
            "n=5",
            "--seed",
            str(seed),
            "--output-dir",
            str(tmp_path / name),
        )
        assert (code, err) == (0, "")
        outs.append([np.load(tmp_path / name / f"output{i}.npy") for i in range(4)])
        assert [line.split(", dtype")[0] for line in out.splitlines()] == [
            "output0: shape [5, 3]",
            "output1: shape [5]",
            "output2: shape [2]",
            "output3: shape [5, 3]",
        ]
    (x, k, b, r), same, other = outs
    assert x.dtype == np.float32 and k.dtype == np.uint8 and b.dtype == np.float32
    np.testing.assert_array_equal(r, np.maximum(x, 0))
    assert k.max() <= 31
    np.testing.assert_array_equal(b, round_to_bf16(b))
    for u, v in zip(outs[0], same):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(x, other[0])


def test_random_inputs_fill_only_missing_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", MODEL)
    x = np.ones((4, 3), np.float32)
    code, out, _ = run_cli(capsys, "run-ir", src, "--input", f"x={save(tmp_path, 'x.npy', x)}", "--random-inputs")
    assert code == 0
    assert out.splitlines()[0].startswith("output0: shape [4, 2], dtype f32, values [")


def test_run_ir_picks_the_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = REDUNDANT.replace("@main", "@first") + REDUNDANT.replace("@main", "@second").replace("graph.add", "graph.sub")
    src = write(tmp_path, "two.mlir", two)
    x = save(tmp_path, "x.npy", np.array([1, -2, 3, 4], np.float32))
    code, out, err = run_cli(capsys, "run-ir", src, "--input", f"x={x}")
    assert (code, out) == (1, "")
    assert (
        err
        == "tensorium: error: the module has no @main and several functions (@first, @second): pick one with --func\n"
    )
    assert run_cli(capsys, "run-ir", src, "--func", "second", "--input", f"x={x}")[1] == (
        "output0: shape [4], dtype f32, values [0.0, 0.0, 0.0, 0.0]\n"
    )
    only = write(tmp_path, "one.mlir", REDUNDANT.replace("@main", "@only"))
    assert run_cli(capsys, "run-ir", only, "--input", f"x={x}")[1] == (
        "output0: shape [4], dtype f32, values [-2.0, 4.0, -6.0, -8.0]\n"
    )


def test_run_ir_summary_shows_few_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = """\
func.func @main(%x: tensor<10xf32>) -> tensor<10xi3> {
  %0 = graph.cast %x {dtype = i3} : (tensor<10xf32>) -> tensor<10xi3>
  func.return %0 : tensor<10xi3>
}
"""
    x = np.arange(10, dtype=np.float32) - 2.5
    code, out, _ = run_cli(
        capsys, "run-ir", write(tmp_path, "m.mlir", text), "--input", f"x={save(tmp_path, 'x.npy', x)}"
    )
    assert (code, out) == (0, "output0: shape [10], dtype i3, values [-2, -1, 0, 0, 1, 2, ...]\n")


@pytest.mark.parametrize(
    ("inputs", "extra", "message"),
    [
        (
            {"x": np.zeros((2, 3), np.float32)},
            [],
            "@main: missing input w (give --input NAME=FILE.npy or --random-inputs)",
        ),
        ({}, [], "@main: missing inputs x, w (give --input NAME=FILE.npy or --random-inputs)"),
        ({"y": np.zeros(3, np.float32)}, [], "@main has no input 'y'; its inputs are x, w"),
        ({"arg2": np.zeros(3, np.float32)}, [], "@main has no input 'arg2'; its inputs are x, w"),
        (
            {"x": np.zeros((2, 3), np.float64)},
            ["--random-inputs"],
            "input 'x' ({dir}/x.npy): expected dtype float32 for tensor<[n]x3xf32>, got float64",
        ),
        (
            {"w": np.zeros((3, 3), np.float32)},
            ["--random-inputs", "--dim", "n=2"],
            "input 'w' ({dir}/w.npy): expected shape tensor<3x2xf32>, got [3, 3] (axis 1)",
        ),
        (
            {"w": np.zeros((3,), np.float32)},
            ["--random-inputs", "--dim", "n=2"],
            "input 'w' ({dir}/w.npy): expected rank 2 (tensor<3x2xf32>), got shape [3]",
        ),
        (
            {"x": np.zeros((2, 3), np.float32)},
            ["--random-inputs", "--dim", "n=4"],
            "input 'x' ({dir}/x.npy): dimension [n] is 2 here but 4 elsewhere (axis 0)",
        ),
        ({}, ["--random-inputs"], "input 'x' (tensor<[n]x3xf32>) needs the size of [n]: pass --dim n=SIZE"),
        ({}, ["--func", "other"], "no function @other; the module has @main"),
    ],
)
def test_run_ir_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], inputs: dict[str, np.ndarray], extra: list[str], message: str
) -> None:
    argv = ["run-ir", write(tmp_path, "m.mlir", MODEL), *extra]
    for name, array in inputs.items():
        argv += ["--input", f"{name}={save(tmp_path, name + '.npy', array)}"]
    code, out, err = run_cli(capsys, *argv)
    assert (code, out, err) == (1, "", f"tensorium: error: {message.format(dir=tmp_path)}\n")


def test_run_ir_file_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path, "m.mlir", MODEL)
    x = save(tmp_path, "x.npy", np.zeros((1, 3), np.float32))
    (tmp_path / "junk.npy").write_text("not numpy")
    cases = [
        (["--input", f"x={x}", "--input", f"arg0={x}"], "input 'x' is given twice"),
        (["--input", f"x={tmp_path}/gone.npy"], f"{tmp_path}/gone.npy: No such file or directory"),
    ]
    for extra, message in cases:
        assert run_cli(capsys, "run-ir", src, *extra) == (1, "", f"tensorium: error: {message}\n")
    code, _, err = run_cli(capsys, "run-ir", src, "--input", f"x={tmp_path}/junk.npy")
    assert code == 1 and err.startswith(f"tensorium: error: {tmp_path}/junk.npy: not a .npy array file (")


def test_run_ir_anonymous_dims_need_real_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "func.func @main(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {\n  func.return %x : tensor<2x?xf32>\n}\n"
    code, _, err = run_cli(capsys, "run-ir", write(tmp_path, "m.mlir", text), "--random-inputs")
    assert code == 1
    assert err == "tensorium: error: input 'x' (tensor<2x?xf32>) has a '?' dimension (axis 1); give it with --input\n"


def test_run_ir_interpreter_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = """\
func.func @main(%x: tensor<[n]xf32>, %y: tensor<[m]xf32>) -> tensor<[n]xf32> {
  %0 = graph.add %x, %y : (tensor<[n]xf32>, tensor<[m]xf32>) -> tensor<[n]xf32>
  func.return %0 : tensor<[n]xf32>
}
"""
    src = write(tmp_path, "m.mlir", text)
    code, out, err = run_cli(capsys, "run-ir", src, "--random-inputs", "--dim", "n=3", "--dim", "m=2")
    assert (code, out) == (1, "")
    assert err.startswith(f"tensorium: error: {src}:2:8: 'graph.add' failed: operands could not be broadcast")


# --- ops ----------------------------------------------------------------------------------------
def test_ops_unknown_dialect(capsys: pytest.CaptureFixture[str]) -> None:
    dialects = sorted({d.dialect for d in tm.ir.registered_ops()})
    assert {"builtin", "func", "graph"} <= set(dialects)
    code, out, err = run_cli(capsys, "ops", "--dialect", "nope")
    assert (code, out, err) == (1, "", f"tensorium: error: no dialect 'nope'; dialects are {', '.join(dialects)}\n")


def test_ops_lists_signatures_traits_and_docs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ops", "--dialect", "graph")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    i = lines.index("graph.matmul(lhs, rhs) {transpose_a = false, transpose_b = false}")
    assert lines[i + 1] == "    traits: pure"
    assert lines[i + 2].startswith("    Batched matrix product")
    assert "graph.cast(x) {dtype: element type}" in lines
    assert "graph.clamp(x) {min?, max?}" in lines
    assert "graph.einsum(*inputs) {equation: string}" in lines
    assert not any(line.startswith("func.") for line in lines)
    code, everything, _ = run_cli(capsys, "ops")
    assert code == 0 and "func.return(*values)" in everything.splitlines() and out.splitlines()[0] in everything


# --- the entry point ----------------------------------------------------------------------------
def _subprocess(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorium", *argv], input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    ok = _subprocess("opt", "-", "--passes", "cse,dce", stdin=REDUNDANT)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, OPTIMIZED, "")
    bad = _subprocess("opt", write(tmp_path, "bad.mlir", "func.func @main( {\n"))
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith(f"{tmp_path}/bad.mlir:1:18: error: unexpected '{{'")
    assert "Traceback" not in bad.stderr


# --- the documentation --------------------------------------------------------------------------
def test_docs_examples_are_real(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (ROOT / "docs" / "cli.md").read_text()
    model, optimized = [block.split("```", 1)[0] for block in doc.split("```mlir\n")[1:3]]
    monkeypatch.chdir(tmp_path)
    Path("model.mlir").write_text(model)
    np.save("x.npy", np.array([[1, -2, 3], [0.5, 0, -1]], np.float32))
    np.save("w.npy", np.array([[1, -1], [2, 0], [0, 1]], np.float32))
    Path("bad.mlir").write_text(model.replace("graph.relu %0", "graph.relux %0", 1))
    commands = [
        ("opt model.mlir --passes cse,dce", optimized),
        ("run-ir model.mlir --input x=x.npy --input w=w.npy --output-dir out", None),
        ("run-ir model.mlir --random-inputs --dim n=4 --seed 1", None),
        ("run-ir model.mlir --input x=w.npy --random-inputs", None),
        ("opt bad.mlir", None),
        ("run-ir model.mlir", None),
        ("opt missing.mlir", None),
    ]
    for command, expected in commands:
        code, out, err = run_cli(capsys, *command.split())
        shown = expected if expected is not None else out + err
        assert f"$ tensorium {command}\n{'' if expected is not None else shown}" in doc
        assert shown == (out if code == 0 else err)
    np.testing.assert_array_equal(np.load("out/output0.npy"), [[0, 4], [1, 0]])
