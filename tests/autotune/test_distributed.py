"""Measurements on a local multi-node Ray cluster: results come back, crashes and hangs are failed trials,
and the records land in the local database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import tensorium
from tensorium.autotune.measure import Job, build_job
from tensorium.autotune.records import TuningDB
from tensorium.autotune.search import SearchOptions, Tuner
from tensorium.lowering.space import TunableKernel

from .test_measure import CRASH, HANG

ray = pytest.importorskip("ray", reason="the Ray cluster tests need the 'ray' extra")


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"tensorium_timer": 1}})
    nodes.add_node(num_cpus=1, resources={"tensorium_timer": 1})
    ray.init(address=nodes.address, log_to_driver=False)
    yield nodes
    ray.shutdown()
    nodes.shutdown()


def test_a_cluster_times_kernels_and_survives_crashes_and_hangs(
    cluster: object, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    from tensorium.autotune.distributed import RayMeasurer

    measurer = RayMeasurer(address=None, timeout=20.0, repeats=2)
    jobs = [build_job(gemm_kernel.op, target, gemm_kernel.default), Job("crash", "gemm{}", CRASH, target)]
    results = {job.kernel: m for job, m in measurer.measure_all(jobs)}
    assert results[gemm_kernel.key].ok, results[gemm_kernel.key].error
    assert not results["crash"].ok and "crash" in (results["crash"].error or "")
    hung = RayMeasurer(address=None, timeout=3.0).measure(Job("hang", "gemm{}", HANG, target))
    assert not hung.ok and (hung.error or "").startswith("timed out after 3 s")


def test_a_search_on_the_cluster_records_locally(
    cluster: object, tmp_path: Path, gemm_kernel: TunableKernel, target: tensorium.Target
) -> None:
    from tensorium.autotune.distributed import RayMeasurer

    db = TuningDB(tmp_path / "r.jsonl")
    options = SearchOptions(warm_start=False, model="mlp", batch=2, proposals=4)
    result = Tuner(target, db, RayMeasurer(address=None, repeats=2), options).tune_kernel(
        gemm_kernel, budget=1e9, max_trials=3
    )
    assert result.trials >= 3 and len(TuningDB(tmp_path / "r.jsonl")) == result.trials
