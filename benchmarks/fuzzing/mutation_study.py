"""An unbiased mutation study: cosmic-ray's mutants of the compiler, killed by the unit suite or by the fuzzer.

    python -m benchmarks.fuzzing.mutation_study init --commit HEAD --sample 160 --seed 0
    python -m benchmarks.fuzzing.mutation_study run --suite-only --jobs 2
    python -m benchmarks.fuzzing.mutation_study run --fuzz-only --jobs 2 --commit HEAD --label fuzz
    python -m benchmarks.fuzzing.mutation_study regressions --label fuzz
    python -m benchmarks.fuzzing.mutation_study table --label fuzz

``init`` copies the repository at ``--commit`` (``git archive``: the working tree is never mutated), lets
cosmic-ray enumerate every mutant of the passes, the lowering, the LLVM backend and the graph dialect's
canonicalization patterns (``cosmic-ray init``), and draws ``--sample`` of them uniformly at random with
``--seed``. Mutants whose code does not compile, or compiles to the same bytecode as the original, are
discarded and counted. ``run`` applies each mutant in a copy of its own (one per job) and runs, with the
copy first on ``PYTHONPATH``, (a) the unit tests of the mutated file (:data:`TEST_MAP`, never tests/fuzz)
with ``-x`` and a time limit (a hang counts as killed), and (b) ``python -m tensorium fuzz`` with a fixed
seed and a budget in executions; the fuzzer kills a mutant only with a failing case (or the case it hung or
died on) that passes once the mutant is removed, so a real bug found meanwhile is not credited. A mutant
that does not import is discarded. Results are appended per mutant to JSON-lines files in ``--results``
(an interrupted run resumes), the suite's verdicts once (``--fuzz-only`` reuses them), the fuzzer's per
``--label``: rerun the fuzzer part whenever the fuzzer changes. ``regressions`` turns the reduced cases of
the mutants only the fuzzer kills into regression cases (``tests/fuzz/mutation_kills/``), ``table`` prints
the markdown report.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS = Path(__file__).resolve().parent / "results" / "mutation"
DEFAULT_WORK = Path(tempfile.gettempdir()) / "tensorium-mutation-study"
REGRESSIONS = ROOT / "tests" / "fuzz" / "mutation_kills"
"""Regression cases of the mutants only the fuzzer kills: one subfolder per study (its results folder's name)."""


def studies() -> list[Path]:
    """The results folders of the study's samples (``results/mutation``, ``results/mutation-s1``, ...)."""
    return sorted(p for p in DEFAULT_RESULTS.parent.glob("mutation*") if (p / "sample.json").is_file())


def regressions_folder(results: Path) -> Path:
    """Where the regression cases of the study in ``results`` go: a subfolder of :data:`REGRESSIONS` named after it
    (mutant ids are per sample)."""
    return REGRESSIONS / Path(results).name


TARGETS = (
    "tensorium/passes",
    "tensorium/lowering",
    "tensorium/backends/llvm",
    "tensorium/ir/dialects/graph/canonical.py",
)
"""What cosmic-ray mutates (paths in the repository)."""

TEST_MAP: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tensorium/lowering/webgpu_", ("tests/webgpu", "tests/lowering")),
    ("tensorium/lowering/gpu_", ("tests/cuda_backend", "tests/lowering")),
    ("tensorium/lowering/quant", ("tests/quant", "tests/lowering")),
    ("tensorium/passes/quantize.py", ("tests/quant", "tests/passes")),
    ("tensorium/passes/pack_quant.py", ("tests/quant", "tests/passes")),
    ("tensorium/passes/gptq.py", ("tests/quant",)),
    ("tensorium/passes/awq.py", ("tests/quant",)),
    ("tensorium/passes/rtn.py", ("tests/quant",)),
    ("tensorium/passes/fold_scales.py", ("tests/quant", "tests/passes")),
    ("tensorium/lowering/space.py", ("tests/lowering", "tests/cuda_backend", "tests/webgpu")),
    ("tensorium/backends/llvm/bits.py", ("tests/backends", "tests/quant", "tests/loop")),
    ("tensorium/passes/", ("tests/passes", "tests/lowering")),
    ("tensorium/lowering/", ("tests/lowering", "tests/loop", "tests/backends")),
    ("tensorium/backends/llvm/", ("tests/backends", "tests/lowering")),
    ("tensorium/ir/dialects/graph/canonical.py", ("tests/passes", "tests/graph")),
)
"""The unit tests relevant to a mutated file: the first entry whose prefix matches wins."""

PACKAGES = (
    ("tensorium/ir/dialects/graph/canonical.py", "canonical"),
    ("tensorium/backends/llvm/", "backends/llvm"),
    ("tensorium/lowering/", "lowering"),
    ("tensorium/passes/", "passes"),
)
"""How the report groups mutants by where they are."""

CONTEXT_LINES = 2
"""Unchanged lines kept around a mutant's changed lines, so that it applies to a later version of its file."""


class StudyError(Exception):
    """A study that cannot go on: no sample yet, a mutant that no longer applies, a tool that is missing."""


def folders_for(path: str) -> tuple[str, ...]:
    """The unit test folders run against a mutant of ``path`` (:data:`TEST_MAP`)."""
    for prefix, folders in TEST_MAP:
        if path.startswith(prefix):
            return folders
    raise StudyError(f"{path}: no test folders for it in TEST_MAP")


def package_of(path: str) -> str:
    """The report's group of a mutated file."""
    return next(name for prefix, name in PACKAGES if path.startswith(prefix))


def module_name(path: str) -> str:
    """``tensorium/passes/cse.py`` -> ``tensorium.passes.cse``."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


# --- mutants -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mutant:
    """One of cosmic-ray's mutants, kept as the text it replaces (with context) and the text it puts there."""

    id: str
    path: str
    operator: str
    occurrence: int
    line: int
    function: str
    old: str
    new: str
    span: int = 1
    """How many lines of the original, from ``line`` on, the mutant changes."""

    @property
    def operator_family(self) -> str:
        """The operator without its parameters: ``core/ReplaceBinaryOperator_Add_Sub`` -> ``ReplaceBinaryOperator``."""
        return self.operator.removeprefix("core/").split("_")[0]

    def diff(self) -> str:
        """The change as a unified diff of the lines it touches."""
        lines = difflib.unified_diff(
            self.old.splitlines(keepends=True), self.new.splitlines(keepends=True), self.path, self.path, n=0
        )
        return "".join(line for line in lines if not line.startswith(("---", "+++", "@@")))

    def mutate(self, source: str) -> str:
        """``source`` with this mutant applied; StudyError when its context is not found exactly once."""
        if source.count(self.old) != 1:
            raise StudyError(f"{self.id}: its lines of {self.path} are not found once (the file changed)")
        return source.replace(self.old, self.new)

    def line_in(self, source: str) -> int:
        """The line the mutant changes in ``source``, a version of its file that may have moved it."""
        if source.count(self.old) != 1:
            raise StudyError(f"{self.id}: its lines of {self.path} are not found once (the file changed)")
        old, new = self.old.splitlines(), self.new.splitlines()
        first = next((k for k, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        return source[: source.index(self.old)].count("\n") + 1 + first

    @contextmanager
    def applied(self, root: Path) -> Iterator[None]:
        """Apply the mutant to the copy at ``root`` for the duration of the block."""
        target = root / self.path
        original = target.read_text()
        _write_source(target, self.mutate(original))
        try:
            yield
        finally:
            _write_source(target, original)


def _write_source(path: Path, text: str) -> None:
    """Write a module and drop its cached bytecode (a same-size edit within a second would not invalidate it)."""
    path.write_text(text)
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink()


def hunk(original: str, mutated: str, context: int = CONTEXT_LINES) -> tuple[str, str, int, int]:
    """The changed lines of ``mutated`` with ``context`` unchanged lines around them: (old, new, first changed
    line (1-based), how many lines of the original changed)."""
    a, b = original.splitlines(keepends=True), mutated.splitlines(keepends=True)
    blocks = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not blocks:
        raise StudyError("the mutated source equals the original")
    start, end = blocks[0][1], blocks[-1][2]
    new_start, new_end = blocks[0][3], blocks[-1][4]
    lo, hi = max(start - context, 0), min(end + context, len(a))
    old = "".join(a[lo:hi])
    new = "".join(a[lo:start] + b[new_start:new_end] + a[end:hi])
    return old, new, start + 1, max(end - start, 1)


def same_bytecode(original: str, mutated: str) -> bool:
    """Whether two versions of a module compile to the same code (line numbers and positions aside)."""
    return _code_key(compile(original, "m", "exec")) == _code_key(compile(mutated, "m", "exec"))


def only_annotations_differ(original: str, mutated: str) -> bool:
    """Whether two versions of a module differ only in annotations that are never evaluated (the module has
    ``from __future__ import annotations``, so ``int | None`` turned into ``int % None`` is a string)."""
    if "from __future__ import annotations" not in original:
        return False
    return _without_annotations(original) == _without_annotations(mutated)


class _DropAnnotations(ast.NodeTransformer):
    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AsyncFunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AnnAssign:
        node.annotation = ast.Constant(None)
        self.generic_visit(node)
        return node


def _without_annotations(source: str) -> str:
    return ast.dump(_DropAnnotations().visit(ast.parse(source)))


def _code_key(code: types.CodeType) -> tuple[Any, ...]:
    consts = tuple(
        _code_key(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)) for c in code.co_consts
    )
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)


# --- copies of the repository ----------------------------------------------------------------------
def make_copy(commit: str, dest: Path) -> Path:
    """The repository's tracked files at ``commit`` in ``dest`` (replaced), with their bytecode compiled."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "tensorium"], cwd=dest, capture_output=True, check=True)
    return dest


def copy_env(root: Path, cache: Path) -> dict[str, str]:
    """The environment of a command run in a copy: the copy imported first, no bytecode written, a fresh cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TENSORIUM_CACHE_DIR"] = str(cache)
    env.pop("PYTHONSTARTUP", None)
    return env


def imported_from(root: Path) -> str:
    """Where ``import tensorium`` finds the package when run in the copy (it must be the copy)."""
    with tempfile.TemporaryDirectory() as cache:
        result = subprocess.run(
            [sys.executable, "-c", "import tensorium; print(tensorium.__file__)"],
            cwd=root,
            env=copy_env(root, Path(cache)),
            capture_output=True,
            text=True,
            check=True,
        )
    return result.stdout.strip()


# --- init: enumerate and sample ----------------------------------------------------------------------
def _cosmic_ray_config() -> str:
    paths = ", ".join(json.dumps(p) for p in TARGETS)
    return (
        "[cosmic-ray]\n"
        f"module-path = [{paths}]\n"
        "timeout = 600.0\n"
        "excluded-modules = []\n"
        'test-command = "python -m pytest -x -q"\n\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def enumerate_mutants(root: Path) -> list[Any]:
    """Every work item cosmic-ray generates for :data:`TARGETS` in the copy at ``root`` (``cosmic-ray init``)."""
    try:
        from cosmic_ray.work_db import WorkDB, use_db
    except ImportError:
        raise StudyError("cosmic-ray is not installed: pip install -e '.[mutation]'") from None
    (root / "cosmic-ray.toml").write_text(_cosmic_ray_config())
    session = root / "cosmic-ray.sqlite"
    session.unlink(missing_ok=True)
    subprocess.run(["cosmic-ray", "init", "cosmic-ray.toml", session.name], cwd=root, check=True)
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = list(db.work_items)
    return sorted(
        items, key=lambda w: (str(w.mutations[0].module_path), w.mutations[0].operator_name, w.mutations[0].occurrence)
    )


def build_mutant(root: Path, number: int, item: Any) -> tuple[Mutant | None, str]:
    """The mutant of a cosmic-ray work item, or None and why it is discarded (no change, no compile, equivalent)."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    spec = item.mutations[0]
    path = str(spec.module_path)
    original = (root / path).read_text()
    operator = cosmic_ray.plugins.get_operator(spec.operator_name)(**spec.operator_args)
    mutated = mutate_code(original, operator, spec.occurrence)
    if mutated is None or mutated == original:
        return None, "no change"
    try:
        if same_bytecode(original, mutated):
            return None, "equivalent (same bytecode)"
        if only_annotations_differ(original, mutated):
            return None, "equivalent (an annotation, never evaluated)"
    except SyntaxError:
        return None, "does not compile"
    old, new, line, span = hunk(original, mutated)
    name = spec.definition_name or ""
    mutant = Mutant(f"m{number:03d}", path, spec.operator_name, spec.occurrence, line, name, old, new, span)
    return mutant, ""


def cmd_init(args: argparse.Namespace) -> int:
    """Enumerate cosmic-ray's mutants at ``--commit``, sample them and write sample.json."""
    commit = subprocess.run(["git", "rev-parse", args.commit], cwd=ROOT, capture_output=True, text=True, check=True)
    sha = commit.stdout.strip()
    root = make_copy(sha, Path(args.work) / "init")
    items = enumerate_mutants(root)
    chosen = random.Random(args.seed).sample(items, args.sample)
    mutants, discarded = [], []
    for n, item in enumerate(chosen, 1):
        mutant, why = build_mutant(root, n, item)
        if mutant is None:
            spec = item.mutations[0]
            discarded.append(
                {"id": f"m{n:03d}", "path": str(spec.module_path), "operator": spec.operator_name, "why": why}
            )
        else:
            mutants.append(asdict(mutant))
    generated = Counter(package_of(str(w.mutations[0].module_path)) for w in items)
    from importlib.metadata import version

    sample = {
        "tool": f"cosmic-ray {version('cosmic-ray')}",
        "commit": sha,
        "targets": list(TARGETS),
        "generated": len(items),
        "generated_per_package": dict(sorted(generated.items())),
        "seed": args.seed,
        "sampled": len(chosen),
        "mutants": mutants,
        "discarded": discarded,
    }
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    (results / "sample.json").write_text(json.dumps(sample, indent=1) + "\n")
    print(f"{len(items)} mutants generated, {len(chosen)} sampled, {len(discarded)} discarded", file=sys.stderr)
    return 0


def load_sample(results: Path) -> tuple[dict[str, Any], list[Mutant]]:
    """sample.json and its mutants."""
    path = results / "sample.json"
    if not path.is_file():
        raise StudyError(f"{path}: no sample yet (run 'init' first)")
    sample = json.loads(path.read_text())
    return sample, [Mutant(**m) for m in sample["mutants"]]


# --- which unit tests reach a mutant ---------------------------------------------------------------------
@dataclass(frozen=True)
class Selection:
    """The unit tests run against each mutant, from the coverage of the real code per test."""

    per_mutant: dict[str, list[str]]
    """Test node ids (or whole folders) per mutant id; a mutant not listed runs its folders of TEST_MAP."""
    failing: tuple[str, ...] = ()
    """Tests that fail on the real code: left out of every run."""

    def tests(self, mutant: Mutant) -> list[str]:
        """What pytest runs against ``mutant``."""
        return self.per_mutant.get(mutant.id, list(folders_for(mutant.path)))

    @classmethod
    def load(cls, path: Path) -> Selection:
        """The selection written by ``select`` (none there: every mutant runs its folders)."""
        if not path.is_file():
            return cls({})
        data = json.loads(path.read_text())
        return cls(data["per_mutant"], tuple(data["failing"]))


def statement_lines(source: str, first: int, span: int) -> tuple[set[int], bool]:
    """The lines coverage records for changed lines ``first .. first + span - 1`` (each one's innermost
    statement's first line), and whether any of them runs at import time (outside every function body)."""
    tree = ast.parse(source)
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    bodies = [
        (n.body[0].lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    lines, at_import = set(), False
    for line in range(first, first + span):
        around = [n for n in statements if n.lineno <= line <= (n.end_lineno or n.lineno)]
        if around:
            lines.add(max(n.lineno for n in around))
        at_import |= not any(lo <= line <= hi for lo, hi in bodies)
    return lines, at_import


def select_tests(mutant: Mutant, source: str, contexts_by_line: dict[int, list[str]]) -> list[str]:
    """The tests of the mutant's folders whose run on the real code executed its statement (node ids), or its
    folders when the statement runs at import time (every test that imports the module depends on it)."""
    folders = folders_for(mutant.path)
    lines, at_import = statement_lines(source, mutant.line, mutant.span)
    if at_import:
        return list(folders)
    reached = {ctx.split("|")[0] for line in lines for ctx in contexts_by_line.get(line, ()) if ctx}
    return sorted(t for t in reached if t.startswith(tuple(f"{folder}/" for folder in folders)))


def failing_tests(log: str) -> list[str]:
    """The node ids pytest's summary reports as failed or in error."""
    ids = []
    for line in log.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            ids.append(line.split(" ", 1)[1].split(" - ", 1)[0].strip())
    return sorted(set(ids))


def cmd_select(args: argparse.Namespace) -> int:
    """Run every folder of TEST_MAP once on the real code with coverage per test, and choose each mutant's
    tests (written to test-selection.json)."""
    from coverage import CoverageData

    results = Path(args.results)
    sample, mutants = load_sample(results)
    work = Path(args.work) / "coverage"
    data_file = Path(args.work) / "coverage.sqlite"
    if not args.reuse:
        root = make_copy(sample["commit"], work)
        folders = sorted({f for _, fs in TEST_MAP for f in fs})
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=tensorium"]
        cmd += ["--cov-context=test", "--cov-report=", *folders]
        env = {**copy_env(root, Path(args.work) / "coverage-cache"), "COVERAGE_FILE": str(data_file)}
        done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        (Path(args.work) / "coverage.log").write_text(done.stdout + done.stderr)
    log = (Path(args.work) / "coverage.log").read_text()
    data = CoverageData(basename=str(data_file))
    data.read()
    per_mutant = {}
    for mutant in mutants:
        source = (work / mutant.path).read_text()
        per_mutant[mutant.id] = select_tests(mutant, source, data.contexts_by_lineno(str(work / mutant.path)))
    selection = {"commit": sample["commit"], "failing": failing_tests(log), "per_mutant": per_mutant}
    (results / "test-selection.json").write_text(json.dumps(selection, indent=1) + "\n")
    unreached = sum(not tests for tests in per_mutant.values())
    print(
        f"{len(per_mutant)} mutants: {unreached} reached by no test; {len(selection['failing'])} tests fail on "
        "the real code",
        file=sys.stderr,
    )
    return 0


# --- which mutants the fuzzer reaches ---------------------------------------------------------------------
REACH_DRIVER = """
import json, runpy, sys, threading
called = set()
def profile(frame, event, arg):
    if event == "call":
        called.add((frame.f_code.co_filename, frame.f_code.co_firstlineno))
out, sys.argv = sys.argv[1], ["tensorium", *sys.argv[2:]]
sys.setprofile(profile)
threading.setprofile(profile)
try:
    runpy.run_module("tensorium", run_name="__main__")
except SystemExit:
    pass
finally:
    sys.setprofile(None)
    json.dump(sorted(called), open(out, "w"))
"""
"""Runs ``python -m tensorium ARGS`` and records every function it calls (a profile hook, which the fuzzer's
own line tracer leaves alone), as (file, first line) pairs."""


def enclosing_function(source: str, line: int) -> int | None:
    """The first line of the code object of the innermost function whose body holds ``line`` (its first
    decorator's line when decorated), or None when the line is outside every function body."""
    best = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.body[0].lineno <= line <= (node.end_lineno or node.lineno):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if best is None or first > best:
                    best = first
    return best


def fuzz_args(budget: Budget, out: Path) -> list[str]:
    """The arguments of ``tensorium fuzz`` in a study run."""
    args = ["fuzz", "--quiet", "--seed", str(budget.fuzz_seed), "--max-execs", str(budget.fuzz_execs)]
    return [*args, "--time", str(budget.fuzz_seconds), "--reduce-time", str(budget.reduce_seconds), "--out", str(out)]


def cmd_reach(args: argparse.Namespace) -> int:
    """Fuzz the real code once with ``--reach-factor`` times the budget and record the functions of the
    mutated files it calls (reach-LABEL.json): the fuzzer cannot kill a mutant in a function it never calls."""
    results = Path(args.results)
    sample, _ = load_sample(results)
    root = make_copy(args.commit or sample["commit"], Path(args.work) / args.label / "reach")
    budget = Budget(fuzz_execs=args.max_execs * args.reach_factor, fuzz_seconds=args.fuzz_seconds * args.reach_factor)
    with tempfile.TemporaryDirectory(prefix="tsm-reach-") as tmp:
        called = Path(tmp) / "called.json"
        cmd = [sys.executable, "-c", REACH_DRIVER, str(called), *fuzz_args(budget, Path(tmp) / "out")]
        code, tail, seconds = _run(cmd, root, budget.fuzz_seconds + 300)
        if not called.is_file():
            raise StudyError(f"the reach run failed (exit {code}): {tail}")
        pairs = json.loads(called.read_text())
    functions: dict[str, list[int]] = {}
    for filename, first in pairs:
        rel = os.path.relpath(filename, root)
        if rel.startswith(TARGETS):
            functions.setdefault(rel, []).append(first)
    data = {"commit": args.commit or sample["commit"], **asdict(budget), "seconds": round(seconds, 1)}
    data["functions"] = {k: sorted(v) for k, v in sorted(functions.items())}
    (results / f"reach-{args.label}.json").write_text(json.dumps(data, indent=1) + "\n")
    print(f"reach: {sum(map(len, functions.values()))} functions of the mutated files called", file=sys.stderr)
    return 0


def unreached(mutant: Mutant, source: str, reach: dict[str, list[int]]) -> bool:
    """Whether ``mutant`` sits in a function body the reach run never entered (module-level code always runs);
    ``source`` is the real code of the mutated file in the copy the reach run ran."""
    first = enclosing_function(source, mutant.line_in(source))
    return first is not None and first not in reach.get(mutant.path, ())


# --- results files -----------------------------------------------------------------------------------
def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """The verdicts already recorded in a JSON-lines results file, by mutant id (the last one wins)."""
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


class ResultsFile:
    """A JSON-lines file that threads append verdicts to, one line per mutant as it finishes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, row: dict[str, Any]) -> None:
        """Record one verdict (flushed at once, so an interrupted run loses nothing it finished)."""
        with self._lock, self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


# --- run: one mutant against the suite and the fuzzer -------------------------------------------------
@dataclass(frozen=True)
class Budget:
    """The fixed budgets of a study run."""

    suite_seconds: float = 300.0
    fuzz_execs: int = 60
    fuzz_seconds: float = 240.0
    fuzz_seed: int = 0
    reduce_seconds: float = 10.0


def _run(cmd: list[str], root: Path, timeout: float) -> tuple[int | None, str, float]:
    """Run ``cmd`` in the copy at ``root``: (exit status or None on timeout, the output's tail, seconds)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tsm-cache-") as cache:
        try:
            done = subprocess.run(
                cmd, cwd=root, env=copy_env(root, Path(cache)), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return None, out[-2000:], time.monotonic() - start
    return done.returncode, (done.stdout + done.stderr)[-2000:], time.monotonic() - start


def imports(mutant: Mutant, root: Path) -> bool:
    """Whether the mutated module imports (run with the mutant applied)."""
    code, _, _ = _run([sys.executable, "-c", f"import {module_name(mutant.path)}"], root, 120)
    return code == 0


def suite_verdict(mutant: Mutant, root: Path, budget: Budget, selection: Selection) -> dict[str, Any]:
    """Run the mutant's unit tests (applied in ``root``): killed on a failure or a hang, else survived.

    The tests are those of :data:`TEST_MAP` for its file that execute its line on the real code (a test that
    does not reach the line cannot tell the mutant apart), all of them when the line runs at import time;
    tests that fail on the real code are left out."""
    tests = selection.tests(mutant)
    if not tests:
        return {"id": mutant.id, "verdict": "survived", "seconds": 0.0, "tests": 0, "why": "no test reaches it"}
    with mutant.applied(root):
        if not imports(mutant, root):
            return {"id": mutant.id, "verdict": "not-importable"}
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        cmd += [arg for nodeid in selection.failing for arg in ("--deselect", nodeid)]
        code, tail, seconds = _run(cmd, root, budget.suite_seconds)
    verdict = "survived" if code == 0 else "killed"
    failed = [line for line in tail.splitlines() if line.startswith(("FAILED", "ERROR"))]
    why = "timeout" if code is None else (failed[0][:200] if failed else f"exit {code}")
    row = {"id": mutant.id, "verdict": verdict, "seconds": round(seconds, 1), "tests": len(tests)}
    return {**row, "why": "" if code == 0 else why}


def fuzz_verdict(
    mutant: Mutant, root: Path, budget: Budget, cases: Path, reach: dict[str, list[int]] | None = None
) -> dict[str, Any]:
    """Fuzz with the mutant applied in ``root``, then replay what failed without it: killed when a failing
    case passes on the real code (its case is copied to ``cases``). A mutant in a function the reach run
    (``reach``) never called survives without a run."""
    with tempfile.TemporaryDirectory(prefix="tsm-fuzz-") as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "tensorium", *fuzz_args(budget, out)]
        if reach is not None and unreached(mutant, (root / mutant.path).read_text(), reach):
            return {"id": mutant.id, "verdict": "survived", "seconds": 0.0, "why": "not reached"}
        with mutant.applied(root):
            if not imports(mutant, root):
                return {"id": mutant.id, "verdict": "not-importable"}
            code, tail, seconds = _run(cmd, root, budget.fuzz_seconds + 120)
        found = failing_cases(out, code)
        report = _report(out)
        execs = report.get("execs") if report is not None else None
        row: dict[str, Any] = {"id": mutant.id, "verdict": "survived", "seconds": round(seconds, 1), "execs": execs}
        row["failures"] = [p.stem for p in found]
        if code not in (0, 3, None):
            row["error"] = tail[-500:]
        for case in found:
            replayed, _, _ = _run([sys.executable, "-m", "tensorium", "fuzz", "--replay", str(case)], root, 300)
            if replayed == 0:
                cases.mkdir(parents=True, exist_ok=True)
                shutil.copy(case, cases / f"{mutant.id}.mlir")
                row.update(verdict="killed", case=case.stem, killed_at=_found_at(report, case))
                break
        if found and row["verdict"] != "killed":
            row["verdict"] = "survived (failures also without the mutant)"
            cases.mkdir(parents=True, exist_ok=True)  # real failures of the code under test: kept to look at
            for n, case in enumerate(found, 1):
                shutil.copy(case, cases / f"{mutant.id}-also-real-{n}.mlir")
    return row


def failing_cases(out: Path, code: int | None) -> list[Path]:
    """The case files a fuzzer run that wrote to ``out`` and ended with ``code`` (None: killed at its time
    limit) failed on: its reduced failures, and the case it was running when it hung or died of a signal
    (SIGFPE from a division the mutant left unguarded, SIGSEGV), which no failure file records."""
    found = sorted((out / "failures").glob("*.mlir")) if (out / "failures").is_dir() else []
    if (code is None or code < 0) and (out / "current.mlir").is_file():
        found.append(out / "current.mlir")
    return found


def _report(out: Path) -> dict[str, Any] | None:
    """The report.json of the fuzzer run that wrote to ``out`` (None when it wrote none: it hung or died)."""
    report = out / "report.json"
    return json.loads(report.read_text()) if report.is_file() else None  # type: ignore[no-any-return]


def _found_at(report: dict[str, Any] | None, case: Path) -> int | None:
    """The executions the run had done when it found ``case``, from its ``report`` (:func:`_report`); None for the
    case it hung or died on, or without a report."""
    for failure in (report or {}).get("failures", []):
        if failure.get("path") and Path(failure["path"]).name == case.name:
            return int(failure["execs"])
    return None


def run_all(
    mutants: list[Mutant],
    results: ResultsFile,
    done: Iterable[str],
    verdict: Callable[[Mutant, Path], dict[str, Any]],
    slots: list[Path],
) -> None:
    """Give every mutant not ``done`` to ``verdict`` in one of the copies ``slots`` (one thread each) and append
    each verdict as it comes."""
    todo = [m for m in mutants if m.id not in set(done)]
    free = list(slots)
    lock = threading.Lock()
    start = time.monotonic()
    count = [0]

    def one(mutant: Mutant) -> None:
        with lock:
            root = free.pop()
        try:
            try:
                row = verdict(mutant, root)
            except StudyError as e:
                row = {"id": mutant.id, "verdict": "stale", "why": str(e)}
            results.append(row)
        finally:
            with lock:
                free.append(root)
                count[0] += 1
                elapsed = time.monotonic() - start
                print(
                    f"[{count[0]}/{len(todo)} {elapsed:5.0f}s] {mutant.id} {mutant.path}:{mutant.line} "
                    f"{mutant.operator}: {row['verdict']}",
                    file=sys.stderr,
                    flush=True,
                )

    with ThreadPoolExecutor(max_workers=len(slots)) as pool:
        list(pool.map(one, todo))


def cmd_run(args: argparse.Namespace) -> int:
    """Run the suite part and/or the fuzzer part of every mutant not yet judged."""
    results = Path(args.results)
    sample, mutants = load_sample(results)
    commit = args.commit or sample["commit"]
    work = Path(args.work) / args.label
    slots = [make_copy(commit, work / f"slot-{k}") for k in range(args.jobs)]
    where = imported_from(slots[0])
    if not where.startswith(str(slots[0])):
        raise StudyError(f"the copy imports tensorium from {where}, not from {slots[0]}")
    budget = Budget(args.suite_seconds, args.max_execs, args.fuzz_seconds, args.fuzz_seed, args.reduce_time)
    if args.only:
        mutants = [m for m in mutants if m.id in args.only]
    if not args.fuzz_only:
        suite = results / "suite.jsonl"
        selection = Selection.load(results / "test-selection.json")
        # the cheapest first (whole folders last): an interrupted run has judged as many mutants as it could
        mutants = sorted(
            mutants, key=lambda m: (all("::" not in t for t in selection.tests(m)), len(selection.tests(m)))
        )
        run_all(
            mutants, ResultsFile(suite), read_results(suite), lambda m, r: suite_verdict(m, r, budget, selection), slots
        )
    if not args.suite_only:
        fuzz = results / f"{args.label}.jsonl"
        cases = results / "cases" / args.label
        done = read_results(fuzz)
        if not done:
            meta = {
                "id": "_meta",
                "commit": subprocess.run(
                    ["git", "rev-parse", commit], cwd=ROOT, capture_output=True, text=True
                ).stdout.strip(),
                **asdict(budget),
            }
            ResultsFile(fuzz).append(meta)
        reach_file = results / f"reach-{args.label}.json"
        reach = json.loads(reach_file.read_text())["functions"] if reach_file.is_file() else None
        run_all(mutants, ResultsFile(fuzz), done, lambda m, r: fuzz_verdict(m, r, budget, cases, reach), slots)
    return 0


# --- the report ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """One judged mutant: whether the suite and the fuzzer killed it."""

    mutant: Mutant
    suite: bool
    fuzz: bool
    case: str | None


DISCARDED_AT_RUN = ("not-importable", "stale")


def short_of_budget(row: dict[str, Any], meta: dict[str, Any]) -> bool:
    """Whether a fuzzer run let its mutant survive before spending its budget of executions (its time cap came
    first, on a loaded machine): not a verdict at that budget, so the mutant is not judged."""
    execs, budget = row.get("execs"), meta.get("fuzz_execs")
    return row["verdict"] != "killed" and execs is not None and budget is not None and execs < budget


def outcomes(mutants: list[Mutant], suite: dict[str, dict[str, Any]], fuzz: dict[str, dict[str, Any]]) -> list[Outcome]:
    """The mutants both parts judged (neither discarded them, and the fuzzer spent its budget on a survivor)."""
    judged = []
    meta = fuzz.get("_meta", {})
    for m in mutants:
        s, f = suite.get(m.id), fuzz.get(m.id)
        if s is None or f is None or s["verdict"] in DISCARDED_AT_RUN or f["verdict"] in DISCARDED_AT_RUN:
            continue
        if short_of_budget(f, meta):
            continue
        judged.append(Outcome(m, s["verdict"] == "killed", f["verdict"] == "killed", f.get("case")))
    return judged


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def _breakdown(title: str, judged: list[Outcome], key: Callable[[Outcome], str]) -> list[str]:
    rows = [
        f"| {title} | judged | suite kills | fuzzer kills | both | only the suite | only the fuzzer | neither |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in sorted({key(o) for o in judged}):
        mine = [o for o in judged if key(o) == name]
        counts = (
            len(mine),
            sum(o.suite for o in mine),
            sum(o.fuzz for o in mine),
            sum(o.suite and o.fuzz for o in mine),
            sum(o.suite and not o.fuzz for o in mine),
            sum(o.fuzz and not o.suite for o in mine),
            sum(not o.suite and not o.fuzz for o in mine),
        )
        rows.append(f"| {name} | " + " | ".join(map(str, counts)) + " |")
    return rows


def _unreached_line(judged: list[Outcome], fuzz: dict[str, dict[str, Any]]) -> str:
    """How many of the mutants the fuzzer did not kill sit in functions its reach run never called."""
    missed = [o for o in judged if not o.fuzz]
    far = [o for o in missed if fuzz[o.mutant.id].get("why") == "not reached"]
    by_package = Counter(package_of(o.mutant.path) for o in far)
    where = ", ".join(f"{n} in {p}" for p, n in sorted(by_package.items()))
    suite_killed = sum(o.suite for o in far)
    return (
        f"Of the {len(missed)} mutants the fuzzer did not kill, {len(far)} are in functions its reach run (the real "
        f"code, twice the budget) never called"
        + (f" ({where}; the suite kills {suite_killed} of them)" if far else "")
        + "."
    )


def _budget_line(judged: list[Outcome], fuzz: dict[str, dict[str, Any]], budget: int | None) -> str:
    """The fuzzer's kills by the execution at which the killing case was found (``killed_at``, recorded since
    2026-11-29): how the score grows with the budget within one run."""
    at = [fuzz[o.mutant.id].get("killed_at") for o in judged if o.fuzz]
    known = sorted(a for a in at if a is not None)
    if not known:
        return "The executions at which kills were found are not recorded in these results."
    marks = [m for m in (10, 20, 40, 80, 120, 160, 200, 400, 800) if budget is None or m < budget]
    marks.append(budget if budget is not None else known[-1])
    steps = ", ".join(f"{sum(a <= m for a in known)} by execution {m}" for m in marks)
    other = len(at) - len(known)
    return f"Kills by when the killing case was found: {steps}" + (
        f" ({other} more from a case the run hung or died on, not counted by execution)." if other else "."
    )


def comparison(
    sample: dict[str, Any], suite: dict[str, dict[str, Any]], runs: dict[str, dict[str, dict[str, Any]]]
) -> str:
    """The fuzzer's runs under several labels side by side, on the mutants every one of them judged (and the
    suite): kills, score, ratio to the suite's, and the kills of each that the first run lacked or had."""
    mutants = [Mutant(**m) for m in sample["mutants"]]
    per_run = {label: {o.mutant.id: o for o in outcomes(mutants, suite, rows)} for label, rows in runs.items()}
    common = set.intersection(*(set(judged) for judged in per_run.values())) if per_run else set()
    first = next(iter(per_run.values()), {})
    suite_kills = sum(first[m].suite for m in common) if first else 0
    lines = [
        f"On the {len(common)} mutants every run judged (the suite kills {suite_kills}):",
        "",
        "| fuzzer run | commit | executions per mutant | fuzzer kills | score | of the suite's | new kills | lost |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for label, judged in per_run.items():
        meta = runs[label].get("_meta", {})
        kills = sorted(m for m in common if judged[m].fuzz)
        new = [m for m in kills if not first[m].fuzz]
        lost = sorted(m for m in common if first[m].fuzz and not judged[m].fuzz)
        lines.append(
            f"| {label} | {str(meta.get('commit', '?'))[:7]} | {meta.get('fuzz_execs', '?')} | {len(kills)} | "
            f"{_ratio(len(kills), len(common))} | {_ratio(len(kills), suite_kills)} | {', '.join(new) or '-'} | "
            f"{', '.join(lost) or '-'} |"
        )
    return "\n".join(lines)


def report(sample: dict[str, Any], suite: dict[str, dict[str, Any]], fuzz: dict[str, dict[str, Any]]) -> str:
    """The study's markdown report: the counts, the scores, the breakdowns and the mutants only the fuzzer kills."""
    mutants = [Mutant(**m) for m in sample["mutants"]]
    judged = outcomes(mutants, suite, fuzz)
    at_init = Counter(d["why"] for d in sample["discarded"])
    sampled_ids = {m.id for m in mutants}
    dropped: dict[str, str] = {}
    for rows in (suite, fuzz):
        for r in rows.values():
            if r["id"] in sampled_ids and r.get("verdict") in DISCARDED_AT_RUN:
                dropped.setdefault(r["id"], r["verdict"])
    at_run = Counter(dropped.values())
    meta = fuzz.get("_meta", {})
    short = sum(1 for m in mutants if m.id in fuzz and m.id not in dropped and short_of_budget(fuzz[m.id], meta))
    pending = len(mutants) - len(judged) - len(dropped) - short
    per_package = ", ".join(f"{n} in {p}" for p, n in sample["generated_per_package"].items())
    discarded = ", ".join(f"{n} {why}" for why, n in sorted({**at_init, **at_run}.items())) or "none"
    n = len(judged)
    suite_kills, fuzz_kills = sum(o.suite for o in judged), sum(o.fuzz for o in judged)
    either = sum(o.suite or o.fuzz for o in judged)
    lines = [
        f"Mutants generated by {sample['tool']} at {sample['commit'][:10]}: {sample['generated']} ({per_package}); "
        f"sampled {sample['sampled']} uniformly at random (seed {sample['seed']}); discarded: {discarded}; "
        f"judged {n}" + (f" ({pending} not yet)" if pending > 0 else "") + ".",
        "",
        f"Fuzzer: `tensorium fuzz --seed {meta.get('fuzz_seed', '?')} --max-execs {meta.get('fuzz_execs', '?')}` "
        f"at {str(meta.get('commit', '?'))[:10]}"
        + (
            f"; {short} runs stopped by the time cap short of the budget, without a kill, are not judged"
            if short
            else ""
        )
        + ".",
        "",
        "| | killed | mutation score |",
        "| --- | ---: | ---: |",
        f"| unit suite | {suite_kills} of {n} | {_ratio(suite_kills, n)} |",
        f"| fuzzer | {fuzz_kills} of {n} | {_ratio(fuzz_kills, n)} |",
        f"| either | {either} of {n} | {_ratio(either, n)} |",
        "",
        f"The fuzzer's score is {_ratio(fuzz_kills, suite_kills)} of the suite's (target: at least 0.8).",
        "",
        _unreached_line(judged, fuzz),
        "",
        _budget_line(judged, fuzz, meta.get("fuzz_execs")),
        "",
        *_breakdown("package", judged, lambda o: package_of(o.mutant.path)),
        "",
        *_breakdown("operator", judged, lambda o: o.mutant.operator_family),
        "",
        "Mutants only the fuzzer kills:",
        "",
        "| mutant | where | operator | change | reduced case |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in judged:
        if o.fuzz and not o.suite:
            m = o.mutant
            change = " / ".join(f"`{line.strip()}`" for line in m.diff().splitlines() if line.strip())
            where = f"{m.path.removeprefix('tensorium/')}:{m.line} ({m.function})"
            lines.append(f"| {m.id} | {where} | {m.operator.removeprefix('core/')} | {change} | {o.case} |")
    return "\n".join(lines)


def cmd_table(args: argparse.Namespace) -> int:
    """Print the report of the suite's verdicts and the fuzzer's under ``--label`` (and its comparison with the
    runs under ``--compare``)."""
    results = Path(args.results)
    sample, _ = load_sample(results)
    suite = read_results(results / "suite.jsonl")
    text = report(sample, suite, read_results(results / f"{args.label}.jsonl"))
    if args.compare:
        labels = [*args.compare, args.label]
        runs = {label: read_results(results / f"{label}.jsonl") for label in labels}
        text += "\n\n" + comparison(sample, suite, runs)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    return 0


# --- regression cases ---------------------------------------------------------------------------------
def regression_case(mutant: Mutant, case_text: str) -> str:
    """A reduced case that kills ``mutant``, as a regression case: the fuzzer's header lines replaced by the
    mutant it kills, the IR and its pipeline, seed and backends kept."""
    from tensorium.fuzz.reduce import HEADER_KEYS

    def kept(line: str) -> bool:
        key, sep, _ = line.removeprefix("//").partition(":")
        return not line.startswith("//") or (bool(sep) and key.strip() in HEADER_KEYS)

    body = [line for line in case_text.splitlines() if kept(line)]
    change = "; ".join(line for line in mutant.diff().splitlines() if line.strip())
    where = f"{mutant.path}:{mutant.line} ({mutant.function})"
    header = [
        f"// kills: cosmic-ray mutant {mutant.id}, {mutant.operator} at {where}",
        f"// change: {change}",
    ]
    return "\n".join(header + body) + "\n"


def regression_name(mutant: Mutant) -> str:
    """The file name of a mutant's regression case."""
    parts = (mutant.id, Path(mutant.path).stem, mutant.function or "module")
    return "-".join(p.strip("_").replace("_", "-").lower() for p in parts) + ".mlir"


def cmd_regressions(args: argparse.Namespace) -> int:
    """Write the reduced case of every mutant only the fuzzer kills to ``--to`` (one file each)."""
    results = Path(args.results)
    _, mutants = load_sample(results)
    judged = outcomes(mutants, read_results(results / "suite.jsonl"), read_results(results / f"{args.label}.jsonl"))
    target = Path(args.to) if args.to else regressions_folder(results)
    target.mkdir(parents=True, exist_ok=True)
    written = 0
    for o in judged:
        if o.fuzz and not o.suite:
            case = results / "cases" / args.label / f"{o.mutant.id}.mlir"
            (target / regression_name(o.mutant)).write_text(regression_case(o.mutant, case.read_text()))
            written += 1
    print(f"{written} regression cases in {target}", file=sys.stderr)
    return 0


def killed_mutant(case_text: str) -> str:
    """The id of the mutant a regression case names in its ``// kills:`` line."""
    first = case_text.splitlines()[0] if case_text else ""
    if not first.startswith("// kills: cosmic-ray mutant "):
        raise StudyError("a regression case must start with '// kills: cosmic-ray mutant <id>, ...'")
    return first.removeprefix("// kills: cosmic-ray mutant ").split(",")[0]


def cmd_verify(args: argparse.Namespace) -> int:
    """Check that every regression case passes on the real code and fails with the mutant it names."""
    results = Path(args.results)
    _, mutants = load_sample(results)
    by_id = {m.id: m for m in mutants}
    root = make_copy(args.commit or "HEAD", Path(args.work) / "verify")
    bad = 0
    for path in sorted((Path(args.to) if args.to else regressions_folder(results)).glob("*.mlir")):
        mutant = by_id[killed_mutant(path.read_text())]
        replay = [sys.executable, "-m", "tensorium", "fuzz", "--replay", str(path.resolve())]
        real, _, _ = _run(replay, root, 300)
        with mutant.applied(root):
            mutated, _, _ = _run(replay, root, 300)
        # as the study credits kills: a failing case (exit 3), or a hang (its time limit) or a signal it died of
        how = "killed" if mutated == 3 else "killed (hung)" if mutated is None else "killed (signal)"
        if mutated is not None and mutated >= 0 and mutated != 3:
            how = f"NOT killed (exit {mutated})"
        ok = real == 0 and not how.startswith("NOT")
        bad += not ok
        print(f"{path.name}: real code {'passes' if real == 0 else 'FAILS'}, mutant {how}", file=sys.stderr)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    """The command line of the study (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fuzzing.mutation_study",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--results", default=str(DEFAULT_RESULTS), help="where the study's files are")
    parser.add_argument("--work", default=str(DEFAULT_WORK), help="where the copies of the repository go")
    sub = parser.add_subparsers(dest="command", required=True)
    init = sub.add_parser("init", help="enumerate cosmic-ray's mutants and sample them")
    init.add_argument("--commit", default="HEAD")
    init.add_argument("--sample", type=int, default=160)
    init.add_argument("--seed", type=int, default=0)
    select = sub.add_parser("select", help="run the unit tests once with coverage and choose each mutant's tests")
    select.add_argument("--reuse", action="store_true", help="reuse the coverage data of an earlier select")
    run = sub.add_parser("run", help="judge every sampled mutant not yet judged")
    only = run.add_mutually_exclusive_group()
    only.add_argument("--suite-only", action="store_true")
    only.add_argument("--fuzz-only", action="store_true", help="the fuzzer part only (the suite's verdicts are kept)")
    run.add_argument("--commit", help="the commit the copies are made from (default: the sample's)")
    run.add_argument("--label", default="fuzz", help="names the fuzzer's results (fuzz.jsonl)")
    run.add_argument("--jobs", type=int, default=2, help="mutants at once, one copy each (2)")
    run.add_argument("--only", type=lambda s: s.split(","), help="comma-separated mutant ids")
    run.add_argument("--suite-seconds", type=float, default=300.0, help="time limit of a mutant's tests (300)")
    run.add_argument("--max-execs", type=int, default=60, help="the fuzzer's budget in executions (60)")
    run.add_argument("--fuzz-seconds", type=float, default=240.0, help="the fuzzer's time cap (240)")
    run.add_argument("--fuzz-seed", type=int, default=0)
    run.add_argument("--reduce-time", type=float, default=10.0, help="reduction budget per failure (10)")
    reach = sub.add_parser("reach", help="record the functions the fuzzer calls on the real code")
    reach.add_argument("--commit", help="the commit of the copy (default: the sample's)")
    reach.add_argument("--label", default="fuzz")
    reach.add_argument("--max-execs", type=int, default=60, help="the study run's budget (60)")
    reach.add_argument("--fuzz-seconds", type=float, default=240.0, help="the study run's time cap (240)")
    reach.add_argument("--reach-factor", type=int, default=2, help="the reach run's budget, in study budgets (2)")
    table = sub.add_parser("table", help="print the markdown report")
    table.add_argument("--label", default="fuzz")
    table.add_argument("--markdown", help="also write it to this file")
    table.add_argument("--compare", nargs="*", help="earlier labels, shown beside --label on the mutants all judged")
    regress = sub.add_parser("regressions", help="write the cases of the mutants only the fuzzer kills")
    regress.add_argument("--label", default="fuzz")
    regress.add_argument("--to", help="the folder (default: tests/fuzz/mutation_kills/<the results folder's name>)")
    verify = sub.add_parser(
        "verify", help="check that each regression case passes on the real code and kills its mutant"
    )
    verify.add_argument("--to", help="the cases' folder (default: as for regressions)")
    verify.add_argument("--commit", help="the commit of the copy (HEAD)")
    args = parser.parse_args(argv)
    commands = {
        "init": cmd_init,
        "select": cmd_select,
        "reach": cmd_reach,
        "run": cmd_run,
        "table": cmd_table,
        "regressions": cmd_regressions,
        "verify": cmd_verify,
    }
    try:
        return commands[args.command](args)
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
