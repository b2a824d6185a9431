"""quantize: weight-only post-training quantization of constant matmul weights (and embedding tables).

``graph.matmul(x, W)`` with a constant f32 weight (``[K, N]``, or ``[N, K]`` with ``transpose_b``) of at least
``min_elements`` elements becomes ``quant.matmul(x, Wq, scale, zero)`` with ``Wq`` a constant
``tensor<NxKx!quant<u4:f32, per_group(axis=1, size=G)>>``: each output channel's K weights cut into groups of
G, each group rounded to the nearest of ``2**k`` levels spanning its range (``rtn``, unsigned codes with a
float zero point) or of the symmetric signed levels ``-2**(k-1) .. 2**(k-1) - 1`` scaled by its largest
magnitude (``signed``); with ``method=gptq``, rounded column by column with the error spread over the
columns left (:mod:`~tensorium.passes.gptq`), or with ``method=awq``, scaled per input channel by the
activations' magnitudes first (:mod:`~tensorium.passes.awq`; the activation is divided by the scales in the
op that computes it where :mod:`~tensorium.passes.fold_scales` can, else in a ``graph.mul``), from statistics
of the matmuls' inputs on the calibration batches, run through the reference interpreter. ``bits_by_sensitivity``
gives the most sensitive weights a wider width (:mod:`~tensorium.passes.sensitivity`). Weights the pass cannot
quantize stay in float and :class:`QuantReport` says why; :func:`quantize_weights` returns that report with the
relative error of every quantized weight.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import PassError, TensoriumError
from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, lookup_func
from ..ir.dialects.quant.config import CALIBRATED_METHODS, QuantConfig, calibration_batches
from ..ir.evaluate import evaluate_op, op_location
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.storage import check_array
from ..ir.types import TensorType, f32
from .awq import awq
from .base import Pass, register_pass
from .fold_scales import fold_channel_scale, permute_channels
from .gptq import gptq, hessian
from .rtn import QuantizedWeight, round_to_nearest
from .sensitivity import sensitivity, widths


@dataclass
class QuantReport:
    """What :func:`quantize_weights` did: the quantized weights (where, shape, relative Frobenius error of the
    dequantized weight) and the weights left in float with the reason."""

    quantized: list[tuple[str, tuple[int, int], float]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bits: list[int] = field(default_factory=list)
    """The width of each quantized weight, in the order of ``quantized``."""

    def record(self, where: str, weight: np.ndarray, q: QuantizedWeight) -> None:
        """Note that the weight at ``where`` became ``q``, with its relative error."""
        error = float(np.linalg.norm(q.dequantized() - weight)) / max(float(np.linalg.norm(weight)), 1e-30)
        self.quantized.append((where, (int(weight.shape[0]), int(weight.shape[1])), error))
        self.bits.append(q.type.bits)

    def __str__(self) -> str:
        lines = [f"quantized {len(self.quantized)} weights, left {len(self.skipped)} in float"]
        lines += [
            f"  {where} [{n}x{k}] {bits} bits: relative error {err:.4f}"
            for (where, (n, k), err), bits in zip(self.quantized, self.bits)
        ]
        lines += [f"  left in float: {where}: {why}" for where, why in self.skipped]
        return "\n".join(lines)


def _constant(value: Value) -> np.ndarray | None:
    op = value.defining_op()
    if op is None or op.name != "graph.constant":
        return None
    attr = op.attributes["value"]
    return attr.array if isinstance(attr, DenseAttr) else None


def _where(op: Operation) -> str:
    """What and where ``op`` is: its name, result type and location."""
    at = op_location(op).rstrip(": ")
    return f"{op.name} -> {op.results[0].type}" + (f" at {at}" if at else "")


def _matmul_weight(op: Operation, config: QuantConfig, report: QuantReport) -> np.ndarray | None:
    """The [N, K] weight of a matmul that the config quantizes, else None (recording why when it is a
    constant f32 weight left in float)."""
    lhs, rhs = op.operands
    weight = _constant(rhs)
    if weight is None or rhs.type.element != f32 or weight.ndim != 2:  # type: ignore[attr-defined]
        return None
    if weight.size < config.min_elements:
        return None
    where = _where(op)
    if op.attr("transpose_a", False) or not isinstance(lhs.type, TensorType) or lhs.type.element != f32:
        report.skipped.append((where, "the activation operand is transposed or not f32"))
        return None
    weight = weight if op.attr("transpose_b", False) else weight.T
    depth = weight.shape[1]
    if config.group and depth % config.group:
        raise PassError(f"quantize: group={config.group} does not divide K={depth} of the weight of {where}")
    if not np.isfinite(weight).all():
        report.skipped.append((where, "the weight has NaN or infinite values"))
        return None
    return weight


def _emit(rewriter: PatternRewriter, anchor: Operation, q: QuantizedWeight) -> list[Value]:
    """Constants for the codes, scales and zero points of ``q`` before ``anchor``."""
    shape = tuple(q.codes.shape)
    scale_shape = q.scale.shape if q.type.granularity == "per_group" else (shape[0], 1)
    arrays = [(q.codes, TensorType(shape, q.type)), (q.scale.reshape(scale_shape), TensorType(scale_shape, f32))]
    if q.zero is not None:
        arrays.append((q.zero.reshape(scale_shape), TensorType(scale_shape, f32)))
    return [
        rewriter.create_before(
            anchor, "graph.constant", [], {"value": DenseAttr.adopt(np.ascontiguousarray(a), t)}
        ).result
        for a, t in arrays
    ]


def quantize_weights(module: Operation, config: QuantConfig) -> QuantReport:
    """Quantize ``module``'s eligible weights in place (see the module docstring); the report says what."""
    report = QuantReport()

    calibrated = config.method in CALIBRATED_METHODS or bool(config.bits_by_sensitivity and config.calibration)
    statistics = _statistics(module, calibration_batches(config.calibration)) if calibrated else {}
    width = _widths(module, config, statistics) if config.bits_by_sensitivity else {}

    def matmul(op: Operation, rewriter: PatternRewriter) -> bool:
        weight = _matmul_weight(op, config, report)
        if weight is None:
            return False
        x = op.operands[0]
        bits = width.get(id(op), config.bits)
        stats = statistics.get(id(op))
        if config.rearrange:
            perm = rearrangement(weight)
            weight = weight[:, perm]
            stats = (stats[0][np.ix_(perm, perm)], stats[1][perm]) if stats is not None else None
            x = permute_channels(x, perm, op, rewriter)
        reference = weight
        if config.method == "gptq":
            assert stats is not None
            q = gptq(weight, stats[0], bits, config.group, config.signed)
        elif config.method == "awq":
            assert stats is not None
            scales, q = awq(weight, *stats, bits, config.group, config.signed)
            reference = weight * scales  # the codes stand for W s; the activation is divided by s
            if not fold_channel_scale(x, 1.0 / scales, rewriter):
                inverse = DenseAttr.adopt((1.0 / scales).astype(np.float32), TensorType((len(scales),), f32))
                x = rewriter.create_before(op, "graph.mul", [x, _constant_op(rewriter, op, inverse)]).result
        else:
            q = round_to_nearest(weight, bits, config.group, config.signed)
        report.record(_where(op), reference, q)
        producer = op.operands[1].defining_op()
        rewriter.replace_op_with_new(op, "quant.matmul", [x, *_emit(rewriter, op, q)])
        _erase_if_unused(producer, rewriter)
        return True

    def embedding(op: Operation, rewriter: PatternRewriter) -> bool:
        table = _constant(op.operands[0])
        if not config.embeddings or table is None or table.dtype != np.float32 or table.size < config.min_elements:
            return False
        q = round_to_nearest(table, config.bits, 0, config.signed)
        report.record(_where(op), table, q)
        weight, *params = _emit(rewriter, op, q)
        producer = op.operands[0].defining_op()
        rewriter.replace_op_with_new(op, "quant.embedding", [weight, op.operands[1], *params])
        _erase_if_unused(producer, rewriter)
        return True

    patterns = [RewritePattern("quantize_matmul", ("graph.matmul",), matmul)]
    patterns.append(RewritePattern("quantize_embedding", ("graph.embedding",), embedding))
    apply_patterns_greedily(module, patterns)
    return report


def rearrangement(weight: np.ndarray) -> np.ndarray:
    """The order of a [N, K] weight's input channels that puts them by decreasing largest magnitude, so that
    the outlier channels share groups and the other groups keep a narrow range (stable: ties keep their order)."""
    return np.argsort(-np.abs(weight).max(axis=0), kind="stable")


def _widths(
    module: Operation, config: QuantConfig, statistics: dict[int, tuple[np.ndarray, np.ndarray]]
) -> dict[int, int]:
    """The width of each matmul weight the config quantizes, by the matmul's id: ``bits_by_sensitivity`` for the
    most sensitive (:mod:`~tensorium.passes.sensitivity`), ``bits`` for the others."""
    found: list[tuple[int, np.ndarray]] = []

    def visit(op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    if inner.name == "graph.matmul":
                        weight = _matmul_weight(inner, config, QuantReport())
                        if weight is not None:
                            found.append((id(inner), weight))
                    visit(inner)

    visit(module)
    scores = [
        sensitivity(w, statistics[key][0] if key in statistics else None, config.bits, config.group, config.signed)
        for key, w in found
    ]
    chosen = widths(
        [w.size for _, w in found], scores, config.bits, config.bits_by_sensitivity, config.sensitive_fraction
    )
    return {key: bits for (key, _), bits in zip(found, chosen)}


def _constant_op(rewriter: PatternRewriter, anchor: Operation, value: DenseAttr) -> Value:
    return rewriter.create_before(anchor, "graph.constant", [], {"value": value}).result


def _statistics(module: Operation, batches: Sequence[Sequence[np.ndarray]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``X^T X / rows`` and the mean magnitude per channel of the left operand of every matmul of ``@main``
    over the calibration batches (run in the reference interpreter), by the matmul's id; PassError naming a
    batch that does not fit the inputs."""
    main = lookup_func(module, "main")
    if main is None:
        raise PassError("quantize: calibration needs a function @main")
    block = func_body(main)
    sums: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for b, batch in enumerate(batches):
        if len(batch) != len(block.args):
            raise PassError(f"quantize: calibration batch #{b} has {len(batch)} inputs, @main takes {len(block.args)}")
        env: dict[int, np.ndarray] = {}
        for j, (arg, array) in enumerate(zip(block.args, batch)):
            try:
                check_array(array, arg.type, f"input #{j}", {})  # type: ignore[arg-type]
            except TensoriumError as e:
                raise PassError(f"quantize: calibration batch #{b} does not fit @main: {e}") from None
            env[id(arg)] = array
        for op in block.ops:
            if op.name == "func.return":
                break
            args = [env[id(v)] for v in op.operands]
            if op.name == "graph.matmul":
                x = args[0].reshape(-1, args[0].shape[-1])
                h, m = sums.get(id(op), (0.0, 0.0))
                sums[id(op)] = (h + hessian(x) / len(batches), m + np.abs(x).mean(axis=0) / len(batches))  # type: ignore[assignment]
            for result, value in zip(op.results, evaluate_op(op, args)):
                env[id(result)] = value
    return sums


def _erase_if_unused(op: Operation | None, rewriter: PatternRewriter) -> None:
    if op is not None and not any(r.uses for r in op.results):
        rewriter.erase_op(op)


@register_pass
@dataclass(frozen=True)
class Quantize(Pass):
    """Weight-only post-training quantization (see the module docstring and :class:`QuantConfig`); weights
    left in float are named in one warning."""

    name: ClassVar[str] = "quantize"
    exact: ClassVar[bool] = False
    bits: int = 4
    group: int = 128
    method: str = "rtn"
    signed: bool = False
    min_elements: int = 4096
    embeddings: bool = False
    calibration: str = ""
    """The registry key of calibration batches (:func:`~tensorium.ir.dialects.quant.config.register_calibration`)."""
    bits_by_sensitivity: int = 0
    sensitive_fraction: float = 0.25
    rearrange: bool = False

    def __post_init__(self) -> None:
        self.config()

    def config(self) -> QuantConfig:
        """The options as a QuantConfig (which checks them)."""
        return QuantConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    def run(self, module: Operation) -> None:
        report = quantize_weights(module, self.config())
        if report.skipped:
            reasons = "; ".join(f"{where}: {why}" for where, why in report.skipped)
            warnings.warn(f"quantize: {len(report.skipped)} weights left in float: {reasons}", stacklevel=2)
