"""Features of a candidate kernel for the cost model: loop-nest statistics, the config's knobs, its IR text.

Loop-nest features follow Ansor and MetaSchedule: a walk over the kernel's loop IR evaluates index
arithmetic on the first iteration of every loop (which gives the trip counts of tiled loops too), weighs
each op by how often it runs, and follows each load and store's indices back to the loops they depend on.
That gives per kernel: floating-point work, loads and stores, bytes touched in global and local memory
and their footprint (distinct elements) and reuse, arithmetic intensity, stride classes relative to the
innermost loop (contiguous, strided, invariant), parallel, vector and unroll extents, loop depth and the
size of local (cache-blocking) buffers. The config's knobs and the counts of op names in the loop-IR text
(as an ML cost model of MLIR reads the IR) are hashed into fixed buckets, so one vector layout serves
every kernel family.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..ir.core import Block, Operation, Value
from ..ir.dialects.builtin import func_body, functions
from ..ir.types import BufferType, FloatType, dim_size, storage_dtype
from ..lowering.space import Config

UNKNOWN_TRIP = 16
"""The trip count assumed for a loop whose bounds the first-iteration evaluation cannot find."""
SYMBOLIC_SIZE = 64
"""The size assumed for a named (dynamic) dim."""
KNOB_BUCKETS = 16
TEXT_BUCKETS = 24

NEST_FEATURES = (
    "flops",
    "loads",
    "stores",
    "global_bytes",
    "local_bytes",
    "global_footprint",
    "reuse",
    "arithmetic_intensity",
    "contiguous",
    "strided",
    "invariant",
    "loops",
    "depth",
    "parallel_extent",
    "parallel_loops",
    "vector_width",
    "vectorized_share",
    "unroll",
    "innermost_trip",
    "local_alloc_bytes",
    "branches",
)
FEATURE_NAMES = (
    *NEST_FEATURES,
    *(f"knob{i}" for i in range(KNOB_BUCKETS)),
    *(f"op{i}" for i in range(TEXT_BUCKETS)),
    "ir_ops",
)
"""The meaning of each position of a feature vector."""

_INT_OPS: dict[str, Callable[[int, int], int]] = {
    "loop.add": lambda a, b: a + b,
    "loop.sub": lambda a, b: a - b,
    "loop.mul": lambda a, b: a * b,
    "loop.div": lambda a, b: a // b if b else 0,
    "loop.rem": lambda a, b: a % b if b else 0,
    "loop.min": min,
    "loop.max": max,
    "loop.and": lambda a, b: a & b,
    "loop.or": lambda a, b: a | b,
    "loop.xor": lambda a, b: a ^ b,
}
_PREDICATES: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
_FLOPS = {"loop.fma": 2.0}


@dataclass
class _Loop:
    kind: str
    trip: int
    factor: int


@dataclass
class _Walk:
    """The state of one walk over a kernel: known index values, loop dependencies, the running sums."""

    values: dict[int, int] = field(default_factory=dict)
    shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)
    deps: dict[int, frozenset[int]] = field(default_factory=dict)
    sums: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    footprints: dict[int, float] = field(default_factory=dict)
    max_depth: int = 0
    vector_width: int = 1

    def value(self, v: Value) -> int | None:
        return self.values.get(id(v))

    def dep(self, v: Value) -> frozenset[int]:
        return self.deps.get(id(v), frozenset())


def _shape(walk: _Walk, buffer: Value) -> tuple[int, ...]:
    known = walk.shapes.get(id(buffer))
    if known is not None:
        return known
    t = buffer.type
    assert isinstance(t, BufferType)
    return sample_shape(t)


def sample_shape(t: BufferType) -> tuple[int, ...]:
    """A shape for ``t`` with every named dim :data:`SYMBOLIC_SIZE` (a product of them their product, so that
    buffers of one kernel agree) and every anonymous one :data:`SYMBOLIC_SIZE`."""
    sizes: defaultdict[str, int] = defaultdict(lambda: SYMBOLIC_SIZE)
    return tuple(
        int(d) if isinstance(d, int) else SYMBOLIC_SIZE if d is None or d.name is None else dim_size(d, sizes)
        for d in t.shape
    )


def _scalar(walk: _Walk, op: Operation) -> None:
    """Evaluate index and boolean arithmetic where every operand is known."""
    args = [walk.value(v) for v in op.operands]
    result: int | None = None
    if op.name == "loop.const":
        value = op.attributes["value"]
        result = int(value) if isinstance(value, (bool, int)) else None
    elif op.name == "loop.dim":
        result = _shape(walk, op.operands[0])[int(op.attributes["axis"])]  # type: ignore[arg-type]
    elif None in args:
        result = None
    elif op.name in _INT_OPS and len(args) == 2:
        result = _INT_OPS[op.name](args[0], args[1])  # type: ignore[arg-type]
    elif op.name == "loop.cmp":
        result = int(_PREDICATES[str(op.attributes["predicate"])](args[0], args[1]))  # type: ignore[arg-type]
    elif op.name == "loop.select":
        result = args[1] if args[0] else args[2]
    elif op.name == "loop.cast" and args:
        result = args[0]
    if result is not None and op.results:
        walk.values[id(op.results[0])] = result


def _access(
    walk: _Walk, buffer: Value, indices: list[Value], weight: float, loops: list[_Loop], ivs: list[int]
) -> None:
    t = buffer.type
    assert isinstance(t, BufferType)
    size = storage_dtype(t.element).itemsize
    space = "global" if t.space == "global" else "local"
    walk.sums[f"{space}_bytes"] += weight * size
    deps = frozenset().union(*(walk.dep(i) for i in indices)) if indices else frozenset()
    if space == "global":
        footprint = size * math.prod(loop.trip for loop, iv in zip(loops, ivs) if iv in deps)
        walk.footprints[id(buffer)] = max(walk.footprints.get(id(buffer), 0.0), float(footprint))
    if not ivs:
        return
    innermost = ivs[-1]
    if indices and innermost in walk.dep(indices[-1]):
        walk.sums["contiguous"] += weight
    elif innermost in deps:
        walk.sums["strided"] += weight
    else:
        walk.sums["invariant"] += weight


def _walk_block(walk: _Walk, block: Block, weight: float, loops: list[_Loop], ivs: list[int]) -> None:
    for op in block.ops:
        deps = frozenset().union(*(walk.dep(v) for v in op.operands)) if op.operands else frozenset()
        for r in op.results:
            walk.deps[id(r)] = deps
        if op.name == "loop.for":
            _walk_for(walk, op, weight, loops, ivs)
        elif op.name == "loop.if":
            cond = walk.value(op.operands[0])
            walk.sums["branches"] += weight
            for index, region in enumerate(op.regions):
                taken = 1.0 if cond is None else float(bool(cond) == (index == 0))
                share = 0.5 if cond is None else taken
                if share:
                    for inner in region.blocks:
                        _walk_block(walk, inner, weight * share, loops, ivs)
        elif op.name == "loop.load":
            walk.sums["loads"] += weight
            _access(walk, op.operands[0], list(op.operands[1:]), weight, loops, ivs)
        elif op.name == "loop.store":
            walk.sums["stores"] += weight
            _access(walk, op.operands[1], list(op.operands[2:]), weight, loops, ivs)
        elif op.name == "loop.alloc":
            t = op.results[0].type
            assert isinstance(t, BufferType)
            sizes = iter(walk.value(v) or SYMBOLIC_SIZE for v in op.operands)
            shape = tuple(next(sizes, SYMBOLIC_SIZE) if not isinstance(d, int) else d for d in t.shape)
            walk.shapes[id(op.results[0])] = shape
            walk.sums["local_alloc_bytes"] += math.prod(shape) * storage_dtype(t.element).itemsize
        else:
            _scalar(walk, op)
            if op.results and isinstance(op.results[0].type, FloatType) and op.name != "loop.const":
                walk.sums["flops"] += weight * _FLOPS.get(op.name, 1.0)
                if any(loop.kind == "vectorize" for loop in loops):
                    walk.sums["vectorized_flops"] += weight * _FLOPS.get(op.name, 1.0)


def _walk_for(walk: _Walk, op: Operation, weight: float, loops: list[_Loop], ivs: list[int]) -> None:
    lower, upper, step = (walk.value(v) for v in op.operands)
    if lower is None or upper is None or step is None or step <= 0:
        trip = UNKNOWN_TRIP
    else:
        trip = max(0, -(-(upper - lower) // step))
    kind = str(op.attributes.get("kind", "serial"))
    factor_attr = op.attributes.get("factor")
    factor = int(factor_attr) if isinstance(factor_attr, int) else trip
    loop = _Loop(kind, trip, factor)
    walk.sums["loops"] += 1
    walk.max_depth = max(walk.max_depth, len(loops) + 1)
    if kind == "parallel" and not any(outer.kind == "parallel" for outer in loops):
        walk.sums["parallel_extent"] += trip
        walk.sums["parallel_loops"] += 1
    if kind == "vectorize":
        walk.vector_width = max(walk.vector_width, factor)
    if kind == "unroll":
        walk.sums["unroll"] += math.log2(1 + factor)
    body = op.regions[0].blocks[0]
    iv = body.args[0]
    walk.deps[id(iv)] = frozenset({id(iv)})
    if lower is not None:
        walk.values[id(iv)] = lower
    inner = [o for o in body.ops if o.name == "loop.for"]
    if not inner:
        walk.sums["innermost_trips"] += weight * trip
        walk.sums["innermost_weight"] += weight
    _walk_block(walk, body, weight * trip, [*loops, loop], [*ivs, id(iv)])


def _bucket(text: str, buckets: int) -> int:
    return zlib.crc32(text.encode()) % buckets


def nest_features(lowered: Operation) -> dict[str, float]:
    """The loop-nest statistics of the kernels of a lowered module, by name (:data:`NEST_FEATURES`)."""
    walk = _Walk()
    for kernel in functions(lowered):
        _walk_block(walk, func_body(kernel), 1.0, [], [])
    s = walk.sums
    footprint = sum(walk.footprints.values())
    accesses = s["loads"] + s["stores"]
    out = {
        "flops": s["flops"],
        "loads": s["loads"],
        "stores": s["stores"],
        "global_bytes": s["global_bytes"],
        "local_bytes": s["local_bytes"],
        "global_footprint": footprint,
        "reuse": s["global_bytes"] / footprint if footprint else 0.0,
        "arithmetic_intensity": s["flops"] / footprint if footprint else 0.0,
        "contiguous": s["contiguous"] / accesses if accesses else 0.0,
        "strided": s["strided"] / accesses if accesses else 0.0,
        "invariant": s["invariant"] / accesses if accesses else 0.0,
        "loops": s["loops"],
        "depth": float(walk.max_depth),
        "parallel_extent": s["parallel_extent"],
        "parallel_loops": s["parallel_loops"],
        "vector_width": float(walk.vector_width),
        "vectorized_share": s["vectorized_flops"] / s["flops"] if s["flops"] else 0.0,
        "unroll": s["unroll"],
        "innermost_trip": s["innermost_trips"] / s["innermost_weight"] if s["innermost_weight"] else 0.0,
        "local_alloc_bytes": s["local_alloc_bytes"],
        "branches": s["branches"],
    }
    return out


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


_SHARES = {"contiguous", "strided", "invariant", "vectorized_share"}


def candidate_features(lowered: Operation, config: Config) -> np.ndarray:
    """The feature vector of one candidate (positions named by :data:`FEATURE_NAMES`): counts on a log scale."""
    nest = nest_features(lowered)
    vector = [nest[name] if name in _SHARES else _log(nest[name]) for name in NEST_FEATURES]
    knobs = [0.0] * KNOB_BUCKETS
    for name, value in config.values:
        if isinstance(value, bool):
            knobs[_bucket(name, KNOB_BUCKETS)] += float(value)
        elif isinstance(value, int):
            knobs[_bucket(name, KNOB_BUCKETS)] += _log(value)
        else:
            knobs[_bucket(f"{name}={value}", KNOB_BUCKETS)] += 1.0
    ops: Counter[str] = Counter()
    for kernel in functions(lowered):
        for op in kernel.walk():
            ops[op.name] += 1
    text = [0.0] * TEXT_BUCKETS
    for name, count in ops.items():
        text[_bucket(name, TEXT_BUCKETS)] += count
    return np.array([*vector, *knobs, *(_log(c) for c in text), _log(sum(ops.values()))], dtype=np.float64)
