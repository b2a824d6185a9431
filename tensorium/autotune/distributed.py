"""Measurements on a Ray cluster (the ``ray`` extra): ``tensorium tune ... --ray ADDRESS``.

Each job is a Ray task that needs one unit of the custom resource ``tensorium_timer``, which every node
that should time kernels declares once (``ray start --resources '{"tensorium_timer": 1}'``): so each node
times one kernel at a time, and timings do not disturb one another. A batch of jobs is submitted at once
and its results come back as they finish. A task past the time limit is cancelled (its worker killed); a
task whose worker dies (a crashing kernel) is a failed trial; neither stops the search. The results come
back to the tuning process, which writes them into its local records file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import TensoriumError
from ..targets import Target
from .measure import Job, Measurement, time_module

RESOURCE = "tensorium_timer"
"""The custom resource a node declares to time kernels (one unit: one timing at a time)."""


def _time_remote(module_text: str, target_json: dict[str, Any], repeats: int, min_run_seconds: float) -> dict[str, Any]:
    """What a Ray task runs: :func:`time_module`, as a dict (errors inside become a failed measurement)."""
    try:
        result = time_module(module_text, Target.from_json(target_json), repeats, min_run_seconds)
    except Exception as e:
        result = Measurement(None, f"{type(e).__name__}: {e}")
    return asdict(result)


@dataclass
class RayMeasurer:
    """Measures jobs as tasks on the Ray cluster at ``address`` (``"auto"``, ``"ray://host:10001"``, or
    None when ``ray.init`` was already called)."""

    address: str | None = "auto"
    timeout: float = 60.0
    repeats: int = 5
    min_run_seconds: float = 0.002
    failures: int = 0

    def __post_init__(self) -> None:
        try:
            import ray
        except ImportError:
            raise TensoriumError(
                "measuring on a Ray cluster needs the 'ray' extra: pip install 'tensorium[ray]'"
            ) from None
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise TensoriumError(f"cannot reach the Ray cluster at {self.address}: {e}") from None
        if not ray.cluster_resources().get(RESOURCE):
            raise TensoriumError(
                f"no node of the Ray cluster offers the '{RESOURCE}' resource: start the nodes that should time "
                f"kernels with ray start --resources '{{\"{RESOURCE}\": 1}}'"
            )
        self._remote = ray.remote(max_retries=0, resources={RESOURCE: 1}, num_cpus=0)(_time_remote)

    def measure(self, job: Job) -> Measurement:
        """Time one job on the cluster."""
        return next(self.measure_all([job]))[1]

    def measure_all(self, jobs: Sequence[Job]) -> Iterator[tuple[Job, Measurement]]:
        """Submit ``jobs`` at once and yield (job, measurement) as each finishes; closing the iterator early
        cancels the tasks still running."""
        import ray

        pending = {
            self._remote.remote(job.module_text, job.target.to_json(), self.repeats, self.min_run_seconds): job
            for job in jobs
        }
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.timeout)
                if not ready:
                    for ref, job in list(pending.items()):
                        ray.cancel(ref, force=True)
                        del pending[ref]
                        yield job, self._failed(f"timed out after {self.timeout:g} s on the cluster (cancelled)")
                    return
                ref = ready[0]
                job = pending.pop(ref)
                yield job, self._result(ref)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def _result(self, ref: Any) -> Measurement:
        import ray

        try:
            data = ray.get(ref)
        except ray.exceptions.WorkerCrashedError:
            return self._failed("the Ray worker crashed")
        except ray.exceptions.RayError as e:
            return self._failed(f"the Ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        result = Measurement(
            data["seconds"], data["error"], tuple(data["runs"]), data["compile_seconds"], data["checksum"]
        )
        if not result.ok:
            self.failures += 1
        return result

    def _failed(self, reason: str) -> Measurement:
        self.failures += 1
        return Measurement(None, reason)

    def close(self) -> None:
        """Nothing to stop: the cluster outlives the tuner."""
