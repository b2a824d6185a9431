"""The runners the harness compares: numpy, PyTorch eager, torch.compile, onnxruntime and Tensorium.

A runner turns a workload :class:`~tensorium.bench.workloads.Instance` into a :class:`Prepared` call: a
zero-argument function that computes the workload once (the thing timed), a conversion of its result
to numpy (not timed), and the cold compile seconds where the runner compiles. ``prepare`` raises
:class:`NotApplicable` when a runner has no version of a workload (numpy has no convolution); any other
exception is a failure the harness reports with its reason.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .. import api
from . import RUNNERS
from .workloads import Instance

ONNX_OPSET = 17


class NotApplicable(Exception):
    """The runner has no version of this workload (reported as n/a, not as a failure)."""


@dataclass
class Prepared:
    """A workload ready to run: ``call()`` computes it once, ``to_numpy`` converts what ``call`` returns."""

    call: Callable[[], Any]
    to_numpy: Callable[[Any], np.ndarray]
    compile_s: float | None = None
    stats: dict[str, Any] | None = None
    """Tensorium's ``CompiledModel.stats()`` (kernels, peak intermediate bytes), for the other runners None."""


def _pointwise(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x * 2.0 + 1.0)


class Pointwise(torch.nn.Module):
    """A module unlike any workload, compiled once by ``warm_up``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _pointwise(x)


def _torch_inputs(inst: Instance) -> tuple[torch.Tensor, ...]:
    return tuple(torch.from_numpy(a) for a in inst.inputs)


def _tensor_to_numpy(out: Any) -> np.ndarray:
    return np.asarray(out.detach().numpy())


def _timed_first_call(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


class Runner:
    """One way to execute the workloads; subclasses set ``name`` and implement ``prepare``."""

    name = ""

    def warm_up(self) -> None:
        """Pay one-time process costs (imports, toolchain checks) so no workload's compile time includes them."""

    def prepare(self, inst: Instance) -> Prepared:
        """The prepared call for ``inst``; NotApplicable when the runner has no version of it."""
        raise NotImplementedError


class NumpyRunner(Runner):
    """The workload's numpy function (numpy's own BLAS for the matrix products)."""

    name = "numpy"

    def prepare(self, inst: Instance) -> Prepared:
        fn = inst.numpy_fn
        if fn is None:
            raise NotApplicable("no numpy version")
        inputs = inst.inputs
        return Prepared(lambda: fn(*inputs), np.asarray)


class TorchEagerRunner(Runner):
    """The torch module called directly, under ``torch.inference_mode``."""

    name = "torch eager"

    def prepare(self, inst: Instance) -> Prepared:
        module, inputs = inst.module, _torch_inputs(inst)

        def call() -> Any:
            with torch.inference_mode():
                return module(*inputs)

        return Prepared(call, _tensor_to_numpy)


@contextlib.contextmanager
def _fresh_inductor_cache() -> Iterator[None]:
    """Inductor's on-disk caches in a new empty folder, so a compile is cold (torch's own helper)."""
    from torch._inductor import utils

    fresh = getattr(utils, "fresh_cache", None) or getattr(utils, "fresh_inductor_cache", None)
    if fresh is None:
        yield
        return
    with fresh():
        yield


class TorchCompileRunner(Runner):
    """``torch.compile(module)`` (inductor, default mode), compiled cold by its first call."""

    name = "torch.compile"

    def warm_up(self) -> None:
        torch._dynamo.reset()
        with _fresh_inductor_cache():
            compiled = torch.compile(_pointwise)
            compiled(torch.ones(8))
        torch._dynamo.reset()

    def prepare(self, inst: Instance) -> Prepared:
        torch._dynamo.reset()
        compiled = torch.compile(inst.module)
        inputs = _torch_inputs(inst)

        def call() -> Any:
            with torch.inference_mode():
                return compiled(*inputs)

        with _fresh_inductor_cache():
            _, seconds = _timed_first_call(call)
        return Prepared(call, _tensor_to_numpy, seconds)


class OnnxRuntimeRunner(Runner):
    """The module exported with ``torch.onnx.export`` (TorchScript exporter) run by an onnxruntime session.

    Its compile time is the export plus the session creation (graph optimizations at ORT_ENABLE_ALL).
    """

    name = "onnxruntime"

    def __init__(self, threads: int) -> None:
        import onnxruntime

        self.ort = onnxruntime
        self.threads = threads

    def prepare(self, inst: Instance) -> Prepared:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = Path(folder) / "model.onnx"
            torch.onnx.export(inst.module, _torch_inputs(inst), path, dynamo=False, opset_version=ONNX_OPSET)
            model = path.read_bytes()
        options = self.ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        session = self.ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        feeds = {i.name: a for i, a in zip(session.get_inputs(), inst.inputs)}
        seconds = time.perf_counter() - start

        def call() -> Any:
            return session.run(None, feeds)[0]

        return Prepared(call, np.asarray, seconds)


class TensoriumRunner(Runner):
    """``tensorium.compile(module, target=T)`` called with numpy arrays, compiled cold (no cache) by its first call.

    ``disable`` names passes and codegen stages to leave out (``tensorium.compile(disable=...)``), for
    measuring what each is worth; the runner's name lists them (``tensorium (cpu, -fuse)``).
    """

    def __init__(self, target: str, params: str = "constants", disable: Sequence[str] = ()) -> None:
        api.check_target(target)
        api.check_pipeline(None, target, disable)
        self.target = target
        self.params = params
        self.disable = tuple(disable)
        self.name = f"tensorium ({', '.join([target, *(f'-{n}' for n in self.disable)])})"

    def warm_up(self) -> None:
        compiled = api.compile(Pointwise(), target=self.target, cache=False)
        compiled(np.ones(8, np.float32))

    def prepare(self, inst: Instance) -> Prepared:
        compiled = api.compile(inst.module, target=self.target, cache=False, params=self.params, disable=self.disable)
        inputs = inst.inputs

        def call() -> Any:
            return compiled(*inputs)

        _, seconds = _timed_first_call(call)
        return Prepared(call, np.asarray, seconds, compiled.stats())


def make_runners(
    keys: Sequence[str],
    targets: Sequence[str],
    threads: int,
    params: str = "constants",
    ablations: Sequence[Sequence[str]] = (),
) -> tuple[list[Runner], dict[str, str]]:
    """The runners named by ``keys`` (from ``RUNNERS``: numpy, eager, compile, onnxruntime, tensorium, the last
    once per target, and once more per target and set of names in ``ablations`` to disable) that can be built
    here, in table order, and for the others their name and why not."""
    runners: list[Runner] = []
    missing: dict[str, str] = {}
    for key in RUNNERS:
        if key not in keys:
            continue
        if key == "numpy":
            runners.append(NumpyRunner())
        elif key == "eager":
            runners.append(TorchEagerRunner())
        elif key == "compile":
            runners.append(TorchCompileRunner())
        elif key == "onnxruntime":
            try:
                runners.append(OnnxRuntimeRunner(threads))
            except ImportError as e:
                missing[OnnxRuntimeRunner.name] = f"not run: {e.name} is not installed"
        else:
            runners += [TensoriumRunner(target, params, disable) for target in targets for disable in [(), *ablations]]
    return runners, missing
