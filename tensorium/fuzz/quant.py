"""Random programs of the quant dialect for the fuzzer, and the packing layouts' round-trip oracle.

A quant program computes with k-bit constants: random widths 1..8, signed and unsigned, scales per tensor,
per channel or per group (of sizes that divide the axis: multiples of 32, which ``pack-quant`` packs for the
``qgemv`` kernel, and odd ones, which stay ``quant.matmul`` and run as the simple loop nest), optional float
zero points, codes that often sit at the ends of their range. Its ops are ``quant.matmul``,
``quant.embedding``, ``quant.dequantize`` and ``quant.quantize`` (of a constant, which ``fold`` folds, or of a
run-time value, which only the interpreter computes: the CPU lowering refuses it). Its pipeline is a random
one, most of the time with ``pack-quant`` for a random CPU (so the interleaved layout has 4, 8 or 16 lanes).

:func:`layout_problem` is an oracle on any program: each k-bit constant packed in every layout
(:data:`~tensorium.ir.dialects.quant.layouts.LAYOUTS`) at several lane counts must unpack to itself.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import graph, quant
from ..ir.dialects.builtin import func_body, make_func, make_module, set_results
from ..ir.dialects.quant import layouts
from ..ir.types import FloatType, IntegerType, QuantizedType, TensorType, f32, i32
from ..passes.base import get_pass
from ..passes.pipeline import Pipeline
from .mutators import TERMINAL_PASSES, random_pipeline

Rng = np.random.Generator

PACK_TARGETS = ("", "cpu:x86-64", "cpu:x86-64-v3", "cpu:x86-64-v4")
"""What ``pack-quant`` packs for in quant cases: this machine, and CPUs of 4, 8 and 16 f32 lanes."""
PACK_SHARE = 0.7
"""The share of quant cases whose pipeline packs the weights for the qgemv kernel."""
LAYOUT_LANES = (1, 4, 8, 16)
"""The lane counts every layout is round-tripped at."""


def _depth(rng: Rng) -> int:
    """A contraction length: mostly a multiple of 32 (what pack-quant packs), sometimes odd."""
    if rng.random() < 0.7:
        return 32 * int(rng.integers(1, 5))
    return int(rng.integers(3, 40))


def _quant_type(rng: Rng, shape: tuple[int, int], channel_axis: int) -> QuantizedType:
    bits = int(rng.integers(1, 9))
    signed = bool(rng.random() < 0.5)
    form = rng.choice(["per_tensor", "per_channel", "per_group", "per_group"])
    if form == "per_tensor":
        return QuantizedType(bits, signed, f32)
    if form == "per_channel":
        return QuantizedType(bits, signed, f32, "per_channel", channel_axis)
    axis = 1 - channel_axis
    sizes = [g for g in range(1, shape[axis] + 1) if shape[axis] % g == 0]
    round_sizes = [g for g in sizes if g % 32 == 0]
    size = int(rng.choice(round_sizes if round_sizes and rng.random() < 0.7 else sizes))
    return QuantizedType(bits, signed, f32, "per_group", axis, size)


def _codes(rng: Rng, q: QuantizedType, shape: tuple[int, ...]) -> np.ndarray:
    """Codes in the type's range, a third of them at its ends."""
    low, high = q.code_range
    codes = rng.integers(low, high + 1, shape)
    ends = rng.random(shape) < 0.3
    codes[ends] = np.where(rng.random(shape) < 0.5, low, high)[ends]
    return codes.astype(np.int8 if q.signed else np.uint8)


class _QuantProgram:
    """Builds one quant program: each step appends an op whose float result the function returns."""

    def __init__(self, rng: Rng) -> None:
        self.rng = rng

    def constant(self, array: np.ndarray, element: QuantizedType | FloatType | IntegerType) -> Value:
        t = TensorType(array.shape, element)
        return graph.constant(value=DenseAttr.adopt(np.ascontiguousarray(array), t))  # type: ignore[no-any-return]

    def params(self, q: QuantizedType, shape: tuple[int, ...]) -> tuple[Value, Value | None]:
        """Scales (positive, sometimes tiny or large) and, half the time, float zero points for ``q``."""
        want = quant.types.scale_shape(q, shape)
        dims = tuple(int(d) for d in want)  # type: ignore[arg-type]
        scale = self.rng.uniform(0.01, 0.2, dims) * self.rng.choice([1.0, 1e-3, 30.0], p=[0.8, 0.1, 0.1])
        zero = None
        if self.rng.random() < 0.5:
            low, high = q.code_range
            zero = self.constant(self.rng.uniform(low, high, dims).astype(np.float32), f32)
        return self.constant(scale.astype(np.float32), f32), zero

    def weight(self, shape: tuple[int, int], channel_axis: int) -> tuple[Value, Value, Value | None]:
        q = _quant_type(self.rng, shape, channel_axis)
        codes = self.constant(_codes(self.rng, q, shape), q)
        return (codes, *self.params(q, shape))

    def matmul(self, x: Value) -> Value:
        depth = x.type.shape[-1]  # type: ignore[attr-defined]
        cols = int(self.rng.integers(1, 40))
        w, s, z = self.weight((cols, depth), 0)
        return quant.matmul(x, w, s, *([z] if z is not None else []))  # type: ignore[no-any-return]

    def embedding(self, x: Value) -> Value:
        rows, dim = int(self.rng.integers(1, 20)), int(self.rng.integers(1, 40))
        w, s, z = self.weight((rows, dim), 0 if self.rng.random() < 0.5 else 1)
        count = (int(self.rng.integers(1, 6)),) if self.rng.random() < 0.7 else (2, int(self.rng.integers(1, 4)))
        indices = self.constant(self.rng.integers(0, rows, count).astype(np.int32), i32)
        return quant.embedding(w, indices, s, *([z] if z is not None else []))  # type: ignore[no-any-return]

    def dequantize(self, x: Value) -> Value:
        shape = (int(self.rng.integers(1, 9)), int(self.rng.integers(1, 40)))
        w, s, z = self.weight(shape, int(self.rng.integers(2)))
        return quant.dequantize(w, s, *([z] if z is not None else []))  # type: ignore[no-any-return]

    def quantize(self, x: Value) -> Value:
        """Quantize then dequantize: of the input (run time) or of a float constant (work for fold)."""
        shape = tuple(int(d) for d in x.type.shape)  # type: ignore[attr-defined]
        source = x
        if self.rng.random() < 0.5:
            source = self.constant(self.rng.uniform(-2, 2, shape).astype(np.float32), f32)
        q = _quant_type(self.rng, (shape[0], shape[1]), int(self.rng.integers(2)))
        s, z = self.params(q, shape)
        extra = [z] if z is not None else []
        codes = quant.quantize(source, s, *extra, type=q)
        return quant.dequantize(codes, s, *extra)  # type: ignore[no-any-return]

    STEPS: tuple[tuple[str, float], ...] = (
        ("matmul", 0.45),
        ("embedding", 0.2),
        ("dequantize", 0.2),
        ("quantize", 0.15),
    )

    def build(self, steps: int) -> Operation:
        rows = int(self.rng.integers(1, 6))
        x_type = TensorType((rows, _depth(self.rng)), f32)
        func = make_func("main", [x_type], arg_names=["x0"])
        (x,) = func_body(func).args
        names, weights = zip(*self.STEPS)
        probabilities = np.array(weights) / sum(weights)
        results = []
        with InsertionPoint(func_body(func)):
            for _ in range(steps):
                step: Callable[[Value], Value] = getattr(self, str(self.rng.choice(names, p=probabilities)))
                results.append(step(x))
        set_results(func, results)
        return make_module([func])


def quant_program(seed: int, steps: int | None = None) -> Operation:
    """A random verified module whose @main(x0: [M, K] f32) returns 1..3 results of quant ops."""
    rng = np.random.default_rng(seed)
    return _QuantProgram(rng).build(steps if steps is not None else int(rng.integers(1, 4)))


def quant_pipeline(rng: Rng) -> Pipeline:
    """A random pipeline, most of the time with ``pack-quant`` for a random CPU before any terminal pass."""
    passes = list(random_pipeline(rng))
    if rng.random() < PACK_SHARE and not any(p.name == "pack-quant" for p in passes):
        target = PACK_TARGETS[int(rng.integers(len(PACK_TARGETS)))]
        pack = get_pass("pack-quant")(target=target)  # type: ignore[call-arg]
        end = next((n for n, p in enumerate(passes) if p.name in TERMINAL_PASSES), len(passes))
        passes.insert(int(rng.integers(end + 1)), pack)
    return Pipeline(tuple(passes))


def layout_problem(module: Operation) -> str | None:
    """None when every k-bit constant of ``module`` survives packing and unpacking in every layout at every
    lane count of :data:`LAYOUT_LANES`; else what differs, naming the layout, the width and the lanes."""
    for op in module.walk():
        t = op.results[0].type if op.name == "graph.constant" else None
        if not isinstance(t, TensorType) or not isinstance(t.element, QuantizedType) or t.rank < 1:
            continue
        q = t.element
        attr = op.attributes["value"]
        assert isinstance(attr, DenseAttr)
        values = np.asarray(attr.array).astype(np.int64)
        for name, layout in layouts.LAYOUTS.items():
            if layout.rank2 and values.ndim != 2:
                continue
            for lanes in LAYOUT_LANES if layout.rank2 else (16,):
                words = layouts.pack(values, q.bits, q.signed, name, lanes)
                back = layouts.unpack(words, q.bits, q.signed, name, values.shape, lanes)
                if back.shape != values.shape or not np.array_equal(back, values):
                    where = np.argwhere(back != values)[0] if back.shape == values.shape else "the shape"
                    return (
                        f"layout '{name}' ({q.bits}-bit {'signed' if q.signed else 'unsigned'}, {lanes} lanes) does "
                        f"not give back the codes of a {t}: first difference at {where}"
                    )
    return None


__all__ = ["layout_problem", "quant_pipeline", "quant_program"]
