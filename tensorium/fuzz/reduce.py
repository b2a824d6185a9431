"""Reduction: shrink a failing case to a small program and a short pipeline that fail the same way.

Delta debugging, greedily, to a fixpoint or a time budget: drop passes from the pipeline and reset their
options; keep one output of ``@main``, or return an earlier value instead (what only fed the outputs
dies); then, op by op from the last, *cut* an op (its results become new
inputs of ``@main``) or *bypass* it (its uses take one of its operands of the same type), dropping the
code and inputs nobody uses any more. A candidate is kept when it still fails with the same oracle,
stage and (for crashes) crash site.

Reduced cases are written as IR files whose header comment lines carry the pipeline and the input seed,
so ``tensorium fuzz --replay FILE`` reproduces them and the test suite replays them as regressions.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import ParseError
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, func_return, lookup_func, make_func, set_results
from ..ir.parser import parse_module
from ..ir.printer import print_module
from ..ir.types import FunctionType, TensorType
from ..ir.verifier import verify
from ..passes.pipeline import Pipeline, parse_pipeline
from .backends import BackendError, parse_backends
from .oracle import BACKENDS, REFERENCES, Failure, FuzzCase, check
from .patterns import REWRITTEN

HEADER_KEYS = ("pipeline", "seed", "backends", "opt-level", "references", "specials", "schedule-seed", "expect")


def same_failure(a: Failure, b: Failure) -> bool:
    """True when two failures come from the same oracle at the same stage (and crash site)."""
    return a.kind == b.kind and a.stage == b.stage and a.where == b.where


def reproduces(case: FuzzCase, failure: Failure) -> bool:
    """True when ``case`` still fails like ``failure``."""
    verdict = check(case, determinism=failure.kind == "nondeterminism")
    return verdict.failure is not None and same_failure(verdict.failure, failure)


def reduce_case(
    case: FuzzCase,
    failure: Failure,
    seconds: float = 60.0,
    still_fails: Callable[[FuzzCase], bool] | None = None,
) -> FuzzCase:
    """A smaller case that still fails like ``failure`` (``case`` itself when nothing smaller does, or when its
    text does not parse: a program the fuzzer made in memory that its own text cannot spell, which the round
    trip reports)."""
    if failure.kind == "missed-rewrite":
        return case  # a pattern case is a few ops already, and cutting its constants into inputs unmakes the pattern
    try:
        parse_module(case.module, verify=False)
    except ParseError:
        return case
    test = still_fails if still_fails is not None else (lambda c: reproduces(c, failure))
    deadline = time.monotonic() + seconds
    best = case
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for candidate in _candidates(best):
            if time.monotonic() >= deadline:
                break
            if candidate.module == best.module and candidate.pipeline == best.pipeline:
                continue
            if test(candidate):
                best = candidate
                progress = True
                break
    return best


def _candidates(case: FuzzCase):  # type: ignore[no-untyped-def]
    """Smaller variants of ``case``, the biggest cuts first (a generator: each is built when asked for)."""
    pipeline = parse_pipeline(case.pipeline)
    passes = list(pipeline)
    for i in reversed(range(len(passes))):
        yield dataclasses.replace(case, pipeline=str(Pipeline(tuple(passes[:i] + passes[i + 1 :]))))
    for i, p in enumerate(passes):
        default = type(p)()
        if p != default:
            changed = passes[:i] + [default] + passes[i + 1 :]
            yield dataclasses.replace(case, pipeline=str(Pipeline(tuple(changed))))
    module = parse_module(case.module)
    func = lookup_func(module, "main")
    assert func is not None
    outputs = list(func_return(func).operands)
    if len(outputs) > 1:
        for keep in range(len(outputs)):
            yield _with_module(case, lambda m, keep=keep: _keep_output(m, keep))  # type: ignore[misc]
    count = len(func_body(func).ops) - 1
    for index in range(count):
        yield _with_module(case, lambda m, index=index: _return_result(m, index))  # type: ignore[misc]
    for index in reversed(range(count)):
        yield _with_module(case, lambda m, index=index: _cut(m, index))  # type: ignore[misc]
        yield _with_module(case, lambda m, index=index: _bypass(m, index))  # type: ignore[misc]


def _with_module(case: FuzzCase, change: Callable[[Operation], bool]) -> FuzzCase:
    module = parse_module(case.module)
    if not change(module):
        return case
    _clean(module)
    try:
        verify(module)
    except Exception:
        return case
    return dataclasses.replace(case, module=print_module(module))


def _main(module: Operation) -> Operation:
    func = lookup_func(module, "main")
    assert func is not None
    return func


def _keep_output(module: Operation, keep: int) -> bool:
    func = _main(module)
    set_results(func, [list(func_return(func).operands)[keep]])
    return True


def _return_result(module: Operation, index: int) -> bool:
    """Make the first result of the ``index``-th op the only output (what comes after it dies)."""
    func = _main(module)
    op = func_body(func).ops[index]
    if not op.results or list(func_return(func).operands) == [op.results[0]]:
        return False
    set_results(func, [op.results[0]])
    return True


def _cut(module: Operation, index: int) -> bool:
    """Replace the results of the ``index``-th op by new inputs of ``@main`` and erase the op."""
    func = _main(module)
    body = func_body(func)
    op = body.ops[index]
    if not all(isinstance(r.type, TensorType) and r.type.is_static for r in op.results):
        return False
    for result in op.results:
        arg = body.add_arg(result.type, f"cut{index}_{result.index}")
        result.replace_all_uses_with(arg)
    op.erase()
    return True


def _bypass(module: Operation, index: int) -> bool:
    """Let the uses of the ``index``-th op's only result take one of its operands of the same type."""
    body = func_body(_main(module))
    op = body.ops[index]
    if len(op.results) != 1:
        return False
    same = [v for v in op.operands if v.type == op.results[0].type]
    if not same:
        return False
    op.results[0].replace_all_uses_with(same[0])
    op.erase()
    return True


def _clean(module: Operation) -> None:
    """Erase ops whose results nobody uses and inputs nobody reads; keep the signature in step."""
    func = _main(module)
    body = func_body(func)
    changed = True
    while changed:
        changed = False
        for op in reversed(list(body.ops)):
            if op.name != "func.return" and op.results and not any(r.uses for r in op.results):
                op.erase()
                changed = True
    used = [a for a in body.args if a.uses]
    if len(used) == len(body.args):
        func.attributes["function_type"] = FunctionType(
            tuple(a.type for a in body.args), tuple(v.type for v in func_return(func).operands)
        )
        return
    fresh = make_func("main", [a.type for a in used], arg_names=[a.name_hint for a in used])
    new_body = func_body(fresh)
    mapping: dict[Value, Value] = dict(zip(used, new_body.args))
    for old, new in mapping.items():
        old.replace_all_uses_with(new)
    for op in list(body.ops):
        body.remove(op)
        new_body.append(op)
    set_results(fresh, list(func_return(fresh).operands))
    block = module.regions[0].block
    block.insert_before(func, fresh)
    func.erase()


# --- case files ---------------------------------------------------------------------------------
def format_case(case: FuzzCase, failure: Failure | None = None, note: str = "") -> str:
    """The IR text of ``case`` with a header of ``// key: value`` lines that :func:`read_case` reads."""
    lines = []
    if failure is not None:
        lines.append(
            f"// tensorium fuzz: {failure.kind} at {failure.stage}{f' ({failure.where})' if failure.where else ''}"
        )
        lines.append(f"// {failure.summary.splitlines()[0] if failure.summary else ''}")
    if note:
        lines.extend(f"// {line}" for line in note.splitlines())
    lines.append(f"// pipeline: {case.pipeline}")
    lines.append(f"// seed: {case.seed}")
    lines.append(f"// backends: {','.join(case.backends)}")
    if any(b != "interp" for b in case.backends):
        lines.append(f"// opt-level: {case.opt_level}")
    if case.references:
        lines.append(f"// references: {','.join(case.references)}")
    if case.specials:
        lines.append("// specials: yes")
    if case.schedule_seed is not None:
        lines.append(f"// schedule-seed: {case.schedule_seed}")
    if case.expect is not None:
        lines.append(f"// expect: {case.expect}")
    return "\n".join(lines) + "\n" + case.module


def parse_case(text: str, filename: str = "<case>") -> FuzzCase:
    """A case from its file text: the IR and the ``pipeline``, ``seed``, ``backends``, ``opt-level``,
    ``references``, ``specials``, ``schedule-seed`` and ``expect`` header lines (all but the first optional:
    0, both backends, 3, none, no, the default points and no pattern expected)."""
    header: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("//"):
            if stripped:
                break
            continue
        key, sep, value = stripped[2:].strip().partition(":")
        if sep and key.strip() in HEADER_KEYS:
            header[key.strip()] = value.strip()
    if "pipeline" not in header:
        raise ParseError(f"{filename}: no '// pipeline: ...' header line (the passes to run on this program)")
    seed_text = header.get("seed", "0")
    if not seed_text.isdigit():
        raise ParseError(f"{filename}: the '// seed:' header must be a non-negative integer, got '{seed_text}'")
    backends = tuple(b.strip() for b in header.get("backends", ",".join(BACKENDS)).split(",") if b.strip())
    try:
        backends = parse_backends(backends)
    except BackendError as e:
        raise ParseError(f"{filename}: unknown backend '{e.name}' in '// backends:' ({e.reason})") from None
    schedule_seed = header.get("schedule-seed")
    if schedule_seed is not None and not schedule_seed.isdigit():
        raise ParseError(f"{filename}: the '// schedule-seed:' header must be a number, got '{schedule_seed}'")
    level = header.get("opt-level", "3")
    if level not in ("0", "1", "2", "3"):
        raise ParseError(f"{filename}: the '// opt-level:' header must be 0, 1, 2 or 3, got '{level}'")
    references = tuple(r.strip() for r in header.get("references", "").split(",") if r.strip())
    if any(r not in REFERENCES for r in references):
        raise ParseError(f"{filename}: unknown reference in '// references:' (known: {', '.join(REFERENCES)})")
    specials = header.get("specials", "no")
    if specials not in ("yes", "no"):
        raise ParseError(f"{filename}: the '// specials:' header must be yes or no, got '{specials}'")
    expect = header.get("expect")
    if expect is not None and expect not in REWRITTEN:
        raise ParseError(
            f"{filename}: '// expect:' must name a pass with a pattern ({', '.join(REWRITTEN)}), got '{expect}'"
        )
    parse_module(text, filename)
    parse_pipeline(header["pipeline"])
    case = FuzzCase(
        text,
        header["pipeline"],
        int(seed_text),
        backends,
        int(level),
        references,  # type: ignore[arg-type]
        specials == "yes",
    )
    case = dataclasses.replace(case, expect=expect)
    return case if schedule_seed is None else dataclasses.replace(case, schedule_seed=int(schedule_seed))


def read_case(path: str | Path) -> FuzzCase:
    """Read a case file written by the fuzzer (or by hand, as a regression test)."""
    return parse_case(Path(path).read_text(encoding="utf-8"), str(path))
