"""PyTorch's own operator database (OpInfo ``op_db``) run as a conformance suite for the PyTorch frontend.

For every OpInfo that supports float32 on the CPU, the first two sample inputs whose arguments are
tensors or plain Python values are wrapped in a module computing ``op(input, *args, **kwargs)`` (every
tensor becomes a model input), exported by ``torch.export``, compiled with ``tensorium.compile`` and
compared with eager PyTorch: integer and bool results exactly, float ones at float32 tolerance, results
of random ops by shape and dtype. Ops that ``torch.export`` itself cannot export are not counted.

``python -m tensorium.frontend.pytorch_conformance --report`` prints the pass rate per op family
(``--target interp`` for the reference interpreter, ``--verbose`` for every failure and why). The op
database needs the ``expecttest`` package (in the ``torch`` extra).
"""

from __future__ import annotations

import argparse
import collections
import enum
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover - exercised only without the torch extra
    raise ImportError("the PyTorch conformance suite needs torch: pip install 'tensorium[torch]'") from e

__all__ = [
    "EXCLUDED_FAMILIES",
    "SHAPE_ONLY_OPS",
    "Outcome",
    "Result",
    "family",
    "main",
    "op_key",
    "opinfos",
    "report",
    "run_op",
]

SAMPLES_PER_OP = 2
EXCLUDED_FAMILIES = ("linalg", "special", "fft", "sparse", "masked")
"""The families the issue's second target rate leaves out (decompositions, special functions, FFTs, ...)."""

# Ops whose values are random draws or left unspecified: compared by shape and dtype, never by value.
SHAPE_ONLY_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_permuted",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "bernoulli",
        "normal",
        "normal.number_mean",
        "normal.in_place",
        "multinomial",
        "rand_like",
        "randn_like",
        "randint_like",
        "randint",
        "nn.functional.dropout",
        "nn.functional.dropout2d",
        "nn.functional.dropout3d",
        "nn.functional.alpha_dropout",
        "nn.functional.feature_alpha_dropout.with_train",
        "nn.functional.feature_alpha_dropout.without_train",
        "nn.functional.rrelu",
        "nn.functional.fractional_max_pool2d",  # windows placed by random samples
        "nn.functional.fractional_max_pool3d",
        "randn",
        "rand",
        "uniform",
        "exponential",
        "geometric",
        "log_normal",
        "cauchy",
    }
)
_PLAIN = (int, float, bool, str, type(None), torch.dtype)
FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-5
"""Float results match when within FLOAT_RTOL relative, or FLOAT_ATOL times the result's largest
magnitude (at least 1) absolute: float32 accuracy, whatever order a kernel sums in."""


class Outcome(enum.Enum):
    """How one op fared: passed, failed, or not counted (torch.export or eager PyTorch cannot run it)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_COUNTED = "not counted"


@dataclass(frozen=True)
class Result:
    """One op's outcome and, when it did not pass, why (the first failing sample's error)."""

    key: str
    outcome: Outcome
    reason: str = ""


def op_key(opinfo: Any) -> str:
    """The op's name with its variant (``nn.functional.interpolate.bilinear``), unique in op_db."""
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


def family(key: str) -> str:
    """The op family: the namespace of a dotted name (``nn.functional``, ``linalg``) or ``torch``."""
    parts = key.split(".")
    if parts[0] == "nn" and len(parts) > 2:
        return "nn.functional"
    if parts[0] in EXCLUDED_FAMILIES or parts[0] in ("signal", "_refs"):
        return parts[0]
    return "torch"


@cache
def opinfos() -> dict[str, Any]:
    """Every OpInfo that supports float32 on the CPU, by :func:`op_key`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return {op_key(o): o for o in op_db if torch.float32 in o.supported_dtypes("cpu")}


def samples(opinfo: Any) -> list[Any]:
    """The first :data:`SAMPLES_PER_OP` sample inputs whose arguments are tensors or plain Python values."""
    out = []
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generator = iter(opinfo.sample_inputs("cpu", torch.float32, requires_grad=False))
        for sample in generator:
            if _plain(sample.input) and _plain(sample.args) and _plain(sample.kwargs):
                out.append(sample)
                if len(out) == SAMPLES_PER_OP:
                    break
        # Close the sample generator now, not when it is collected inside an export trace (where its
        # no_grad context would fail); op_db wraps it in a TrackedInputIter.
        inner = getattr(generator, "child_iter", generator)
        if hasattr(inner, "close"):
            inner.close()
    return out


def _plain(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.layout == torch.strided and not value.is_complex()
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return isinstance(value, _PLAIN)


class _OpModule(torch.nn.Module):
    """``op(input, *args, **kwargs)`` with the sample's tensors as inputs and its other values fixed."""

    def __init__(self, op: Any, structure: Any):
        super().__init__()
        self.op = op
        self.structure = structure

    def forward(self, *tensors: Any) -> Any:
        filled = _fill(self.structure, iter(tensors))
        return self.op(filled[0], *filled[1], **filled[2])


def _hollow(value: Any, tensors: list[Any]) -> Any:
    """``value`` with each tensor replaced by a marker; the tensors go to ``tensors`` in order."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _TENSOR
    if isinstance(value, (list, tuple)):
        return type(value)(_hollow(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: _hollow(v, tensors) for k, v in value.items()}
    return value


def _fill(value: Any, tensors: Iterator[Any]) -> Any:
    if value is _TENSOR:
        return next(tensors)
    if isinstance(value, (list, tuple)):
        return type(value)(_fill(v, tensors) for v in value)
    if isinstance(value, dict):
        return {k: _fill(v, tensors) for k, v in value.items()}
    return value


class _TensorMarker:
    """Where a sample's tensor goes in its arguments."""


_TENSOR = _TensorMarker()


def run_op(key: str, target: str = "cpu") -> Result:
    """Export, compile and check ``key``'s samples; the result of the first sample that does not pass."""
    opinfo = opinfos()[key]
    chosen = samples(opinfo)
    if not chosen:
        return Result(key, Outcome.NOT_COUNTED, "no sample with plain arguments")
    for sample in chosen:
        result = _run_sample(key, opinfo, sample, target)
        if result.outcome is not Outcome.PASSED:
            return result
    return Result(key, Outcome.PASSED)


def _run_sample(key: str, opinfo: Any, sample: Any, target: str) -> Result:
    import tensorium

    tensors: list[Any] = []
    structure = _hollow((sample.input, tuple(sample.args), dict(sample.kwargs)), tensors)
    module = _OpModule(opinfo.op, structure).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Falling back to TorchDynamo means torch.export could not capture the op: not counted.
        warnings.filterwarnings("error", message=_FALLBACK_WARNING)
        try:
            torch.manual_seed(0)
            expected = module(*tensors)
        except Exception as e:
            return Result(key, Outcome.NOT_COUNTED, f"eager PyTorch fails: {_first_line(e)}")
        try:
            actual = tensorium.compile(module, target=target)(*tensors)
            _check(key, expected, actual)
        except Exception as e:
            if _export_failed(e):
                return Result(key, Outcome.NOT_COUNTED, f"torch cannot export it: {_first_line(e)}")
            return Result(key, Outcome.FAILED, f"{type(e).__name__}: {_first_line(e)}")
    return Result(key, Outcome.PASSED)


_FALLBACK_WARNING = "tensorium.compile: torch.export failed"


def _export_failed(error: Exception) -> bool:
    """Whether ``error`` says torch.export (not Tensorium) failed."""
    from .pytorch import TorchExportError

    message = str(error)
    if isinstance(error, UserWarning):
        return message.startswith(_FALLBACK_WARNING)
    return isinstance(error, TorchExportError) and message.startswith("torch.export failed")


def _first_line(error: Exception) -> str:
    from .common import UnsupportedOpsError

    text = str(error.items[0]) if isinstance(error, UnsupportedOpsError) and error.items else str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _check(key: str, expected: Any, actual: Any) -> None:
    """AssertionError unless ``actual`` matches ``expected`` leaf by leaf (see the module docstring)."""
    want, _ = torch.utils._pytree.tree_flatten(expected)
    got, _ = torch.utils._pytree.tree_flatten(actual)
    if len(want) != len(got):
        raise AssertionError(f"{len(got)} results, expected {len(want)}")
    for i, (w, g) in enumerate(zip(want, got)):
        if not isinstance(w, torch.Tensor):
            if w != g:
                raise AssertionError(f"result {i}: {g!r}, expected {w!r}")
            continue
        if isinstance(g, np.ndarray):  # a model without tensor inputs returns numpy arrays
            g = torch.from_numpy(g)
        if not isinstance(g, torch.Tensor):
            raise AssertionError(f"result {i} is a {type(g).__name__}, expected a tensor")
        if g.shape != w.shape or g.dtype != w.dtype:
            raise AssertionError(f"result {i}: {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
        if key in SHAPE_ONLY_OPS:
            continue
        if w.dtype.is_floating_point:
            try:
                torch.testing.assert_close(g, w, equal_nan=True, rtol=FLOAT_RTOL, atol=_float_atol(w))
            except AssertionError as e:
                raise AssertionError(f"result {i}: {e}") from None
        elif not np.array_equal(g.numpy(), w.numpy()):
            raise AssertionError(f"result {i}: integer or bool values differ")


def _float_atol(expected: Any) -> float:
    """The absolute tolerance: float32 rounding at the scale of the result, since a sum whose terms
    cancel keeps the rounding error of its largest terms."""
    finite = expected[torch.isfinite(expected)]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    return FLOAT_ATOL * max(1.0, scale)


# the report ------------------------------------------------------------------------------------------
def report(target: str = "cpu", keys: Sequence[str] | None = None, verbose: bool = False) -> list[Result]:
    """Run ``keys`` (default every op); ``verbose`` prints each op that does not pass and why."""
    results = []
    for key in keys if keys is not None else sorted(opinfos()):
        result = run_op(key, target)
        results.append(result)
        if verbose and result.outcome is not Outcome.PASSED:
            print(f"{key}: {result.outcome.value}: {result.reason}", flush=True)
    return results


def summary(results: Sequence[Result]) -> list[str]:
    """Report lines: the pass rate per family, overall, and outside :data:`EXCLUDED_FAMILIES`."""
    counted = [r for r in results if r.outcome is not Outcome.NOT_COUNTED]
    per_family: dict[str, list[Result]] = collections.defaultdict(list)
    for r in counted:
        per_family[family(r.key)].append(r)

    def rate(rs: Sequence[Result]) -> str:
        passed = sum(r.outcome is Outcome.PASSED for r in rs)
        return f"{passed} / {len(rs)} ({100.0 * passed / max(len(rs), 1):.1f}%)"

    lines = [f"  {name:<16} {rate(rs)}" for name, rs in sorted(per_family.items())]
    outside = [r for r in counted if family(r.key) not in EXCLUDED_FAMILIES]
    lines.append(f"overall: {rate(counted)}; not counted: {len(results) - len(counted)}")
    lines.append(f"outside {', '.join(EXCLUDED_FAMILIES)}: {rate(outside)}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``--report`` runs every op and prints the pass rate per family."""
    parser = argparse.ArgumentParser(prog="python -m tensorium.frontend.pytorch_conformance")
    parser.add_argument("--report", action="store_true", help="run every counted OpInfo op and print pass rates")
    parser.add_argument("--target", default="cpu", help="the target to compile for (default: cpu)")
    parser.add_argument("--ops", nargs="*", help="only these op keys")
    parser.add_argument("--verbose", action="store_true", help="print every op that does not pass and why")
    args = parser.parse_args(argv)
    if not args.report:
        parser.print_help()
        return 0
    start = time.perf_counter()
    results = report(args.target, args.ops, args.verbose)
    print(f"PyTorch OpInfo ops on target {args.target} ({time.perf_counter() - start:.0f} s), per family:")
    for line in summary(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
