"""Random well-typed graph programs, for property tests and the fuzzer.

Programs are built from *recipes*: small functions that pick operands from the values built so far
(or make new constants and inputs of fitting shapes) and emit one op or a short chain of ops.
Shapes are solved by construction, so every program verifies; values stay in a numerically safe
range (inputs in [-1, 1]; ``log``/``sqrt`` only see positive operands; ``exp`` only bounded ones).
Recipes also plant the shapes that passes look for: zero/one splats, transpose and reshape chains,
duplicate expressions and constant subgraphs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, make_func, make_module, set_results
from ..ir.opdef import lookup
from ..ir.types import FloatType, IntegerType, TensorType, f32, i32, storage_dtype


@dataclass(frozen=True)
class GenConfig:
    """Knobs of the generator."""

    num_ops: int = 12
    max_rank: int = 3
    max_dim: int = 5
    num_inputs: int = 2
    int_probability: float = 0.15


def _is_constant(v: Value) -> bool:
    op = v.defining_op()
    return op is not None and op.name == "graph.constant"


def _is_number(t: TensorType) -> bool:
    return not (isinstance(t.element, IntegerType) and t.element.is_bool)


class _Gen:
    def __init__(self, rng: np.random.Generator, config: GenConfig):
        self.rng = rng
        self.config = config
        self.values: list[Value] = []

    # helpers ---------------------------------------------------------------------------------
    def choice(self, items: list) -> object:
        return items[int(self.rng.integers(len(items)))]

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        if rank is None:
            rank = int(self.rng.integers(1, self.config.max_rank + 1))
        return tuple(int(d) for d in self.rng.integers(1, self.config.max_dim + 1, size=rank))

    def emit(self, name: str, *operands: Value, **attrs: Any) -> Value | None:
        opdef = lookup(name)
        if opdef is None:
            return None
        result = opdef(*operands, **attrs)
        value = result[0] if isinstance(result, tuple) else result
        self.values.append(value)
        return value  # type: ignore[no-any-return]

    def constant(self, t: TensorType, splat: float | None = None) -> Value:
        if splat is not None:
            array = np.full(t.static_shape, splat, dtype=storage_dtype(t.element))
        elif isinstance(t.element, FloatType):
            array = self.rng.uniform(-1, 1, size=t.static_shape).astype(storage_dtype(t.element))
        else:
            array = self.rng.integers(-4, 5, size=t.static_shape).astype(storage_dtype(t.element))
        value = lookup("graph.constant")(value=DenseAttr(array, t))  # type: ignore[misc]
        self.values.append(value)
        return value  # type: ignore[no-any-return]

    def pick(self, pred: Callable[[TensorType], bool]) -> Value | None:
        found = [v for v in self.values if isinstance(v.type, TensorType) and pred(v.type)]
        if not found:
            return None
        recent = found[-4:]
        return self.choice(recent if self.rng.random() < 0.6 else found)  # type: ignore[return-value]

    def broadcast_partner(self, t: TensorType) -> Value:
        """An existing value or a new constant whose shape broadcasts with ``t``'s to ``t``'s shape."""
        same = [v for v in self.values if v.type == t]
        if same and self.rng.random() < 0.5:
            return self.choice(same)  # type: ignore[return-value]
        shape = list(t.static_shape)
        cut = int(self.rng.integers(0, len(shape) + 1))
        shape = [1 if self.rng.random() < 0.3 else d for d in shape[cut:]]
        splat = self.choice([None, None, 0.0, 1.0]) if self.rng.random() < 0.4 else None
        return self.constant(TensorType(tuple(shape), t.element), splat)  # type: ignore[arg-type]

    # recipes ---------------------------------------------------------------------------------
    def unary(self) -> None:
        x = self.pick(lambda t: isinstance(t.element, FloatType))
        if x is None:
            return
        name = self.choice(["neg", "abs", "tanh", "sigmoid", "sin", "cos", "relu", "gelu", "silu", "erf", "floor"])
        self.emit(f"graph.{name}", x)

    def guarded_unary(self) -> None:
        x = self.pick(lambda t: isinstance(t.element, FloatType))
        if x is None:
            return
        name = self.choice(["exp", "log", "sqrt", "rsqrt"])
        if name == "exp":
            inner = self.emit("graph.tanh", x)
        else:
            one = self.constant(TensorType((), x.type.element), 1.0)  # type: ignore[attr-defined]
            absx = self.emit("graph.abs", x)
            assert absx is not None
            inner = self.emit("graph.add", absx, one)
        assert inner is not None
        self.emit(f"graph.{name}", inner)

    def binary(self) -> None:
        a = self.pick(_is_number)
        if a is None:
            return
        t = a.type
        assert isinstance(t, TensorType)
        b = self.broadcast_partner(t)
        names = ["add", "sub", "mul", "max", "min"]
        if isinstance(t.element, FloatType):
            names.append("div_safe")
        name = self.choice(names)
        if name == "div_safe":
            absb = self.emit("graph.abs", b)
            one = self.constant(TensorType((), t.element), 1.0)
            assert absb is not None
            den = self.emit("graph.add", absb, one)
            assert den is not None
            self.emit("graph.div", a, den)
            return
        lhs, rhs = (a, b) if self.rng.random() < 0.7 else (b, a)
        self.emit(f"graph.{name}", lhs, rhs)

    def compare_select(self) -> None:
        a = self.pick(_is_number)
        if a is None:
            return
        b = self.broadcast_partner(a.type)  # type: ignore[arg-type]
        cond = self.emit(f"graph.{self.choice(['lt', 'le', 'gt', 'ge', 'eq', 'ne'])}", a, b)
        if cond is not None:
            self.emit("graph.where", cond, a, b)

    def matmul(self) -> None:
        a = self.pick(lambda t: t.rank >= 2 and isinstance(t.element, FloatType))
        if a is None:
            return
        t = a.type
        assert isinstance(t, TensorType)
        k = t.static_shape[-1]
        n = int(self.rng.integers(1, self.config.max_dim + 1))
        transpose_b = bool(self.rng.random() < 0.5)
        b = self.constant(TensorType((n, k) if transpose_b else (k, n), t.element))
        self.emit("graph.matmul", a, b, transpose_b=transpose_b)

    def cast_roundtrip(self) -> None:
        x = self.pick(lambda t: t.element == f32)
        if x is None:
            return
        wide = self.emit("graph.cast", x, dtype=FloatType("f64"))
        if wide is not None:
            self.emit("graph.cast", wide, dtype=f32)

    def reduce(self) -> None:
        x = self.pick(lambda t: t.rank >= 1 and isinstance(t.element, FloatType))
        if x is None:
            return
        rank = x.type.rank  # type: ignore[attr-defined]
        axes = sorted({int(a) for a in self.rng.integers(-rank, rank, size=int(self.rng.integers(1, rank + 1)))})
        axes = sorted({a % rank for a in axes})
        name = self.choice(["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
        self.emit(f"graph.{name}", x, axes=axes, keepdims=bool(self.rng.random() < 0.5))

    def normalize(self) -> None:
        x = self.pick(lambda t: t.rank >= 1 and isinstance(t.element, FloatType))
        if x is None:
            return
        self.emit(f"graph.{self.choice(['softmax', 'log_softmax'])}", x, axis=-1)

    def transpose_chain(self) -> None:
        x = self.pick(lambda t: t.rank >= 2)
        if x is None:
            return
        rank = x.type.rank  # type: ignore[attr-defined]
        for _ in range(int(self.rng.integers(1, 3))):
            perm = [int(p) for p in self.rng.permutation(rank)]
            y = self.emit("graph.transpose", x, perm=perm)
            if y is None:
                return
            x = y

    def reshape_chain(self) -> None:
        x = self.pick(lambda t: t.rank >= 1)
        if x is None:
            return
        total = int(np.prod(x.type.static_shape))  # type: ignore[attr-defined]
        for _ in range(int(self.rng.integers(1, 3))):
            divisors = [d for d in range(1, total + 1) if total % d == 0]
            first = int(self.choice(divisors))  # type: ignore[call-overload]
            target = [first, -1] if self.rng.random() < 0.5 else [total]
            y = self.emit("graph.reshape", x, shape=target)
            if y is None:
                return
            x = y

    def duplicate(self) -> None:
        ops = [v.defining_op() for v in self.values]
        candidates = [op for op in ops if op is not None and op.has_trait("pure")]
        if not candidates:
            return
        op: Operation = self.choice(candidates)  # type: ignore[assignment]
        clone = Operation(op.name, op.operands, op.result_types, dict(op.attributes))
        func_body(self.func).append(clone)
        self.values.append(clone.results[0])

    def constant_subgraph(self) -> None:
        t = TensorType(self.shape(), f32)
        a = self.constant(t)
        b = self.constant(t)
        self.emit(f"graph.{self.choice(['add', 'mul', 'sub'])}", a, b)

    # driver ----------------------------------------------------------------------------------
    def build(self) -> Operation:
        inputs = []
        for _ in range(self.config.num_inputs):
            element = i32 if self.rng.random() < self.config.int_probability else f32
            inputs.append(TensorType(self.shape(), element))
        self.func = make_func("main", inputs, arg_names=[f"x{i}" for i in range(len(inputs))])
        self.values = list(func_body(self.func).args)
        recipes: list[tuple[Callable[[], None], float]] = [
            (self.unary, 3),
            (self.guarded_unary, 1),
            (self.binary, 4),
            (self.compare_select, 1),
            (self.matmul, 1.5),
            (self.cast_roundtrip, 0.5),
            (self.reduce, 1.5),
            (self.normalize, 0.7),
            (self.transpose_chain, 1),
            (self.reshape_chain, 1),
            (self.duplicate, 1),
            (self.constant_subgraph, 0.5),
        ]
        weights = np.array([w for _, w in recipes])
        with InsertionPoint(func_body(self.func)):
            for _ in range(self.config.num_ops):
                recipe = recipes[int(self.rng.choice(len(recipes), p=weights / weights.sum()))][0]
                recipe()
        outputs = self._outputs()
        set_results(self.func, outputs)
        return make_module([self.func])

    def _outputs(self) -> list[Value]:
        computed = [v for v in self.values if not _is_constant(v)]
        last = computed[-1]
        unused = [v for v in computed[:-1] if not v.uses and v.defining_op() is not None]
        extra = [self.choice(unused)] if unused and self.rng.random() < 0.5 else []
        return [last, *extra]  # type: ignore[list-item]


def generate_module(seed: int, num_ops: int = 12, config: GenConfig | None = None) -> Operation:
    """A random, verified module with one function @main of about ``num_ops`` recipe steps."""
    cfg = config if config is not None else GenConfig(num_ops=num_ops)
    return _Gen(np.random.default_rng(seed), cfg).build()


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Random data of static tensor type ``t``: floats in [-1, 1], integers in [-4, 4], bools."""
    dtype = storage_dtype(t.element)
    shape = t.static_shape
    if isinstance(t.element, FloatType):
        return rng.uniform(-1, 1, size=shape).astype(dtype)
    if isinstance(t.element, IntegerType) and t.element.is_bool:
        return rng.random(size=shape) < 0.5
    return rng.integers(-4, 5, size=shape).astype(dtype)


def random_inputs(module: Operation, seed: int, func: str = "main") -> list[np.ndarray]:
    """Deterministic random inputs for every argument of ``func``."""
    from ..ir.dialects.builtin import lookup_func

    target = lookup_func(module, func)
    if target is None:
        raise ValueError(f"no function @{func}")
    rng = np.random.default_rng(seed)
    out = []
    for arg in func_body(target).args:
        assert isinstance(arg.type, TensorType)
        out.append(random_array(arg.type, rng))
    return out
