"""The coverage-guided fuzzer: mutate programs and pipelines, keep what reaches new compiler code.

Each execution builds a case, runs it through the oracles (:mod:`.oracle`) with Tensorium's own code
traced (:mod:`.coverage`), and

- keeps the case in the corpus when it executed an edge no earlier case did (guided mode);
- records a failure when an oracle fires, reduces it (:mod:`.reduce`) and writes it to the output folder
  with the command that reproduces it.

A case comes from mutating a corpus seed (one to three IR and/or pipeline mutations, :mod:`.mutators`), or
from the generator: each source is chosen in proportion to the new edges per second its recent cases
found (10% to 90% generated). Seeds are scheduled by how productive they have been (children that reached
new code), how recent and how fast they are, and how rarely they were picked: what AFL and Tzer call
favouring seeds; seeds of more than ``MAX_OPS`` ops are only mutated in ways that do not grow them.
Without guidance (``coverage=False``) every case is freshly generated with a random
pipeline: generation-only, the baseline of the evaluation in docs/fuzzing.md.

    report = fuzz(FuzzConfig(seconds=60, seed=0, out=Path("fuzz-out")))
    print(report.summary())
"""

from __future__ import annotations

import json
import math
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..errors import TensoriumError
from ..ir.core import Operation
from ..ir.parser import parse_module
from ..ir.printer import print_module
from ..passes.base import get_pass
from ..passes.pipeline import Pipeline, parse_pipeline
from .backends import DEFAULT_BACKENDS, KIND_SHARES, backends_for_execution, kind_of
from .coverage import make_tracer
from .generator import GenConfig, generate_module
from .mutators import (
    TERMINAL_PASSES,
    mutate_module,
    mutate_pipeline,
    random_pipeline,
    with_pass_for,
    with_pass_for_ops,
)
from .oracle import Backend, Failure, FuzzCase, Reference, Verdict, check
from .patterns import pattern_case
from .quant import quant_pipeline, quant_program
from .reduce import format_case, reduce_case
from .special import FUZZ_SPECIAL_CONSTANTS, FUZZ_SPECIAL_INPUTS
from .stages import StageSampler
from .sync import CorpusSync

GENERATE_BOUNDS = (0.1, 0.9)
"""In guided mode, the least and the most of the cases that are freshly generated rather than mutated."""
MAX_OPS = 80
"""A seed with more ops than this is only mutated in ways that do not grow it."""
FUZZ_WIDE = 0.1
"""How often a shape the fuzzer's generator draws has a wide last dimension (:attr:`GenConfig.wide_probability`)."""
FUZZ_OP_PASSES = 0.5
"""How often a freshly generated program's random pipeline gets one of the passes for its ops
(:func:`~.mutators.with_pass_for_ops`: ``layout`` for a convolution, ``pack-weights`` for a matmul, ...)."""
FUZZ_LOWERED = 0.12
"""How often a freshly generated program's random pipeline ends with ``lower-to-loops`` (half the time with
``schedule=true``): the CPU backend then compiles the loop IR as it is (the ``emit`` stage alone), so the LLVM
emitter meets the math it otherwise never sees, which ``decompose`` rewrites on the ordinary path (``tanh``,
``erf``, ``exp`` and ``log`` of f32, scalar and, scheduled, in vector loops)."""
LOWERED_OPS = 5
"""The most recipe steps of a program whose pipeline lowers to loops: such a case costs several ordinary ones
(the loop IR's round trip through the printer and parser, about a second for a 12-step program, its CPU build
and the loop interpreter), and the emitter's math needs only a few ops to be met."""
FUZZ_OPT_LEVELS: tuple[tuple[int, float], ...] = ((0, 0.4), (1, 0.3), (2, 0.3))
"""LLVM optimization levels of the CPU oracle's builds and their shares, when ``FuzzConfig.opt_level`` is None:
O0 checks the IR the emitter wrote as it stands (and compiles about seven times faster than O1), O2 is what
``tensorium.compile`` ships (the loop and SLP vectorizers, which take the emitter at its word on aliasing and
alignment), O1 sits between. Each case records its level (``// opt-level:``)."""
SHRINKING_MUTATORS = ("delete", "replace", "rewire", "attribute", "shape", "precision", "duplicate")


def case_opt_level(fixed: int | None, seed: int) -> int:
    """The LLVM level of a case whose input seed is ``seed``: ``fixed`` where given, else drawn from
    :data:`FUZZ_OPT_LEVELS` by the seed (a generator of its own, so that the run's other draws do not move)."""
    if fixed is not None:
        return fixed
    levels, shares = zip(*FUZZ_OPT_LEVELS)
    return int(np.random.default_rng([seed, 0x0B7]).choice(levels, p=shares))


@dataclass(frozen=True)
class FuzzConfig:
    """What to fuzz and for how long."""

    seconds: float = 60.0
    seed: int = 0
    out: Path | None = None
    """Folder for failures (reduced case files with their reproducing command) and the final corpus."""
    pipeline: str | None = None
    """Fuzz only this pipeline (then only the IR is mutated); None mutates pipelines too."""
    coverage: bool = True
    """Guide by coverage; False is generation-only (no feedback)."""
    trace: bool | None = None
    """Measure coverage (default: when guided). The evaluation measures it without guiding by it."""
    tracer: str | None = None
    """The coverage tracer (:data:`~tensorium.fuzz.coverage.TRACERS`: ``monitoring``, ``ctracer``,
    ``settrace``); None takes the cheapest this Python has (:func:`~tensorium.fuzz.coverage.make_tracer`)."""
    backends: tuple[Backend, ...] = DEFAULT_BACKENDS
    """The interpreter and compiled backends (:mod:`.backends`: ``cpu``, ``cpu:NAME``, ``cuda``, ``webgpu``)."""
    references: tuple[Reference, ...] = ()
    """Second references checked against the interpreter on each program (``("iree",)``: the mlir extra)."""
    cpu_fraction: float = 0.3
    """The share of executions the CPU backend also compiles and runs (when it is among ``backends``): an
    execution with it takes about ten times as long as one with the interpreter only."""
    gpu_fraction: float = 0.05
    """The share of executions the CUDA backend (PTX through ptxas, the loop interpreter) also checks, when it is
    among ``backends``."""
    webgpu_fraction: float = 0.15
    """The share of executions the WebGPU backend (WGSL through naga or Dawn, the loop interpreter) also checks,
    when it is among ``backends``: three times CUDA's, since naga validates in process and a WebGPU check costs a
    fraction of a CPU build, while a rarer share let a WGSL bug (unsigned negation) live through the one-hour
    campaign."""
    schedule_fraction: float = 0.5
    """The share of executions whose compiled backends build every kernel at a random point of its search
    space rather than at the target's default (:mod:`.schedules`)."""
    quant_fraction: float = 0.1
    """The share of freshly generated programs that are quant programs (k-bit weights, :mod:`.quant`)."""
    pattern_fraction: float = 0.25
    """The share of freshly generated programs that are pattern cases: one exact pattern of a pattern-matching
    pass, which the pass must rewrite (:mod:`.patterns`; not with a fixed ``pipeline``); they are a few ops
    each."""
    op_pass_fraction: float = FUZZ_OP_PASSES
    """The share of freshly generated programs whose random pipeline gets one of the passes for their ops
    (:func:`~.mutators.with_pass_for_ops`); 0 draws nothing, so the cases of a seed are those before it came."""
    lowered_fraction: float = FUZZ_LOWERED
    """The share of freshly generated programs whose random pipeline ends with ``lower-to-loops`` (see
    :data:`FUZZ_LOWERED`); 0 draws nothing, as for ``op_pass_fraction``."""
    opt_level: int | None = None
    """LLVM's optimization level for the CPU oracle; None (the default) draws one per execution from
    :data:`FUZZ_OPT_LEVELS`; 2 fuzzes exactly what ``tensorium.compile`` ships (``jit.DEFAULT_OPT_LEVEL``)."""
    num_ops: int = 12
    """Recipe steps of a generated program (each generated program draws 2..num_ops)."""
    reduce: bool = True
    reduce_seconds: float = 30.0
    max_execs: int | None = None
    progress_seconds: float = 2.0
    max_failures: int = 50
    """Stop after this many distinct failures."""
    jobs: int = 1
    """Worker processes (one per core): fuzzers with seeds ``seed``, ``seed + 1``, ... that share their
    corpus, merged into one report (:mod:`.parallel`)."""
    sample_stages: bool = True
    """Trace the stages of an execution that stopped showing new code (the CPU backend, the round trip, ...) on
    a sample of executions only, and the determinism oracle's second pipeline run never (:mod:`.stages`);
    False traces every stage of every execution."""
    sync_seconds: float = 3.0
    """With several workers: how often each one reads the seeds the others found (:mod:`.sync`)."""


@dataclass
class Seed:
    """A corpus entry: the case, its module (kept parsed), and how it has done."""

    case: FuzzCase
    module: Operation
    pipeline: Pipeline
    added: int
    """Execution count when it joined the corpus (recency)."""
    new_edges: int
    seconds: float = 1.0
    """How long the case took to run."""
    picks: int = 0
    productive: int = 0
    """Children of this seed that reached new code."""


@dataclass
class FoundFailure:
    """A distinct failure: the first case that showed it, its reduced case and where it was written."""

    failure: Failure
    case: FuzzCase
    reduced: FuzzCase
    found_after: float
    execs: int
    count: int = 1
    path: Path | None = None

    def reproduce_command(self) -> str:
        """The one-line shell command that replays the reduced case."""
        target = str(self.path) if self.path is not None else "CASE.mlir"
        return f"tensorium fuzz --replay {target}"


@dataclass
class InternalError:
    """An exception in the fuzzer's own machinery (building, mutating or reducing a case), not in the compiler
    under test: the run goes on, and the report says where it happened and how often."""

    stage: str
    """What the fuzzer was doing: ``generate``, ``mutate`` or ``reduce``."""
    error: str
    """The exception, one line."""
    where: str
    """The innermost frame of the fuzzer's code (``path:line in function``)."""
    detail: str
    """The full traceback of its first occurrence."""
    execs: int
    """Executions done when it first happened."""
    count: int = 1

    @property
    def signature(self) -> str:
        """What identifies it across occurrences."""
        return f"{self.stage}:{self.where}:{self.error.split(':')[0]}"


MAX_INTERNAL_ERRORS_IN_A_ROW = 20
"""A run stops after this many cases in a row that its own machinery could not build: a fuzzer bug that
fires on every case would otherwise spin through the whole budget."""


@dataclass
class FuzzReport:
    """What a run did: executions by outcome, coverage over time, failures, and the corpus."""

    config: FuzzConfig
    execs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    cpu_levels: Counter[int] = field(default_factory=Counter)
    """Executions checked on a CPU backend, by the LLVM optimization level of their builds."""
    failures: list[FoundFailure] = field(default_factory=list)
    corpus_size: int = 0
    edges: int = 0
    line_percent: float = 0.0
    seconds: float = 0.0
    reduce_seconds: float = 0.0
    imported: int = 0
    """Seeds of other workers run by this one (:mod:`.sync`, on the interpreter only), not counted in ``execs``."""
    imported_kept: int = 0
    """Of those, the ones that reached code new to this worker and joined its corpus."""
    timeline: list[tuple[float, int, int, int]] = field(default_factory=list)
    """(seconds, executions, edges, lines) samples, about one per second (a single worker's run only)."""
    workers: list[dict[str, object]] = field(default_factory=list)
    """With several workers: each one's own report, as plain data."""
    internal_errors: list[InternalError] = field(default_factory=list)
    """Exceptions in the fuzzer's own code, deduplicated by :attr:`InternalError.signature`."""
    stopped: str = ""
    """Why the run ended before its budget, if it did (interrupted, or its machinery failing every case)."""

    @property
    def rate(self) -> float:
        """Executions per second (reduction time excluded)."""
        busy = self.seconds - self.reduce_seconds
        return self.execs / busy if busy > 0 else 0.0

    def summary(self) -> str:
        """A human-readable account of the run."""
        lines = [
            f"fuzzed {self.seconds:.1f} s: {self.execs} executions ({self.rate:.1f}/s), "
            + ", ".join(f"{n} {k}" for k, n in sorted(self.outcomes.items())),
        ]
        if self.edges:
            coverage = f"{self.edges} edges, {self.line_percent:.1f}% of Tensorium's lines"
            lines.append(f"coverage: {coverage}; corpus {self.corpus_size}")
        if self.imported:
            lines.append(f"shared corpus: {self.imported} seeds of other workers run, {self.imported_kept} kept")
        if self.mutations:
            lines.append("mutations: " + ", ".join(f"{k} {n}" for k, n in self.mutations.most_common()))
        if self.cpu_levels:
            builds = ", ".join(f"O{level} {n}" for level, n in sorted(self.cpu_levels.items()))
            lines.append(f"CPU builds by LLVM level: {builds}")
        if self.refusals:
            top = ", ".join(f"{k} ({n})" for k, n in self.refusals.most_common(3))
            lines.append(f"most frequent documented refusals: {top}")
        if self.stopped:
            lines.append(f"stopped early: {self.stopped}")
        for error in self.internal_errors:
            lines.append(
                f"fuzzer error ({error.stage}), seen {error.count}x: {error.error} ({error.where}); a bug in the "
                "fuzzer, not in the compiler"
            )
        if not self.failures:
            lines.append("no failures")
        for n, found in enumerate(self.failures, 1):
            f = found.failure
            lines.append(
                f"failure {n}: {f.kind} at {f.stage}{f' ({f.where})' if f.where else ''}, seen {found.count}x, "
                f"first after {found.found_after:.1f} s"
            )
            lines.append(f"  {f.summary.splitlines()[0] if f.summary else ''}")
            lines.append(f"  reproduce: {found.reproduce_command()}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        """The report as plain data (for the evaluation scripts)."""
        return {
            "seconds": self.seconds,
            "execs": self.execs,
            "outcomes": dict(self.outcomes),
            "cpu_levels": {str(level): n for level, n in sorted(self.cpu_levels.items())},
            "edges": self.edges,
            "line_percent": self.line_percent,
            "corpus": self.corpus_size,
            "imported": self.imported,
            "imported_kept": self.imported_kept,
            "timeline": self.timeline,
            "workers": self.workers,
            "stopped": self.stopped,
            "internal_errors": [
                {"stage": e.stage, "error": e.error, "where": e.where, "execs": e.execs, "count": e.count}
                for e in self.internal_errors
            ],
            "failures": [
                {
                    "signature": f.failure.signature,
                    "summary": f.failure.summary,
                    "found_after": f.found_after,
                    "execs": f.execs,
                    "count": f.count,
                    "path": str(f.path) if f.path else None,
                }
                for f in self.failures
            ],
        }


class Fuzzer:
    """One fuzzing session; :func:`fuzz` is the short way to run one."""

    def __init__(self, config: FuzzConfig, log: TextIO | None = sys.stderr):
        self.config = config
        self.log = log
        self.rng = np.random.default_rng(config.seed)
        trace = config.coverage if config.trace is None else config.trace
        self.tracer = make_tracer(config.tracer) if trace else None
        self.stages = (
            StageSampler(self.tracer, config.seed) if self.tracer is not None and config.sample_stages else None
        )
        """Pauses the tracer in stages of an execution that stopped showing new code (:mod:`.stages`)."""
        self.corpus: list[Seed] = []
        self.report = FuzzReport(config)
        self._by_signature: dict[str, FoundFailure] = {}
        self._gen_config = GenConfig(
            num_ops=config.num_ops, special_probability=FUZZ_SPECIAL_CONSTANTS, wide_probability=FUZZ_WIDE
        )
        self._fixed_pipeline = parse_pipeline(config.pipeline) if config.pipeline is not None else None
        self.on_progress: Callable[[dict[str, Any]], None] | None = None
        """Called with the progress numbers every ``progress_seconds`` (the parallel workers report with it)."""
        self.sync: CorpusSync | None = None
        """The folder shared with other workers (set by :mod:`.parallel`): new seeds are written there, and
        the others' seeds read every ``sync_seconds``."""
        self._expect: str | None = None
        """The pass the case being built must rewrite (a pattern case, :mod:`.patterns`), or None."""
        self._gain = {"generate": [1.0, 1.0], "mutate": [1.0, 1.0]}
        """Per source of cases: moving averages of the new edges a case found and of its seconds."""
        self._failed_in_a_row = 0
        """Cases in a row whose building raised in the fuzzer's own code."""
        if config.out is not None:
            (config.out / "failures").mkdir(parents=True, exist_ok=True)

    # one execution ------------------------------------------------------------------------------
    def _generate(self) -> tuple[Operation, Pipeline]:
        self._expect = None
        if self._fixed_pipeline is None and self.rng.random() < self.config.pattern_fraction:
            found = pattern_case(self.rng)
            if found is not None:
                module, pipeline_text, self._expect = found
                return module, parse_pipeline(pipeline_text)
        if self.rng.random() < self.config.quant_fraction:
            module = quant_program(int(self.rng.integers(2**31)))
            return module, self._fixed_pipeline if self._fixed_pipeline is not None else quant_pipeline(self.rng)
        cfg = self.config
        lowered = self._fixed_pipeline is None and cfg.lowered_fraction > 0 and self.rng.random() < cfg.lowered_fraction
        most = min(cfg.num_ops, LOWERED_OPS) if lowered else cfg.num_ops
        module = generate_module(int(self.rng.integers(2**31)), int(self.rng.integers(2, most + 1)), self._gen_config)
        if self._fixed_pipeline is not None:
            return module, self._fixed_pipeline
        pipeline = random_pipeline(self.rng)
        if cfg.op_pass_fraction > 0 and self.rng.random() < cfg.op_pass_fraction:
            pipeline = with_pass_for_ops(pipeline, module, self.rng)
        if lowered:
            lower: Any = get_pass("lower-to-loops")
            pipeline = Pipeline((*pipeline, lower(schedule=bool(self.rng.random() < 0.5))))
        return module, pipeline

    def _pick(self) -> Seed:
        n = len(self.corpus)
        typical = float(np.median([s.seconds for s in self.corpus]))
        weights = np.array(
            [
                (1.0 + 2.0 * s.productive)
                * (2.0 if n - i <= 10 else 1.0)
                * min(4.0, math.sqrt(typical / max(s.seconds, 1e-3)))
                / math.sqrt(1.0 + s.picks)
                for i, s in enumerate(self.corpus)
            ]
        )
        seed = self.corpus[int(self.rng.choice(n, p=weights / weights.sum()))]
        seed.picks += 1
        return seed

    def _mutate(self, seed: Seed) -> tuple[Operation, Pipeline]:
        module, pipeline = seed.module, seed.pipeline
        changed = False
        for _ in range(int(self.rng.integers(1, 4))):
            ir_side = self._fixed_pipeline is not None or self.rng.random() < 0.7
            if ir_side:
                size = sum(1 for _ in module.walk())
                only = SHRINKING_MUTATORS if size > MAX_OPS else ()
                mutant = mutate_module(module, self.rng, self._gen_config, only=only)
                if mutant is not None:
                    module, name = mutant
                    self.report.mutations[name] += 1
                    changed = True
                    if self._fixed_pipeline is None:
                        pipeline = with_pass_for(pipeline, name, self.rng)
            else:
                pipeline, kind = mutate_pipeline(pipeline, self.rng)
                self.report.mutations[f"pipeline-{kind}"] += 1
                changed = True
        if not changed:
            pipeline, kind = mutate_pipeline(pipeline, self.rng)
            self.report.mutations[f"pipeline-{kind}"] += 1
        return module, pipeline

    def step(self) -> Verdict | None:
        """Build one case, run it, and keep or record what it found; None when the fuzzer's own code failed to
        build the case (recorded in :attr:`FuzzReport.internal_errors`)."""
        parent: Seed | None = None
        self._expect = None
        source = "generate"
        try:
            if self.config.coverage and self.corpus and self.rng.random() >= self._generate_share():
                source = "mutate"
                parent = self._pick()
                module, pipeline = self._mutate(parent)
            else:
                module, pipeline = self._generate()
        except Exception as error:  # a bug of the fuzzer's own costs one case, not the run
            self._internal(source, error)
            return None
        self._failed_in_a_row = 0
        seed = int(self.rng.integers(2**31))
        backends = self.config.backends
        lowers = any(p.name in TERMINAL_PASSES for p in pipeline)  # only the CPU checks big lowered programs
        shares = {field: getattr(self.config, field) for field in KIND_SHARES.values()}
        backends = backends_for_execution(backends, shares, self.rng, lowers)
        schedule_seed = int(self.rng.integers(2**31)) if self.rng.random() < self.config.schedule_fraction else None
        case = FuzzCase(
            print_module(module),
            str(pipeline),
            seed,
            backends,
            case_opt_level(self.config.opt_level, seed),
            self.config.references,
            specials=bool(self.rng.random() < FUZZ_SPECIAL_INPUTS),
        )
        case = replace(case, schedule_seed=schedule_seed, expect=self._expect)
        verdict, new, seconds = self._execute(case, module)
        gain = self._gain[source]
        gain[0], gain[1] = 0.9 * gain[0] + 0.1 * new, 0.9 * gain[1] + 0.1 * seconds
        if verdict.failure is not None:
            self._record(case, verdict.failure)
        elif new and self.config.coverage and verdict.status != "invalid":
            self._keep(Seed(case, module, pipeline, self.report.execs, new, seconds))
            if parent is not None:
                parent.productive += 1
        return verdict

    def _execute(self, case: FuzzCase, module: Operation, count: bool = True) -> tuple[Verdict, int, float]:
        """Run ``case`` (``module`` is its program, parsed) through the oracles with coverage traced, and count
        it as an execution unless ``count`` is False; returns the verdict, the number of new edges and the
        seconds it took."""
        if self.config.out is not None:
            (self.config.out / "current.mlir").write_text(format_case(case, note="the case running now"))
        started = time.perf_counter()
        if self.tracer is not None:
            self.tracer.start()
        try:
            verdict = check(case, module, watch=self.stages)
        finally:
            if self.tracer is not None:
                self.tracer.stop()
        seconds = time.perf_counter() - started
        if count:
            self.report.execs += 1
            self.report.outcomes[verdict.status] += 1
            if verdict.status == "refused":
                self.report.refusals[verdict.reason.split(":")[0]] += 1
            if any(kind_of(backend) == "cpu" for backend in case.backends):
                self.report.cpu_levels[case.opt_level] += 1
        new = self.tracer.commit() if self.tracer is not None else 0
        if self.stages is not None:
            new += self.stages.take()
        return verdict, new, seconds

    def _keep(self, seed: Seed) -> None:
        """Add ``seed`` to the corpus, and share it with the other workers (:mod:`.sync`)."""
        self.corpus.append(seed)
        if self.sync is not None:
            self.sync.publish(seed.case, note=f"reached {seed.new_edges} new edges")

    def import_shared(self) -> int:
        """Run the seeds the other workers published since the last poll; those that reach code new to this
        worker join its corpus (without being published again). Returns how many joined.

        The worker that found a seed has run every oracle on it; here it runs on the interpreter only, to see
        what it covers of the passes, and is not counted as an execution (the rate counts the cases this
        worker made)."""
        if self.sync is None:
            return 0
        kept = 0
        for case in self.sync.poll():
            try:
                module, pipeline = parse_module(case.module), parse_pipeline(case.pipeline)
            except TensoriumError:
                continue  # a pass or an op this worker does not know (the workers run one checkout: not seen)
            case = replace(case, module=print_module(module))  # without the other worker's header lines
            verdict, new, _ = self._execute(replace(case, backends=("interp",)), module, count=False)
            self.report.imported += 1
            if verdict.failure is not None:
                self._record(case, verdict.failure)
            elif new and verdict.status != "invalid":
                typical = float(np.median([s.seconds for s in self.corpus])) if self.corpus else 1.0
                self.corpus.append(Seed(case, module, pipeline, self.report.execs, new, typical))
                kept += 1
        self.report.imported_kept += kept
        return kept

    def _generate_share(self) -> float:
        """The chance of generating the next case afresh: each source (generating, mutating) in proportion
        to the new edges per second its recent cases found (moving averages), within GENERATE_BOUNDS."""
        rates = {k: new / max(seconds, 1e-6) for k, (new, seconds) in self._gain.items()}
        total = rates["generate"] + rates["mutate"]
        share = rates["generate"] / total if total > 0 else 0.5
        low, high = GENERATE_BOUNDS
        return min(high, max(low, share))

    def _record(self, case: FuzzCase, failure: Failure) -> None:
        known = self._by_signature.get(failure.signature)
        if known is not None:
            known.count += 1
            return
        elapsed = time.monotonic() - self._start
        reduced = case
        if self.config.reduce:
            start = time.monotonic()
            self._say(f"reducing a {failure.kind} failure at {failure.stage}: {failure.summary.splitlines()[0][:100]}")
            try:
                reduced = reduce_case(case, failure, self.config.reduce_seconds)
            except Exception as error:  # the failure is kept, unreduced
                self._internal("reduce", error)
                self._say("  the reducer failed; the case is recorded as it was found")
            self.report.reduce_seconds += time.monotonic() - start
        found = FoundFailure(failure, case, reduced, elapsed, self.report.execs)
        self._by_signature[failure.signature] = found
        self.report.failures.append(found)
        if self.config.out is not None:
            number = len(self.report.failures)
            stem = f"{number:03d}-{failure.kind}-{_slug(failure.stage)}"
            found.path = self.config.out / "failures" / f"{stem}.mlir"
            found.path.write_text(format_case(reduced, failure, f"reproduce: {found.reproduce_command()}"))
            (self.config.out / "failures" / f"{stem}.log").write_text(
                f"{failure.detail}\n\n// the case before reduction:\n{format_case(case, failure)}"
            )
        self._say(f"failure {len(self.report.failures)}: {failure.signature}")

    def _internal(self, stage: str, error: Exception) -> None:
        """Record an exception raised by the fuzzer's own code while it was at ``stage``."""
        frames = traceback.extract_tb(error.__traceback__)
        ours = [f for f in frames if "/fuzz/" in f.filename.replace("\\", "/")] or frames
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno} in {ours[-1].name}" if ours else "?"
        text = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
        found = InternalError(stage, text, where, "".join(traceback.format_exception(error)), self.report.execs)
        if stage != "reduce":
            self._failed_in_a_row += 1
        for known in self.report.internal_errors:
            if known.signature == found.signature:
                known.count += 1
                return
        self.report.internal_errors.append(found)
        self._say(f"fuzzer error ({stage}): {text} ({where}); going on")
        if self.config.out is not None:
            name = f"fuzzer-error-{len(self.report.internal_errors):03d}-{stage}.log"
            (self.config.out / "failures" / name).write_text(found.detail)

    # the session ---------------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)

    def _sample(self) -> None:
        tracer = self.tracer
        edges = len(tracer.total) if tracer is not None else 0
        lines = len(tracer.lines()) if tracer is not None else 0
        self.report.timeline.append((time.monotonic() - self._start, self.report.execs, edges, lines))

    def _progress(self) -> None:
        r = self.report
        elapsed = time.monotonic() - self._start
        if self.on_progress is not None:
            self.on_progress(
                {
                    "execs": r.execs,
                    "corpus": len(self.corpus),
                    "line_percent": self.tracer.line_percent() if self.tracer is not None else 0.0,
                    "failures": len(r.failures),
                    "invalid": r.outcomes["invalid"],
                    "refused": r.outcomes["refused"],
                }
            )
        cov = ""
        if self.tracer is not None:
            cov = f"  edges {len(self.tracer.total)}  lines {self.tracer.line_percent():.1f}%"
        self._say(
            f"[{elapsed:6.1f}s] execs {r.execs} ({r.execs / max(elapsed - r.reduce_seconds, 1e-9):.1f}/s)"
            f"  corpus {len(self.corpus)}{cov}  failures {len(r.failures)}"
            f"  invalid {r.outcomes['invalid']}  refused {r.outcomes['refused']}"
        )

    def run(self) -> FuzzReport:
        """Fuzz until the time or execution budget is spent (or enough distinct failures are found)."""
        cfg = self.config
        self._start = time.monotonic()
        deadline = self._start + cfg.seconds
        next_progress = self._start + cfg.progress_seconds
        next_sample = self._start
        next_sync = self._start + cfg.sync_seconds
        try:
            self._loop(deadline, next_progress, next_sample, next_sync)
        except KeyboardInterrupt:
            self.report.stopped = "interrupted (Ctrl-C)"
            self._say("interrupted: writing the report and the corpus so far")
        self._sample()
        r = self.report
        r.seconds = time.monotonic() - self._start
        r.corpus_size = len(self.corpus)
        if self.tracer is not None:
            r.edges = len(self.tracer.total)
            r.line_percent = self.tracer.line_percent()
        if cfg.out is not None:
            self._write_corpus(cfg.out)
        return r

    def _loop(self, deadline: float, next_progress: float, next_sample: float, next_sync: float) -> None:
        cfg = self.config
        while time.monotonic() < deadline:
            if cfg.max_execs is not None and self.report.execs >= cfg.max_execs:
                break
            if len(self.report.failures) >= cfg.max_failures:
                self._say(f"stopping: {cfg.max_failures} distinct failures")
                break
            if self.step() is None and self._failed_in_a_row >= MAX_INTERNAL_ERRORS_IN_A_ROW:
                self.report.stopped = f"the fuzzer's own code failed on {self._failed_in_a_row} cases in a row"
                self._say(f"stopping: {self.report.stopped}")
                break
            now = time.monotonic()
            if self.sync is not None and now >= next_sync:
                self.import_shared()
                next_sync = time.monotonic() + cfg.sync_seconds
            if now >= next_sample:
                self._sample()
                next_sample = now + 1.0
            if now >= next_progress and (self.log is not None or self.on_progress is not None):
                # Nobody reads a quiet run's progress: its line percentage (the package's executable lines,
                # compiled file by file on the first call, about a second) waits for the report.
                self._progress()
                next_progress = now + cfg.progress_seconds

    def _write_corpus(self, out: Path) -> None:
        folder = out / "corpus"
        folder.mkdir(parents=True, exist_ok=True)
        for n, seed in enumerate(self.corpus):
            (folder / f"{n:04d}.mlir").write_text(format_case(seed.case, note=f"reached {seed.new_edges} new edges"))
        (out / "current.mlir").unlink(missing_ok=True)
        (out / "report.json").write_text(json.dumps(self.report.to_json(), indent=1))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").replace("--", "-")


def fuzz(config: FuzzConfig, log: TextIO | None = sys.stderr) -> FuzzReport:
    """Run one fuzzing session (progress lines go to ``log``; None is silent), on ``config.jobs`` cores."""
    if config.jobs > 1:
        from .parallel import fuzz_parallel

        return fuzz_parallel(config, log)
    return Fuzzer(config, log).run()


def replay(path: Path, check_case: Callable[[FuzzCase], Verdict] = check) -> tuple[FuzzCase, Verdict]:
    """Read a case file and run it through the oracles."""
    from .reduce import read_case

    case = read_case(path)
    return case, check_case(case)
