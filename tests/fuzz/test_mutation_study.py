"""The mutation study's harness on small made-up inputs (a real study runs for an hour: benchmarks/fuzzing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.fuzzing.mutation_study import (
    ROOT,
    TARGETS,
    TEST_MAP,
    Mutant,
    ResultsFile,
    Selection,
    StudyError,
    enclosing_function,
    failing_tests,
    folders_for,
    hunk,
    main,
    module_name,
    only_annotations_differ,
    package_of,
    read_results,
    regression_case,
    regression_name,
    report,
    same_bytecode,
    select_tests,
    statement_lines,
    unreached,
)

SOURCE = '''"""A module."""

LIMIT = 4


def clamp(x, lo):
    if x < lo:
        return lo
    total = (x +
             lo)
    return total
'''


def _mutant(
    mid: str = "m001", path: str = "tensorium/passes/cse.py", old: str = "x < lo", new: str = "x > lo"
) -> Mutant:
    o, n, line, span = hunk(SOURCE, SOURCE.replace(old, new))
    return Mutant(mid, path, "core/ReplaceComparisonOperator_Lt_Gt", 0, line, "clamp", o, n, span)


def test_a_mutant_is_its_lines_with_context_and_applies_to_a_later_version_of_the_file(tmp_path: Path) -> None:
    m = _mutant()
    assert m.line == 7 and m.span == 1
    assert m.diff() == "-    if x < lo:\n+    if x > lo:\n"
    later = "import os\n" + SOURCE  # a line added above: the mutant still finds its place
    assert m.line_in(SOURCE) == 7 and m.line_in(later) == 8
    assert "if x > lo:" in m.mutate(later) and m.mutate(later).startswith("import os\n")
    with pytest.raises(StudyError, match=r"m001: its lines of tensorium/passes/cse.py are not found once"):
        m.mutate(SOURCE.replace("return lo", "return 0"))
    target = tmp_path / "tensorium" / "passes" / "cse.py"
    target.parent.mkdir(parents=True)
    target.write_text(SOURCE)
    with m.applied(tmp_path):
        assert "if x > lo:" in target.read_text()
    assert target.read_text() == SOURCE


def test_same_bytecode_ignores_layout_but_not_a_changed_operator() -> None:
    assert same_bytecode("def f(a, b):\n    return a + b\n", "def f(a, b):\n\n    return (a +\n            b)\n")
    assert not same_bytecode("def f(a, b):\n    return a + b\n", "def f(a, b):\n    return a - b\n")
    assert not same_bytecode("x = 1\n", "x = 2\n")


def test_a_change_to_an_annotation_that_is_never_evaluated_is_equivalent() -> None:
    future = "from __future__ import annotations\n\n\ndef f(a: int | None) -> int | None:\n"
    future += "    b: int | None = a\n    return b\n"
    for old, new in (("a: int | None", "a: int % None"), ("-> int | None", "-> int ^ None"), ("b: int |", "b: int &")):
        assert only_annotations_differ(future, future.replace(old, new))
    assert not only_annotations_differ(future, future.replace("= a", "= None"))
    evaluated = future.removeprefix("from __future__ import annotations\n")  # annotations run at import
    assert not only_annotations_differ(evaluated, evaluated.replace("a: int | None", "a: int % None"))


def test_statement_lines_name_the_line_coverage_records_and_whether_it_runs_at_import() -> None:
    assert statement_lines(SOURCE, 7, 1) == ({7}, False)
    assert statement_lines(SOURCE, 10, 1) == ({9}, False)  # the second line of a statement: its first line
    assert statement_lines(SOURCE, 3, 1) == ({3}, True)  # a module constant
    assert statement_lines(SOURCE, 6, 1) == ({6}, True)  # a def line (its defaults) runs at import


def test_a_mutant_runs_the_tests_of_its_folders_that_reach_its_line() -> None:
    contexts = {
        7: ["", "tests/passes/test_a.py::test_one|run", "tests/passes/test_a.py::test_two|setup"],
        9: ["tests/lowering/test_b.py::test_three|run", "tests/fuzz/test_c.py::test_four|run"],
    }
    assert select_tests(_mutant(), SOURCE, contexts) == [
        "tests/passes/test_a.py::test_one",
        "tests/passes/test_a.py::test_two",
    ]
    tail = _mutant(old="x +\n             lo", new="x -\n             lo")
    assert select_tests(tail, SOURCE, contexts) == ["tests/lowering/test_b.py::test_three"]  # never tests/fuzz
    constant = _mutant(old="LIMIT = 4", new="LIMIT = 5")
    assert select_tests(constant, SOURCE, contexts) == ["tests/passes", "tests/lowering"]
    assert select_tests(_mutant(), SOURCE, {}) == []


def test_a_mutant_in_a_function_the_fuzzer_never_called_is_not_reached() -> None:
    decorated = (
        "import functools\n\n\n@functools.cache\ndef g(x):\n    def inner():\n        return x\n    return inner\n"
    )
    assert enclosing_function(decorated, 7) == 6  # the innermost function
    assert enclosing_function(decorated, 8) == 4  # a decorated function's code starts at its decorator
    assert enclosing_function(SOURCE, 3) is None
    m = _mutant()  # in clamp, whose code starts at line 6
    assert unreached(m, SOURCE, {"tensorium/passes/cse.py": [2, 9]})
    assert not unreached(m, SOURCE, {"tensorium/passes/cse.py": [6]})
    assert not unreached(_mutant(old="LIMIT = 4", new="LIMIT = 5"), SOURCE, {})  # module level always runs


def test_every_target_has_test_folders_that_exist_and_are_not_the_fuzzer_s() -> None:
    for target in TARGETS:
        for path in (ROOT / target).rglob("*.py") if (ROOT / target).is_dir() else [ROOT / target]:
            rel = str(path.relative_to(ROOT))
            folders = folders_for(rel)
            assert folders and all((ROOT / f).is_dir() and not f.startswith("tests/fuzz") for f in folders), rel
            assert package_of(rel) in ("passes", "lowering", "backends/llvm", "canonical")
    assert folders_for("tensorium/passes/quantize.py")[0] == "tests/quant"
    assert folders_for("tensorium/lowering/webgpu_limits.py")[0] == "tests/webgpu"
    with pytest.raises(StudyError, match=r"tensorium/api.py: no test folders"):
        folders_for("tensorium/api.py")
    assert module_name("tensorium/lowering/__init__.py") == "tensorium.lowering"
    assert len({prefix for prefix, _ in TEST_MAP}) == len(TEST_MAP)


def test_failing_tests_are_read_from_pytest_s_summary() -> None:
    log = "....F\nFAILED tests/a.py::test_x[1-2] - AssertionError: no\nERROR tests/b.py::test_y\n1 failed\n"
    assert failing_tests(log) == ["tests/a.py::test_x[1-2]", "tests/b.py::test_y"]
    selection = Selection({"m001": ["tests/passes/test_a.py::test_one"]}, ("tests/a.py::test_x",))
    assert selection.tests(_mutant()) == ["tests/passes/test_a.py::test_one"]
    assert selection.tests(_mutant("m002")) == ["tests/passes", "tests/lowering"]


def test_results_are_appended_per_mutant_and_read_back_for_resuming(tmp_path: Path) -> None:
    path = tmp_path / "suite.jsonl"
    assert read_results(path) == {}
    results = ResultsFile(path)
    results.append({"id": "m001", "verdict": "survived"})
    results.append({"id": "m002", "verdict": "killed"})
    results.append({"id": "m001", "verdict": "killed"})
    assert {k: v["verdict"] for k, v in read_results(path).items()} == {"m001": "killed", "m002": "killed"}


def _sample(mutants: list[Mutant]) -> dict[str, Any]:
    return {
        "tool": "cosmic-ray 8.7.0",
        "commit": "0123456789abcdef",
        "generated": 1000,
        "generated_per_package": {"lowering": 600, "passes": 400},
        "seed": 0,
        "sampled": len(mutants) + 1,
        "mutants": [m.__dict__ for m in mutants],
        "discarded": [{"id": "m009", "path": "tensorium/passes/cse.py", "operator": "x", "why": "does not compile"}],
    }


def test_the_report_gives_both_scores_their_ratio_and_the_mutants_only_the_fuzzer_kills() -> None:
    ms = [
        _mutant(f"m00{k}", path)
        for k, path in enumerate(["tensorium/passes/cse.py"] * 3 + ["tensorium/lowering/nn.py"] * 2)
    ]
    suite = {
        m.id: {"id": m.id, "verdict": v} for m, v in zip(ms, ["killed", "killed", "survived", "killed", "survived"])
    }
    fuzz: dict[str, dict[str, Any]] = {
        "_meta": {"id": "_meta", "commit": "fedcba9876", "fuzz_seed": 0, "fuzz_execs": 60}
    }
    fuzz |= {
        m.id: {"id": m.id, "verdict": v}
        for m, v in zip(ms, ["killed", "survived", "killed", "not-importable", "survived"])
    }
    fuzz["m002"]["case"] = "001-mismatch-interp"
    text = report(_sample(ms), suite, fuzz)
    assert "generated by cosmic-ray 8.7.0 at 0123456789: 1000 (600 in lowering, 400 in passes)" in text
    assert "discarded: 1 does not compile, 1 not-importable; judged 4." in text
    assert "| unit suite | 2 of 4 | 0.50 |" in text
    assert "| fuzzer | 2 of 4 | 0.50 |" in text
    assert "| either | 3 of 4 | 0.75 |" in text
    assert "The fuzzer's score is 1.00 of the suite's" in text
    assert "| passes | 3 | 2 | 2 | 1 | 1 | 1 | 0 |" in text
    assert "| lowering | 1 | 0 | 0 | 0 | 0 | 0 | 1 |" in text
    assert "| ReplaceComparisonOperator | 4 | 2 | 2 | 1 | 1 | 1 | 1 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| m002 |"))
    assert "passes/cse.py:7 (clamp)" in row and "`-    if x < lo:`" in row and "001-mismatch-interp" in row
    assert "Of the 2 mutants the fuzzer did not kill, 0 are in functions its reach run" in text


def test_the_report_counts_the_survivors_the_fuzzer_never_reached_and_compares_runs() -> None:
    from benchmarks.fuzzing.mutation_study import comparison

    ms = [
        _mutant(f"m00{k}", path) for k, path in enumerate(["tensorium/passes/cse.py", "tensorium/lowering/nn.py"] * 2)
    ]
    suite = {m.id: {"id": m.id, "verdict": "killed"} for m in ms}
    before = {"_meta": {"id": "_meta", "commit": "1111111aaaa", "fuzz_execs": 40}}
    before |= {m.id: {"id": m.id, "verdict": "survived", "why": "not reached"} for m in ms[1:]}
    before["m000"] = {"id": "m000", "verdict": "killed"}
    after = {"_meta": {"id": "_meta", "commit": "2222222bbbb", "fuzz_execs": 40}}
    after |= {m.id: {"id": m.id, "verdict": v} for m, v in zip(ms, ["killed", "killed", "survived", "stale"])}
    text = report(_sample(ms), suite, before)
    assert "Of the 3 mutants the fuzzer did not kill, 3 are in functions its reach run" in text
    assert "(2 in lowering, 1 in passes; the suite kills 3 of them)" in text
    lines = comparison(_sample(ms), suite, {"before": before, "after": after}).splitlines()
    assert lines[0] == "On the 3 mutants every run judged (the suite kills 3):"  # m003 is stale after
    assert lines[4] == "| before | 1111111 | 40 | 1 | 0.33 | 0.33 | - | - |"
    assert lines[5] == "| after | 2222222 | 40 | 2 | 0.67 | 0.67 | m001 | - |"
    lines = comparison(_sample(ms), suite, {"after": after, "before": before}).splitlines()
    assert lines[5] == "| before | 1111111 | 40 | 1 | 0.33 | 0.33 | - | m001 |"


def test_a_regression_case_names_the_mutant_it_kills_and_keeps_what_replays_it() -> None:
    case = "// tensorium fuzz: mismatch at interp\n// output 0 differs\n// pipeline: cse\n// seed: 7\n"
    case += "// backends: interp\nmodule {\n}\n"
    text = regression_case(_mutant(), case)
    assert text.splitlines()[:2] == [
        "// kills: cosmic-ray mutant m001, core/ReplaceComparisonOperator_Lt_Gt at tensorium/passes/cse.py:7 (clamp)",
        "// change: -    if x < lo:; +    if x > lo:",
    ]
    assert "// pipeline: cse\n// seed: 7\n// backends: interp\nmodule {\n}\n" in text
    assert "tensorium fuzz:" not in text
    assert regression_name(_mutant()) == "m001-cse-clamp.mlir"


def test_the_command_line_says_when_there_is_no_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--results", str(tmp_path), "table"]) == 1
    assert "no sample yet (run 'init' first)" in capsys.readouterr().err


def test_cosmic_ray_s_work_item_becomes_a_mutant(tmp_path: Path) -> None:
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (pip install -e '.[mutation]')")
    from cosmic_ray.work_item import MutationSpec, WorkItem

    from benchmarks.fuzzing.mutation_study import build_mutant

    path = tmp_path / "tensorium" / "passes" / "m.py"
    path.parent.mkdir(parents=True)
    path.write_text("def f(a, b):\n    return a + b\n")

    def item(operator: str) -> WorkItem:
        spec = MutationSpec("tensorium/passes/m.py", operator, 0, (2, 13), (2, 14))
        return WorkItem.single("job", spec)

    mutant, why = build_mutant(tmp_path, 3, item("core/ReplaceBinaryOperator_Add_Sub"))
    assert mutant is not None and why == ""
    assert (mutant.id, mutant.line, mutant.diff()) == ("m003", 2, "-    return a + b\n+    return a - b\n")
    unchanged, why = build_mutant(tmp_path, 4, item("core/ReplaceComparisonOperator_Lt_Gt"))  # no comparison
    assert unchanged is None and why == "no change"
    assert json.loads(json.dumps(mutant.__dict__)) == mutant.__dict__


def test_the_fuzzer_is_credited_with_the_case_it_hung_or_died_on(tmp_path: Path) -> None:
    from benchmarks.fuzzing.mutation_study import failing_cases

    (tmp_path / "failures").mkdir()
    (tmp_path / "failures" / "001-mismatch-cpu.mlir").write_text("module {}\n")
    (tmp_path / "current.mlir").write_text("module {}\n")
    reduced = [tmp_path / "failures" / "001-mismatch-cpu.mlir"]
    assert failing_cases(tmp_path, 3) == reduced  # a run that ended normally: its failures
    assert failing_cases(tmp_path, 0) == reduced
    assert failing_cases(tmp_path, None) == [*reduced, tmp_path / "current.mlir"]  # hung: killed at its limit
    assert failing_cases(tmp_path, -8) == [*reduced, tmp_path / "current.mlir"]  # died of SIGFPE
    assert failing_cases(tmp_path / "nothing", -11) == []


def test_a_survivor_whose_run_stopped_short_of_its_budget_is_not_judged() -> None:
    ms = [_mutant(f"m00{k}") for k in range(3)]
    suite = {m.id: {"id": m.id, "verdict": "killed"} for m in ms}
    fuzz: dict[str, dict[str, Any]] = {
        "_meta": {"id": "_meta", "commit": "fedcba9876", "fuzz_seed": 0, "fuzz_execs": 40}
    }
    fuzz["m000"] = {"id": "m000", "verdict": "survived", "execs": 40}
    fuzz["m001"] = {"id": "m001", "verdict": "survived", "execs": 31}  # the time cap came first
    fuzz["m002"] = {"id": "m002", "verdict": "killed", "execs": 12, "case": "001-crash-cpu-build"}  # a kill counts
    text = report(_sample(ms), suite, fuzz)
    assert "judged 2." in text
    assert "; 1 runs stopped by the time cap short of the budget, without a kill, are not judged." in text
    assert "| fuzzer | 1 of 2 | 0.50 |" in text


def test_kills_are_counted_by_the_execution_that_found_their_case(tmp_path: Path) -> None:
    from benchmarks.fuzzing.mutation_study import _found_at, _report

    (tmp_path / "failures").mkdir()
    case = tmp_path / "failures" / "002-crash-cpu-build.mlir"
    report_json = {"failures": [{"path": str(tmp_path / "failures" / "001-x.mlir"), "execs": 3}]}
    report_json["failures"].append({"path": str(case), "execs": 57})
    (tmp_path / "report.json").write_text(json.dumps(report_json))
    assert _found_at(_report(tmp_path), case) == 57
    assert _found_at(_report(tmp_path), tmp_path / "current.mlir") is None  # the case a run hung or died on
    assert _report(tmp_path / "nothing") is None and _found_at(None, case) is None

    ms = [_mutant(f"m00{k}") for k in range(4)]
    suite = {m.id: {"id": m.id, "verdict": "killed"} for m in ms}
    fuzz: dict[str, dict[str, Any]] = {"_meta": {"id": "_meta", "commit": "fedcba9876", "fuzz_execs": 200}}
    at = [5, 57, None, None]
    fuzz |= {m.id: {"id": m.id, "verdict": "killed", "killed_at": a} for m, a in zip(ms[:3], at)}
    fuzz["m003"] = {"id": "m003", "verdict": "survived", "execs": 200}
    text = report(_sample(ms), suite, fuzz)
    assert (
        "Kills by when the killing case was found: 1 by execution 10, 1 by execution 20, 1 by execution 40, "
        "2 by execution 80, 2 by execution 120, 2 by execution 160, 2 by execution 200 (1 more from a case the "
        "run hung or died on, not counted by execution)." in text
    )
    old = {k: {kk: vv for kk, vv in v.items() if kk != "killed_at"} for k, v in fuzz.items()}
    assert "not recorded in these results" in report(_sample(ms), suite, old)
