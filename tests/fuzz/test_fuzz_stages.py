"""The stage sampler: which stages of an execution the coverage tracer watches (tensorium/fuzz/stages.py)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tensorium.fuzz.coverage import CoverageTracer, Edge, make_tracer
from tensorium.fuzz.fuzzer import FuzzConfig, Fuzzer
from tensorium.fuzz.oracle import FuzzCase, check
from tensorium.fuzz.stages import NEVER_TRACED, StageSampler

PROGRAM = """
module {
  func.func @main(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %0 = graph.add %a, %b : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %1 = graph.relu %0 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return %1 : tensor<4x3xf32>
  }
}
"""


class FakeTracer(CoverageTracer):
    """Records when it is started and stopped; each run of a stage reaches the edges ``pending`` says."""

    def __init__(self) -> None:
        super().__init__(Path("/nowhere"))
        self.events: list[str] = []
        self.pending: set[Edge] = set()

    def _begin(self) -> None:
        self.events.append("start")

    def _end(self) -> None:
        self.events.append("stop")

    def _take(self) -> set[Edge]:
        taken, self.pending = self.pending, set()
        return taken


def run_stage(sampler: StageSampler, tracer: FakeTracer, stage: str, edges: Iterable[Edge] = ()) -> bool:
    """Run ``stage`` inside the sampler; returns whether the tracer was running in it."""
    with sampler(stage):
        traced = tracer.running
        tracer.pending |= set(edges)
    return traced


def test_the_determinism_run_is_never_traced_and_the_tracer_runs_again_after_it() -> None:
    tracer = FakeTracer()
    sampler = StageSampler(tracer)
    tracer.start()
    assert "determinism" in NEVER_TRACED
    assert not run_stage(sampler, tracer, "determinism")
    assert tracer.running
    assert tracer.events == ["start", "stop", "start"]


def test_a_stage_is_sampled_once_it_stops_showing_new_edges_and_traced_again_after_a_new_one() -> None:
    tracer = FakeTracer()
    sampler = StageSampler(tracer, seed=1, saturated_after=3, sampling=1000)
    tracer.start()
    assert all(run_stage(sampler, tracer, "cpu", [("f", 1, n)]) for n in range(5))  # productive: always traced
    assert [run_stage(sampler, tracer, "cpu") for _ in range(3)] == [True, True, True]
    assert sum(run_stage(sampler, tracer, "cpu") for _ in range(50)) <= 2  # saturated: about 1 in 1000
    assert sampler.paused["cpu"] >= 48
    other = StageSampler(tracer, seed=1, saturated_after=3, sampling=1)  # sampled on every run
    for _ in range(3):
        run_stage(other, tracer, "cpu")
    assert run_stage(other, tracer, "cpu", [("f", 9, 9)])
    assert other.dry["cpu"] == 0  # the new edge put it back on every run


def test_compiled_backends_are_watched_by_kind_and_new_edges_in_a_stage_count_for_the_execution() -> None:
    tracer = FakeTracer()
    sampler = StageSampler(tracer, saturated_after=1, sampling=10**9)
    tracer.start()
    run_stage(sampler, tracer, "cpu:x86-64-v3", [("f", 1, 2)])
    run_stage(sampler, tracer, "cpu")
    assert not run_stage(sampler, tracer, "cpu:x86-64")  # one kind: saturated by the runs above
    tracer.pending.add(("g", 1, 2))  # reached before the next stage: committed when it starts
    run_stage(sampler, tracer, "roundtrip", [("h", 3, 4)])
    assert sampler.take() == 3
    assert sampler.take() == 0
    assert len(tracer.total) == 3


def test_outside_a_traced_execution_the_sampler_does_nothing() -> None:
    tracer = FakeTracer()
    sampler = StageSampler(tracer)
    assert not run_stage(sampler, tracer, "cpu")
    assert tracer.events == [] and not sampler.traced and not sampler.paused


def test_the_oracle_runs_its_stages_inside_watch_with_the_same_verdict() -> None:
    seen: list[str] = []
    tracer = make_tracer("settrace")
    sampler = StageSampler(tracer)

    def watch(stage: str):  # type: ignore[no-untyped-def]
        seen.append(stage)
        return sampler(stage)

    case = FuzzCase(PROGRAM, "canonicalize,fuse", seed=3, backends=("interp", "cpu"), opt_level=1)
    tracer.start()
    try:
        verdict = check(case, watch=watch)
    finally:
        tracer.stop()
    assert verdict.status == "ok" and check(case).status == "ok"
    assert seen == ["roundtrip", "determinism", "interp", "cpu"]
    assert sampler.take() > 0  # the first run of each stage is traced and reaches code


def test_the_edges_a_watched_stage_reaches_count_for_the_execution_that_reached_them() -> None:
    config = FuzzConfig(
        seconds=600, max_execs=1, seed=5, reduce=False, backends=("interp", "cpu"), cpu_fraction=1.0, tracer="settrace"
    )
    fuzzer = Fuzzer(config, log=None)
    fuzzer.run()
    assert fuzzer.stages is not None and fuzzer.stages.traced  # its stages ran traced
    assert len(fuzzer.corpus) == 1
    assert fuzzer.corpus[0].new_edges == len(fuzzer.tracer.total)  # type: ignore[union-attr]
    assert Fuzzer(FuzzConfig(sample_stages=False), log=None).stages is None
