"""Oracles: run one fuzz case (a program, a pass pipeline, an input seed) and judge what happened.

A case fails when

- **crash**: anything but a documented :class:`~tensorium.errors.TensoriumError` escapes a pass, the
  interpreter or a backend (an ``IndexError`` deep in a pass is a bug; a ``LoweringError`` naming an op
  the CPU backend does not support is a documented refusal);
- **verifier**: the IR breaks a rule after a pass (or a pass builds an op that breaks one);
- **roundtrip**: the IR a pass left does not print and parse back to the same text;
- **mismatch**: the interpreter on the optimized IR, or a compiled backend (:mod:`.backends`: a CPU target,
  its fresh buffers poisoned so elements no kernel writes show; a GPU schedule on the loop interpreter),
  or a packing layout (:mod:`.quant`: every k-bit constant packed and unpacked in each layout),
  computes something else than the interpreter on the original program
  (floats within a tolerance that allows reassociated sums and the backends' own math functions, NaN
  against NaN of any payload, infinities of the same sign, zeros of the same sign but where IEEE 754 leaves
  the sign open (:mod:`.ieee`); integers and booleans exactly);
- **validator**: a GPU backend's code is rejected by its validator (ptxas for PTX, naga or Dawn for WGSL;
  :mod:`.backends`);
- **nondeterminism**: the same pipeline on the same program gives different IR twice;
- **missed-rewrite**: a pattern case (``FuzzCase.expect``, :mod:`.patterns`) still holds its exact pattern after
  the pipeline ran the pass that must take it;
- **refusal**: a CPU backend refuses the optimized program (a documented error) while it compiles the original
  one, or the pipeline is refused because one of its passes refuses its own default options: the passes made
  a program the backend supports into one it does not;
- **reference** (with ``references=("iree",)``, the ``mlir`` extra): IREE, a second compiler, computes
  something else than the interpreter on the original program exported to upstream MLIR (programs
  outside the exported subset, and programs IREE refuses, skip this check).

A program the interpreter refuses is *invalid*; a documented error from a pass or backend is *refused*.
Outputs that are NaN or infinite are judged like any other: every graph op defines them (IEEE arithmetic,
saturating float-to-integer casts, wrapping integers, integer division by zero giving 0; docs/ir.md), so
a case with special values in its inputs (``FuzzCase.specials``) or constants is as valid as any.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..backends.interp import run
from ..backends.llvm.jit import DEFAULT_OPT_LEVEL
from ..errors import SymbolError, TensoriumError, VerifyError
from ..ir.attributes import DenseAttr
from ..ir.core import Block, Operation
from ..ir.dialects.builtin import func_body, func_type, lookup_func
from ..ir.parser import parse_module
from ..ir.printer import print_module
from ..ir.storage import coerce
from ..ir.types import FloatType, TensorType
from ..ir.verifier import verify
from ..passes.base import get_pass
from ..passes.pipeline import Pipeline, parse_pipeline
from .backends import BackendRun, check_backend
from .generator import random_inputs
from .ieee import HUGE, freedoms
from .patterns import missed_rewrite
from .quant import layout_problem
from .special import sprinkle

Backend = str
"""``interp``, or a compiled backend named as its target: ``cpu``, ``cpu:x86-64-v3``, ``cuda``, ``webgpu``
(:mod:`.backends`)."""
BACKENDS: tuple[Backend, ...] = ("interp", "cpu")
Reference = Literal["iree"]
REFERENCES: tuple[Reference, ...] = ("iree",)
"""Second references beside the interpreter: other compilers that run the original program."""
Status = Literal["ok", "invalid", "refused", "failure"]
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LOOP_INTERPRETER_WORK = 20_000
"""A lowered program runs on the loop interpreter (scalar Python, some microseconds per op) only while its
kernels execute at most this many scalar ops (:func:`loop_work`); the CPU backend checks the others."""

# (relative tolerance, absolute tolerance as a fraction of the largest reference magnitude, at least 1)
TOLERANCES: dict[str, tuple[float, float]] = {
    "f64": (1e-7, 1e-9),
    "f32": (1e-4, 1e-5),
    "f16": (2e-2, 1e-2),
    "bf16": (5e-2, 5e-2),
}


@dataclass(frozen=True)
class FuzzCase:
    """A program (IR text with ``@main``), the pipeline to run on it, and the seed of its random inputs."""

    module: str
    pipeline: str
    seed: int = 0
    backends: tuple[Backend, ...] = BACKENDS
    opt_level: int = DEFAULT_OPT_LEVEL
    """LLVM's optimization level for the CPU backend (by default what ``tensorium.compile`` uses; the fuzzer's
    own runs take ``FuzzConfig.opt_level``)."""
    references: tuple[Reference, ...] = ()
    specials: bool = False
    """Whether the inputs hold special values (NaN, infinities, signed zeros, subnormals, integer extremes)."""
    schedule_seed: int | None = None
    """Build every kernel at a random point of its search space drawn from this seed (None: the target's
    default points; :mod:`.schedules`)."""
    expect: str | None = None
    """A pattern case (:mod:`.patterns`): the pass that must rewrite the program's exact pattern."""


@dataclass(frozen=True)
class Failure:
    """What went wrong: the oracle (``kind``), where (``stage``), one line, and the full story."""

    kind: Literal[
        "crash",
        "verifier",
        "roundtrip",
        "mismatch",
        "nondeterminism",
        "reference",
        "validator",
        "missed-rewrite",
        "refusal",
    ]
    stage: str
    summary: str
    detail: str = ""
    where: str = ""
    """For crashes: the innermost frame in Tensorium's code (``path:function``)."""

    @property
    def signature(self) -> str:
        """What identifies this failure across cases: the oracle, the stage and the crash site."""
        return ":".join(part for part in (self.kind, self.stage, self.where) if part)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one case; ``failure`` is set when ``status`` is ``failure``."""

    status: Status
    failure: Failure | None = None
    reason: str = ""


class _Stop(Exception):
    """Ends a check early with a verdict."""

    def __init__(self, verdict: Verdict):
        super().__init__(verdict.reason)
        self.verdict = verdict


def crash_site(error: BaseException) -> str:
    """``relative/path.py:function`` of the innermost traceback frame inside the tensorium package."""
    site = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.startswith(PACKAGE_DIR + os.sep) and os.sep + "fuzz" + os.sep not in frame.filename:
            site = f"{os.path.relpath(frame.filename, os.path.dirname(PACKAGE_DIR))}:{frame.name}"
    return site


def _crash(stage: str, error: BaseException) -> _Stop:
    summary = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
    detail = "".join(traceback.format_exception(error))
    return _Stop(Verdict("failure", Failure("crash", stage, summary, detail, crash_site(error))))


def _guarded(stage: str, action: Callable[[], object]) -> object:
    """Run ``action``; a documented error refuses the case, a VerifyError or anything else fails it."""
    try:
        return action()
    except VerifyError as e:
        raise _Stop(Verdict("failure", Failure("verifier", stage, str(e).splitlines()[0], str(e)))) from e
    except TensoriumError as e:
        raise _Stop(Verdict("refused", reason=f"{stage}: {type(e).__name__}: {str(e).splitlines()[0]}")) from e
    except Exception as e:
        raise _crash(stage, e) from e


def run_pipeline(module: Operation, pipeline: Pipeline) -> None:
    """Run each pass and verify after it; raises _Stop with the failure or refusal."""
    for p in pipeline:
        stage = f"pass '{p.name}'"
        _guarded(stage, lambda p=p: p.run(module))  # type: ignore[misc]
        try:
            verify(module)
        except VerifyError as e:
            raise _Stop(
                Verdict("failure", Failure("verifier", stage, str(e).splitlines()[0], f"{e}\n\n{print_module(module)}"))
            ) from e


def _float_tolerance(element: FloatType) -> tuple[float, float]:
    return TOLERANCES.get(element.name, TOLERANCES["f32"])


def _tolerance(t: object, precision: FloatType | None = None) -> tuple[float, float] | None:
    element = t.element if isinstance(t, TensorType) else None
    if not isinstance(element, FloatType):
        return None
    own = _float_tolerance(element)
    if precision is None:
        return own
    narrow = _float_tolerance(precision)
    return max(own[0], narrow[0]), max(own[1], narrow[1])


def computed_precision(module: Operation) -> FloatType | None:
    """The least precise float type any value of ``module`` has (None without floats).

    Rounding errors of a narrow part of a program survive a cast to a wider type (an f32 convolution cast
    to f64 differs between backends as f32 does), so float outputs are compared at the looser of their own
    tolerance and this type's.
    """
    found: FloatType | None = None
    for op in module.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for v in values:
            element = v.type.element if isinstance(v.type, TensorType) else None
            if isinstance(element, FloatType) and (
                found is None or _float_tolerance(element)[0] > _float_tolerance(found)[0]
            ):
                found = element
    return found


def _overflowed(a: np.ndarray, b: np.ndarray, huge: float) -> np.ndarray:
    """Where one of ``a`` and ``b`` is infinite and the other finite but special-sized, of the same sign: where
    reassociated products or sums overflow is a matter of rounding (fold-batch-norm's
    ``(x - mean) * (scale / sqrt(var))`` against the reference's ``(x - mean) / sqrt(var) * scale``)."""
    with np.errstate(invalid="ignore"):
        same_sign = np.sign(a) == np.sign(b)
        return same_sign & (
            (np.isinf(a) & np.isfinite(b) & (np.abs(b) >= huge)) | (np.isinf(b) & np.isfinite(a) & (np.abs(a) >= huge))
        )


def differing(
    want: np.ndarray,
    have: np.ndarray,
    t: object,
    precision: FloatType | None = None,
    sign_free: np.ndarray | None = None,
) -> np.ndarray:
    """The elements of ``have`` that do not match ``want`` (same shapes) within the tolerance of type ``t``
    (or of ``precision``, the program's least precise float type, where that is looser).

    NaN matches NaN (any payload), an infinity the same infinity (or a special-sized value of its sign,
    :data:`HUGE`), and a zero only a zero of the same sign, except at the elements set in ``sign_free``,
    where a zero (or an infinity) may have either sign."""
    tol = _tolerance(t, precision)
    if tol is None:
        return np.asarray(have != want)
    rtol, atol = tol
    a, b = have.astype(np.float64), want.astype(np.float64)
    element = t.element.name if isinstance(t, TensorType) and isinstance(t.element, FloatType) else ""
    huge = HUGE.get(element, 1e30)
    ordinary = np.abs(b[np.isfinite(b)])
    scale = max(1.0, float(np.max(ordinary[ordinary < huge], initial=0.0)))
    same_special = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b)) | _overflowed(a, b, huge)
    with np.errstate(invalid="ignore"):
        close = np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= atol * scale + rtol * np.abs(b))
    zeros = (a == 0) & (b == 0)
    other_sign = np.signbit(a) != np.signbit(b)
    wrong_zero = zeros & other_sign
    if sign_free is not None:
        wrong_zero &= ~sign_free
        same_special |= sign_free & np.isinf(a) & np.isinf(b)
    return ~(close | same_special) | wrong_zero


def compare(
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    types: Sequence[object],
    forgiven: Sequence[np.ndarray] | None = None,
    precision: FloatType | None = None,
    sign_free: Sequence[np.ndarray] | None = None,
) -> str | None:
    """None when ``got`` matches ``expected`` output by output, else a description of the first difference.

    Elements set in ``forgiven`` (one mask per output) may differ; ``precision`` is the program's least
    precise float type (:func:`computed_precision`); elements set in ``sign_free`` (one mask per output,
    :func:`~tensorium.fuzz.ieee.sign_free`) may be zeros or infinities of the other sign.
    """
    if len(expected) != len(got):
        return f"{len(got)} outputs, expected {len(expected)}"
    for n, (want, have, t) in enumerate(zip(expected, got, types)):
        have = np.asarray(have)
        if have.shape != want.shape or have.dtype != want.dtype:
            return f"output {n}: shape {have.shape} {have.dtype}, expected {want.shape} {want.dtype}"
        bad = differing(want, have, t, precision, None if sign_free is None else sign_free[n])
        if forgiven is not None:
            bad &= ~forgiven[n]
        if np.any(bad):
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            count = int(np.count_nonzero(bad))
            return (
                f"output {n} ({t}): {count} of {want.size} elements differ; at {list(index)} got "
                f"{have[index]}, expected {want[index]}"
            )
    return None


ILL_CONDITIONED_ROUNDS = 4
"""Rounds of :func:`ill_conditioned` (3 perturbed runs each, other draws each round) a mismatch gets before it is
a failure: a round stops the search once every differing element is one the reference itself moves. One round
missed 2 of 20 truncations of f16 values an ulp from an integer (a campaign's case, tests/fuzz/oracle_cases/
fold_batch_norm_f16_then_cast.mlir), which ten perturbed runs all found."""
PERTURBATION = {"f16": 4e-3, "bf16": 3e-2}
"""Relative size of the input perturbation that finds ill-conditioned outputs (1e-5 for wider floats)."""


def ill_conditioned(
    module: Operation,
    inputs: Sequence[np.ndarray],
    expected: Sequence[np.ndarray],
    trials: int = 3,
    looser: FloatType | None = None,
    seed: int = 0,
) -> list[np.ndarray]:
    """Per output, the elements the reference itself changes when float inputs and constants move by a few
    rounding errors (of their own type, or of ``looser`` where that is larger: the precision the outputs are
    judged at, such as bf16's for kernels that round their activations to 8 bits).

    Comparisons, ``floor``, ``argmax`` and float-to-int casts are discontinuous: an element that sits on a
    tie or an integer boundary may flip under reassociated arithmetic without any pass being wrong; so may a
    sum in which huge terms cancel (special values, in inputs or in constants). Such elements are found by
    running the reference on slightly moved inputs and constants.
    """
    func = lookup_func(module, "main")
    assert func is not None
    arg_types = [a.type for a in func_body(func).args]
    types = _result_types(module)
    precision = computed_precision(module)
    rng = np.random.default_rng(seed)
    masks = [np.zeros(e.shape, bool) for e in expected]
    for _ in range(trials):
        moved = [
            _moved(x, t.element, rng, looser) if isinstance(t, TensorType) else x for x, t in zip(inputs, arg_types)
        ]
        try:
            outputs = run(_with_constants(module, lambda x, element: _moved(x, element, rng, looser)), moved)
        except TensoriumError:
            continue
        for mask, want, have, result_type in zip(masks, expected, outputs, types):
            if have.shape == want.shape:
                mask |= differing(want, np.asarray(have), result_type, precision)
    return masks


def _moved(x: np.ndarray, element: object, rng: np.random.Generator, looser: FloatType | None = None) -> np.ndarray:
    """Float ``x`` moved by a few rounding errors of its type, or of ``looser`` where larger (:data:`PERTURBATION`);
    others as they are."""
    if not isinstance(element, FloatType):
        return x
    eps = max(PERTURBATION.get(t.name, 1e-5) for t in (element, looser or element))
    return coerce((x * (1 + eps * rng.uniform(-1, 1, x.shape))).astype(x.dtype), element)


def _flushed(x: np.ndarray, element: object) -> np.ndarray:
    """Float ``x`` with its subnormal values flushed to zeros of their sign, as code compiled with
    flush-to-zero computes (IREE's CPU code does); others as they are."""
    if not isinstance(element, FloatType) or x.dtype.kind != "f":
        return x
    tiny = np.finfo(x.dtype).tiny
    return np.where((x != 0) & (np.abs(x) < tiny), np.copysign(np.zeros_like(x), x), x).astype(x.dtype)


def _with_constants(module: Operation, change: Callable[[np.ndarray, FloatType], np.ndarray]) -> Operation:
    """A copy of ``module`` whose float constants are ``change``d (moved, flushed); ``module`` when it has none."""
    floats = [
        op
        for op in module.walk()
        if op.name == "graph.constant"
        and isinstance(op.attributes.get("value"), DenseAttr)
        and isinstance(op.results[0].type, TensorType)
        and isinstance(op.results[0].type.element, FloatType)
    ]
    if not floats:
        return module
    copy = module.clone()
    for op in copy.walk():
        value = op.attributes.get("value") if op.name == "graph.constant" else None
        if isinstance(value, DenseAttr) and isinstance(value.type.element, FloatType):
            op.attributes["value"] = DenseAttr(change(value.array, value.type.element), value.type)
    return copy


def case_inputs(module: Operation, seed: int, specials: bool = False) -> list[np.ndarray]:
    """The random inputs of a case: the generator's ranges, brought to each argument's element type, with
    special values sprinkled in when ``specials``."""
    func = lookup_func(module, "main")
    if func is None:
        raise SymbolError("the program has no function @main")
    arrays = random_inputs(module, seed)
    elements = [arg.type.element for arg in func_body(func).args]  # type: ignore[attr-defined]
    inputs = [coerce(a, e) for a, e in zip(arrays, elements)]
    if specials:
        rng = np.random.default_rng([seed, 1])
        inputs = [sprinkle(a, e, rng) for a, e in zip(inputs, elements)]
    return inputs


Watch = Callable[[str], AbstractContextManager[object]]
"""``watch(stage)``: a context manager the oracle runs a stage in (:data:`WATCHED_STAGES`); the fuzzer's
pauses its coverage tracer in stages that have stopped showing new code (:mod:`.stages`)."""
WATCHED_STAGES = ("determinism", "roundtrip", "interp", "loop interpreter")
"""The stages :func:`check` runs inside ``watch``, besides each compiled backend (by its name)."""


def _unwatched(stage: str) -> AbstractContextManager[object]:
    return contextlib.nullcontext()


def check(
    case: FuzzCase, module: Operation | None = None, determinism: bool = True, watch: Watch | None = None
) -> Verdict:
    """Run ``case`` through every oracle; see the module docstring.

    ``module`` is ``case.module`` already parsed (the fuzzer has it; it is not changed), which saves a parse.
    ``watch(stage)`` is entered around the stages of :data:`WATCHED_STAGES` and each compiled backend's check.
    """
    try:
        with np.errstate(all="ignore"):  # NaN and overflow are the oracles' business, not warnings
            return _check(case, module, determinism, watch or _unwatched)
    except _Stop as stop:
        return stop.verdict


def _check(case: FuzzCase, module: Operation | None, determinism: bool, watch: Watch) -> Verdict:
    try:
        original = parse_module(case.module) if module is None else module
        pipeline = _parse_pipeline(case.pipeline)
        inputs = case_inputs(original, case.seed, case.specials)
    except TensoriumError as e:
        return Verdict("invalid", reason=f"input: {str(e).splitlines()[0]}")

    try:
        expected = run(original, inputs)
    except TensoriumError as e:
        return Verdict("invalid", reason=f"interpreter refuses the original: {str(e).splitlines()[0]}")
    except Exception as e:
        raise _crash("interp (original)", e) from e
    if "iree" in case.references:
        _check_iree(original, inputs, expected)

    optimized = original.clone()
    run_pipeline(optimized, pipeline)
    text = _guarded("print", lambda: print_module(optimized))
    assert isinstance(text, str)
    with watch("roundtrip"):
        _roundtrip(text)
    if determinism:
        with watch("determinism"):
            second = original.clone()
            run_pipeline(second, pipeline)
            twice = print_module(second)
        if twice != text:
            return Verdict(
                "failure",
                Failure("nondeterminism", "pipeline", f"'{case.pipeline}' gave two different results", text),
            )

    if case.expect is not None:
        missed = missed_rewrite(case.expect, case.pipeline, optimized)
        if missed is not None:
            raise _Stop(Verdict("failure", Failure("missed-rewrite", f"pass '{case.expect}'", missed, text)))
    lowered = "plan_steps" in optimized.attributes
    types = _result_types(original)
    precision = computed_precision(original)
    if "interp" in case.backends:
        if not lowered:
            with watch("interp"):
                got = _guarded("interp", lambda: run(optimized, inputs))
            _judge("interp", expected, got, types, precision, text, original, inputs)  # type: ignore[arg-type]
        elif loop_work(optimized) <= LOOP_INTERPRETER_WORK:
            from ..backends.plan_runner import run_plan

            with watch("loop interpreter"):
                got = _guarded("loop interpreter", lambda: run_plan(optimized, inputs))
            _judge("loop interpreter", expected, got, types, precision, text, original, inputs)  # type: ignore[arg-type]
    problem = _guarded("quant layouts", lambda: layout_problem(original))
    if problem is not None:
        raise _Stop(Verdict("failure", Failure("mismatch", "quant layouts", str(problem), str(problem))))

    def judge(stage: str, got: Sequence[np.ndarray], looser: FloatType | None, nonfinite_free: bool = False) -> None:
        """Compare a backend's outputs with the interpreter's (``nonfinite_free``: not where the interpreter gives a
        NaN or an infinity, nor the sign of a zero, which WGSL leaves open: :func:`_open_in_wgsl`)."""
        indeterminate = [_open_in_wgsl(e, g) for e, g in zip(expected, got)] if nonfinite_free else None
        _judge(stage, expected, got, types, looser or precision, text, original, inputs, indeterminate)  # type: ignore[arg-type]

    def fail(kind: str, stage: str, summary: str, detail: str) -> None:
        raise _Stop(Verdict("failure", Failure(kind, stage, summary, detail)))  # type: ignore[arg-type]

    for name in case.backends:
        if name != "interp":
            context = (name, optimized, lowered, inputs, case.opt_level, case.schedule_seed)
            with watch(name):
                check_backend(BackendRun(*context, _guarded, judge, fail, loop_work, original, pipeline))
    return Verdict("ok")


def _parse_pipeline(text: str) -> Pipeline:
    """``parse_pipeline(text)``; when it is refused, a failure if one of its passes refuses its own default
    options (every pass must run as ``name`` alone), else the refusal."""
    try:
        return parse_pipeline(text)
    except TensoriumError as refused:
        for name in dict.fromkeys(part.split("{")[0].strip() for part in text.split(",")):
            try:
                get_pass(name)
            except TensoriumError:
                continue  # an unknown name, or an option list split at its commas: not a pass's defaults
            try:
                parse_pipeline(name)
            except TensoriumError as e:
                summary = f"pass '{name}' refuses its own default options: {str(e).splitlines()[0]}"
                raise _Stop(Verdict("failure", Failure("refusal", "pipeline", summary, f"{e}\n\n{text}"))) from e
        raise refused


def _roundtrip(text: str) -> None:
    """Parse the printed IR ``text`` and print it again; raises _Stop unless that gives ``text`` back."""
    try:
        again = print_module(parse_module(text))
    except TensoriumError as e:
        raise _Stop(Verdict("failure", Failure("roundtrip", "parse", str(e).splitlines()[0], f"{e}\n\n{text}"))) from e
    except Exception as e:
        raise _crash("parse", e) from e
    if again != text:
        raise _Stop(Verdict("failure", Failure("roundtrip", "print", "printing the parsed IR gives other text", text)))


def _check_iree(original: Operation, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> None:
    """IREE on the original program, exported to upstream MLIR, against the interpreter's ``expected``."""
    from ..interop.export import ExportError, export_text
    from ..interop.iree import IreeError, run_text

    if _casts_floats_to_integers(original):
        return  # arith.fptosi/fptoui of an out-of-range value is poison upstream: IREE's answer is not a reference
    try:
        text = export_text(original)
    except ExportError:
        return  # outside the exported subset
    except Exception as e:
        raise _crash("mlir export", e) from e
    try:
        got = run_text(text, inputs)
    except IreeError:
        return  # IREE's own limits (or a bug in IREE): not Tensorium's to judge
    types = _result_types(original)
    try:
        _judge("iree", expected, got, types, computed_precision(original), text, original, inputs)
    except _Stop as stop:
        failure = stop.verdict.failure
        if failure is None:
            raise
        if _flush_to_zero_explains(original, inputs, got):
            return
        detail = failure.detail.replace("IR after the pipeline", "the exported upstream MLIR")
        raise _Stop(Verdict("failure", Failure("reference", "iree", failure.summary, detail))) from None


def _casts_floats_to_integers(module: Operation) -> bool:
    """Whether ``module`` casts a float tensor to an integer type: a value outside the integer's range (an infinity,
    -3.4e38 into i33) has Tensorium's defined result but is poison in upstream MLIR, where IREE returns whatever its
    instructions give (found by seed 1 of tests/interop/test_fuzz_reference.py: INT64_MIN where Tensorium gives 0)."""
    for op in module.walk():
        if op.name != "graph.cast":
            continue
        source, result = op.operands[0].type, op.results[0].type
        if isinstance(source, TensorType) and isinstance(result, TensorType):
            if isinstance(source.element, FloatType) and not isinstance(result.element, FloatType):
                return True
    return False


def _flush_to_zero_explains(original: Operation, inputs: Sequence[np.ndarray], got: Sequence[np.ndarray]) -> bool:
    """Whether IREE's results ``got`` are the interpreter's once subnormal inputs and constants are flushed to
    zero: IREE's CPU code runs with flush-to-zero, which IEEE 754 leaves to the implementation (a subnormal
    times an infinity is then NaN, not an infinity)."""
    func = lookup_func(original, "main")
    assert func is not None
    arg_types = [a.type for a in func_body(func).args]
    flushed = [_flushed(x, t.element) if isinstance(t, TensorType) else x for x, t in zip(inputs, arg_types)]
    module = _with_constants(original, _flushed)
    try:
        expected = run(module, flushed)
        _judge("iree", expected, got, _result_types(original), computed_precision(original), "", module, flushed)
    except TensoriumError:
        return False
    except _Stop as stop:
        return stop.verdict.failure is None
    return True


def loop_work(module: Operation) -> int:
    """How many scalar ops the kernels of a lowered module execute (a loop with bounds that are not
    constants counts as a million trips): what a run on the loop interpreter costs."""

    def trips(loop: Operation) -> int:
        bounds = []
        for v in loop.operands:
            op = v.defining_op()
            if op is None or op.name != "loop.const":
                return 1 << 20
            bounds.append(int(op.attributes["value"]))  # type: ignore[arg-type]
        lower, upper, step = bounds
        return max(0, -(-(upper - lower) // max(step, 1)))

    def block_work(block: Block, factor: int) -> int:
        total = 0
        for op in block.ops:
            if op.name == "loop.for":
                total += block_work(op.regions[0].block, factor * trips(op))
            elif op.regions:
                total += sum(block_work(b, factor) for r in op.regions for b in r.blocks)
            else:
                total += factor
        return total

    return sum(block_work(b, 1) for r in module.regions for b in r.blocks)


def _result_types(module: Operation) -> list[object]:
    func = lookup_func(module, "main")
    assert func is not None
    return list(func_type(func).results)


def _open_in_wgsl(expected: np.ndarray, got: np.ndarray) -> np.ndarray:
    """The elements whose value WGSL leaves open: the interpreter's NaNs and infinities (implementations may assume
    there are none) and zeros of either sign where both are zero (Vulkan drivers may ignore the sign of zero)."""
    got = np.asarray(got)
    if expected.dtype.kind != "f" or got.shape != expected.shape:
        return np.zeros(expected.shape, bool)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(expected) | ((expected == 0) & (got == 0))  # type: ignore[no-any-return]


def _judge(
    stage: str,
    expected: Sequence[np.ndarray],
    got: Sequence[np.ndarray],
    types: Sequence[object],
    precision: FloatType | None,
    ir: str,
    original: Operation,
    inputs: Sequence[np.ndarray],
    indeterminate: Sequence[np.ndarray] | None = None,
) -> None:
    """Compare ``got`` with ``expected``; raise the verdict of a difference that is neither order-dependent, nor
    a signed zero or infinity the IEEE rules leave free, nor where the reference is ill-conditioned, nor in
    ``indeterminate`` (one mask per output: elements the backend's semantics leave open)."""
    problem = compare(expected, got, types, indeterminate, precision=precision)
    if problem is None:
        return
    free = freedoms(original, inputs)
    forgiven = list(free.order_dependent)
    if indeterminate is not None:
        forgiven = [a | b for a, b in zip(forgiven, indeterminate)]
    problem = compare(expected, got, types, forgiven, precision, free.sign_free)
    if problem is None:
        return
    unstable = forgiven
    for seed in range(ILL_CONDITIONED_ROUNDS):
        moves = ill_conditioned(original, inputs, expected, looser=precision, seed=seed)
        unstable = [a | b for a, b in zip(moves, unstable)]
        if compare(expected, got, types, unstable, precision, free.sign_free) is None:
            reason = f"{stage}: differs only where the reference is ill-conditioned ({problem})"
            raise _Stop(Verdict("invalid", reason=reason))
    raise _Stop(Verdict("failure", Failure("mismatch", stage, problem, f"{problem}\n\nIR after the pipeline:\n{ir}")))
