"""quantize: weight-only post-training quantization of constant matmul weights (and embedding tables).

``graph.matmul(x, W)`` with a constant f32 weight (``[K, N]``, or ``[N, K]`` with ``transpose_b``) of at least
``min_elements`` elements becomes ``quant.matmul(x, Wq, scale, zero)`` with ``Wq`` a constant
``tensor<NxKx!quant<u4:f32, per_group(axis=1, size=G)>>``: each output channel's K weights cut into groups of
G, each group rounded to the nearest of ``2**k`` levels spanning its range (``rtn``, unsigned codes with a
float zero point) or of the symmetric signed levels ``-2**(k-1) .. 2**(k-1) - 1`` scaled by its largest
magnitude (``signed``). Weights the pass cannot quantize stay in float and :class:`QuantReport` says why;
:func:`quantize_weights` returns that report with the relative error of every quantized weight.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import PassError
from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects.quant.config import QuantConfig
from ..ir.evaluate import op_location
from ..ir.rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily
from ..ir.types import QuantizedType, TensorType, f32
from .base import Pass, register_pass


@dataclass(frozen=True)
class QuantizedWeight:
    """A weight quantized by round to nearest: codes [N, K], scales and zero points [N, K / group] (zero None
    for signed codes), and the quantized type."""

    codes: np.ndarray
    scale: np.ndarray
    zero: np.ndarray | None
    type: QuantizedType

    def dequantized(self) -> np.ndarray:
        """The float weight the codes stand for."""
        group = self.codes.shape[1] // self.scale.shape[1]
        s = np.repeat(self.scale, group, axis=1).astype(np.float64)
        z = 0.0 if self.zero is None else np.repeat(self.zero, group, axis=1)
        return (self.codes - z) * s


def round_to_nearest(weight: np.ndarray, bits: int, group: int, signed: bool) -> QuantizedWeight:
    """RTN of a float weight [N, K] per output channel (``group`` 0) or per group of ``group`` along K."""
    rows, depth = weight.shape
    size = group or depth
    blocks = weight.astype(np.float64).reshape(rows, depth // size, size)
    if signed:
        top = (1 << (bits - 1)) - 1
        scale = np.abs(blocks).max(axis=2) / top
        scale = np.where(scale > 0, scale, 1.0)
        codes = np.clip(np.rint(blocks / scale[..., None]), -top - 1, top)
        zero = None
    else:
        top = (1 << bits) - 1
        low, high = blocks.min(axis=2), blocks.max(axis=2)
        scale = np.where(high > low, (high - low) / top, 1.0)
        zero = 0.0 - low / scale  # 0.0 - : no negative zeros
        codes = np.clip(np.rint(blocks / scale[..., None] + zero[..., None]), 0, top)
    granularity = ("per_group", 1, group) if group else ("per_channel", 0, None)
    qtype = QuantizedType(bits, signed, f32, *granularity)  # type: ignore[arg-type]
    dtype = np.int8 if signed else np.uint8
    return QuantizedWeight(
        codes.reshape(rows, depth).astype(dtype),
        scale.astype(np.float32),
        None if zero is None else zero.astype(np.float32),
        qtype,
    )


@dataclass
class QuantReport:
    """What :func:`quantize_weights` did: the quantized weights (where, shape, relative Frobenius error of the
    dequantized weight) and the weights left in float with the reason."""

    quantized: list[tuple[str, tuple[int, int], float]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def record(self, where: str, weight: np.ndarray, q: QuantizedWeight) -> None:
        """Note that the weight at ``where`` became ``q``, with its relative error."""
        error = float(np.linalg.norm(q.dequantized() - weight)) / max(float(np.linalg.norm(weight)), 1e-30)
        self.quantized.append((where, (int(weight.shape[0]), int(weight.shape[1])), error))

    def __str__(self) -> str:
        lines = [f"quantized {len(self.quantized)} weights, left {len(self.skipped)} in float"]
        lines += [f"  {where} [{n}x{k}]: relative error {err:.4f}" for where, (n, k), err in self.quantized]
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

    def matmul(op: Operation, rewriter: PatternRewriter) -> bool:
        weight = _matmul_weight(op, config, report)
        if weight is None:
            return False
        q = round_to_nearest(weight, config.bits, config.group, config.signed)
        report.record(_where(op), weight, q)
        producer = op.operands[1].defining_op()
        rewriter.replace_op_with_new(op, "quant.matmul", [op.operands[0], *_emit(rewriter, op, q)])
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


def _erase_if_unused(op: Operation | None, rewriter: PatternRewriter) -> None:
    if op is not None and not any(r.uses for r in op.results):
        rewriter.erase_op(op)


@register_pass
@dataclass(frozen=True)
class Quantize(Pass):
    """Weight-only post-training quantization (see the module docstring and :class:`QuantConfig`); weights
    left in float are named in one warning."""

    name: ClassVar[str] = "quantize"
    bits: int = 4
    group: int = 128
    method: str = "rtn"
    signed: bool = False
    min_elements: int = 4096
    embeddings: bool = False

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
