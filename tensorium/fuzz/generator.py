"""Random well-typed graph programs, for property tests and the fuzzer.

Programs are built from *recipes*: small functions that pick operands from the values built so far
(or make new constants of fitting shapes) and emit one op or a short chain of ops. Together the recipes
emit every graph op but those only passes make (``PASS_PRODUCED_OPS``), with their attributes varied
(strides, padding, dilations, groups, layouts, keepdims, negative axes, transpose flags, ...), mostly in
f32, some in i32, i64 and i1, a few in f64 and f16, on tensors of rank 0 to 4 (images in NCHW or NHWC).

Shapes are solved by construction, so every program verifies. Values stay in a numerically safe range:
inputs are in [-1, 1]; ``log``, ``sqrt``, ``rsqrt`` and ``reciprocal`` see ``|x| + c``, ``asin`` and
``acos`` see ``0.9 * tanh(x)``, ``exp`` sees ``tanh(x)``, ``pow`` a base in [0.5, 1.5] (or ``tanh(x)``
with a small whole exponent), ``div`` and ``mod`` a divisor ``|y| + 1``; gather, scatter and embedding
indices are constants in range, and a scatter that keeps the last of several updates writes each position
once. Recipes also plant the shapes that passes look for: zero/one splats, transpose and reshape chains,
duplicate expressions, constant subgraphs, convolutions followed by batch norm, sibling matmuls with
constant weights and the unfused attention pattern.

A recipe only reads the values it is given (all of which must dominate the insertion point) and creates
ops only through the builder at the current :class:`~tensorium.ir.builder.InsertionPoint`, so the fuzzer
can run one on any program at any point (:func:`apply_recipe`, :func:`apply_random_recipe`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint, current_insertion_point
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, lookup_func, make_func, make_module, set_results
from ..ir.dialects.graph.shape import INT64_MAX
from ..ir.opdef import OpDef, lookup
from ..ir.types import FloatType, IntegerType, ScalarType, TensorType, Type, f16, f32, f64, i1, i32, i64, storage_dtype

T = TypeVar("T")

PASS_PRODUCED_OPS = frozenset(
    {
        "graph.fused",  # the fuse pass's kernel groups: a region of ops the recipes already emit one by one
        "graph.yield",  # only ends the body of a graph.fused
        "graph.matmul_packed",  # pack-weights' form of a matmul by a constant f32 weight, panels laid out for the CPU
    }
)
"""Graph ops no recipe emits, because only passes make them."""

ELEMENTS = (f16, f32, f64, i1, i32, i64)
"""The element types recipes read and make; values of other types are left alone."""


@dataclass(frozen=True)
class GenConfig:
    """Knobs of the generator."""

    num_ops: int = 12
    max_rank: int = 3
    max_dim: int = 5
    num_inputs: int = 2
    int_probability: float = 0.15
    image_probability: float = 0.15
    """How often an input is a rank-4 image (NCHW or NHWC) rather than a tensor of rank <= max_rank."""
    max_image: int = 8
    """The largest height and width of a new image."""
    max_elements: int = 512
    """Values with more elements are not read by recipes (keeps programs fast to interpret)."""
    f64_probability: float = 0.04
    """How often a new float input or constant is f64 (else f32, or f16 below)."""
    f16_probability: float = 0.03


def _is_float(t: TensorType) -> bool:
    return isinstance(t.element, FloatType)


def _is_bool(t: TensorType) -> bool:
    return t.element == i1


def _is_int(t: TensorType) -> bool:
    return isinstance(t.element, IntegerType) and not t.element.is_bool


def _is_number(t: TensorType) -> bool:
    return not _is_bool(t)


def _is_constant(v: Value) -> bool:
    op = v.defining_op()
    return op is not None and op.name == "graph.constant"


def _tt(v: Value) -> TensorType:
    assert isinstance(v.type, TensorType)
    return v.type


def _shape(v: Value) -> tuple[int, ...]:
    return _tt(v).static_shape


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _op(name: str) -> OpDef:
    opdef = lookup(f"graph.{name}")
    assert opdef is not None, name
    return opdef


def _layout_dims(shape: Sequence[int], layout: str) -> dict[str, int]:
    """The dims of a 4-D ``shape`` by letter of ``layout`` (N, C, H, W or O, I, H, W)."""
    return dict(zip(layout, shape))


def _in_layout(dims: dict[str, int], layout: str) -> tuple[int, ...]:
    return tuple(dims[letter] for letter in layout)


Recipe = Callable[["_Gen"], None]
_RECIPES: dict[str, tuple[Recipe, float]] = {}


def _recipe(weight: float) -> Callable[[Recipe], Recipe]:
    """Register a method of ``_Gen`` as a recipe, chosen with relative ``weight``."""

    def register(fn: Recipe) -> Recipe:
        _RECIPES[fn.__name__] = (fn, weight)
        return fn

    return register


class _Gen:
    """The state recipes share: the random source, the knobs and the values they may read."""

    def __init__(self, rng: np.random.Generator, config: GenConfig, values: Sequence[Value] = ()):
        self.rng = rng
        self.config = config
        self.values: list[Value] = list(values)
        self._live: dict[int, bool] = {}

    # random choices ----------------------------------------------------------------------------
    def choice(self, items: Sequence[T]) -> T:
        return items[int(self.rng.integers(len(items)))]

    def flip(self, p: float = 0.5) -> bool:
        return bool(self.rng.random() < p)

    def randint(self, low: int, high: int) -> int:
        """A random integer in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        if rank is None:
            rank = self.randint(1, self.config.max_rank)
        return tuple(self.randint(1, self.config.max_dim) for _ in range(rank))

    def float_element(self) -> FloatType:
        r = self.rng.random()
        if r < self.config.f16_probability:
            return f16
        if r < self.config.f16_probability + self.config.f64_probability:
            return f64
        return f32

    def axis(self, rank: int) -> int:
        """An axis of a rank-``rank`` tensor, negative (counted from the end) a third of the time."""
        a = self.randint(0, rank - 1)
        return a - rank if self.flip(0.3) else a

    def broadcastable(self, shape: Sequence[int]) -> tuple[int, ...]:
        """A shape that broadcasts with ``shape`` to ``shape``: a suffix with some dims turned to 1."""
        cut = self.randint(0, len(shape))
        return tuple(1 if self.flip(0.3) else d for d in shape[cut:])

    # building ----------------------------------------------------------------------------------
    def emit_all(self, name: str, *operands: Value, **attrs: Any) -> list[Value]:
        """Build ``graph.<name>`` at the insertion point; its results become readable."""
        result = _op(name)(*operands, **attrs)
        results = list(result) if isinstance(result, tuple) else [result]
        self.values.extend(results)
        return results

    def emit(self, name: str, *operands: Value, **attrs: Any) -> Value:
        return self.emit_all(name, *operands, **attrs)[0]

    def insert(self, op: Operation) -> None:
        ip = current_insertion_point()
        if ip is None:
            raise RuntimeError("recipes insert ops at the current InsertionPoint, and none is active")
        ip.insert(op)
        self.values.extend(op.results)

    def constant_of(self, array: np.ndarray, element: ScalarType) -> Value:
        return self.emit("constant", value=DenseAttr(array, TensorType(array.shape, element)))

    def constant(self, t: TensorType, splat: float | None = None, low: float = -1.0, high: float = 1.0) -> Value:
        """A constant of type ``t``: ``splat`` everywhere, or random floats in [low, high], integers in
        [-4, 4] or bools."""
        shape, dtype = t.static_shape, storage_dtype(t.element)
        if splat is not None:
            array = np.full(shape, splat, dtype=dtype)
        elif _is_float(t):
            array = self.rng.uniform(low, high, size=shape).astype(dtype)
        elif _is_bool(t):
            array = self.rng.random(size=shape) < 0.5
        else:
            array = self.rng.integers(-4, 5, size=shape).astype(dtype)
        return self.constant_of(array, t.element)

    def scalar(self, value: float, element: ScalarType) -> Value:
        return self.constant(TensorType((), element), splat=value)

    def indices(self, array: np.ndarray) -> Value:
        """A constant index tensor (i32 or i64) holding ``array``."""
        element = i64 if self.flip(0.3) else i32
        return self.constant_of(np.asarray(array).astype(storage_dtype(element)), element)

    def weight(self, t: TensorType) -> Value:
        """A constant of type ``t``, now and then behind a tanh so that it is computed, not constant."""
        w = self.constant(t)
        return self.emit("tanh", w) if _is_float(t) and self.flip(0.15) else w

    def hide(self, *values: Value) -> None:
        """Keep ``values`` from later recipes: intermediates that hold -inf, or that must keep one use."""
        hidden = {id(v) for v in values}
        self.values = [v for v in self.values if id(v) not in hidden]

    # reading values ----------------------------------------------------------------------------
    def readable(self, t: Type) -> bool:
        """Whether recipes may read a value of type ``t``: a static, non-empty, not too large tensor."""
        return (
            isinstance(t, TensorType)
            and t.is_static
            and t.element in ELEMENTS
            and t.rank <= 6
            and 0 not in t.static_shape
            and math.prod(t.static_shape) <= self.config.max_elements
        )

    def pick(self, pred: Callable[[TensorType], bool] = lambda t: True) -> Value | None:
        """A readable value whose type passes ``pred``, preferably a recent one; None when none does."""
        found = [v for v in self.values if self.readable(v.type) and pred(_tt(v))]
        if not found:
            return None
        live = [v for v in found if self.live(v)]
        if live and self.flip(0.85):
            found = live
        recent = found[-4:]
        return self.choice(recent if self.flip(0.6) else found)

    def live(self, value: Value) -> bool:
        """Whether ``value`` depends on a block argument (so that constant folding cannot compute it)."""
        stack = [value]
        while stack:
            v = stack[-1]
            if id(v) in self._live:
                stack.pop()
                continue
            op = v.defining_op()
            if op is None:
                self._live[id(v)] = True
                continue
            pending = [o for o in op.operands if id(o) not in self._live]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            self._live[id(v)] = any(self._live[id(o)] for o in op.operands)
        return self._live[id(value)]

    def pick_float(self, min_rank: int = 0) -> Value | None:
        return self.pick(lambda t: _is_float(t) and t.rank >= min_rank)

    def float_value(self, min_rank: int = 1) -> Value:
        """A float value of rank >= ``min_rank``: picked, or a new constant."""
        x = self.pick_float(min_rank)
        if x is not None:
            return x
        rank = self.randint(min_rank, max(min_rank, self.config.max_rank))
        return self.constant(TensorType(self.shape(rank), self.float_element()))

    def any_value(self, min_rank: int = 1) -> Value:
        """A value of any element type and rank >= ``min_rank``: picked, or a new float constant."""
        x = self.pick(lambda t: t.rank >= min_rank)
        return x if x is not None else self.float_value(min_rank)

    def partner(self, t: TensorType) -> Value:
        """An existing value of type ``t``, or a new constant whose shape broadcasts with ``t``'s to ``t``'s
        (zeros and ones now and then)."""
        same = [v for v in self.values if v.type == t]
        if same and self.flip(0.5):
            return self.choice(same)
        splat = self.choice([None, None, 0.0, 1.0]) if self.flip(0.4) else None
        return self.constant(TensorType(self.broadcastable(t.static_shape), t.element), splat)

    def positive(self, x: Value, offset: float = 1.0) -> Value:
        """``|x| + offset``."""
        return self.emit("add", self.emit("abs", x), self.scalar(offset, _tt(x).element))

    def bounded(self, x: Value, scale: float = 1.0) -> Value:
        """``tanh(x) * scale``."""
        y = self.emit("tanh", x)
        return y if scale == 1.0 else self.emit("mul", y, self.scalar(scale, _tt(x).element))

    def comparison(self) -> Value:
        """An i1 value: a comparison of a picked number with a partner."""
        a = self.pick(_is_number)
        if a is None:
            a = self.float_value()
        cmp = self.choice(["lt", "le", "gt", "ge", "eq", "ne"])
        return self.emit(cmp, a, self.partner(_tt(a)))

    def image(self, floats: bool = True) -> tuple[Value, str, dict[str, int]]:
        """A rank-4 value (floats, or any number) read in a random layout, with its dims by letter."""
        layout = "NCHW" if self.flip(0.6) else "NHWC"
        ok = _is_float if floats else _is_number
        x = self.pick(lambda t: t.rank == 4 and ok(t)) if self.flip(0.8) else None
        if x is None and self.flip(0.8):
            source = self.pick(lambda t: t.rank != 4 and _is_float(t))
            if source is not None:
                total = math.prod(_shape(source))
                c = self.choice([d for d in _divisors(total) if d <= 8])
                h = self.choice(_divisors(total // c))
                x = self.emit(
                    "reshape", source, shape=_in_layout({"N": 1, "C": c, "H": h, "W": total // c // h}, layout)
                )
        if x is None:
            x = self.constant(TensorType(_in_layout(self.image_dims(), layout), self.float_element()))
        return x, layout, _layout_dims(_shape(x), layout)

    def image_dims(self) -> dict[str, int]:
        side = self.config.max_image
        return {
            "N": self.randint(1, 2),
            "C": self.randint(1, 4),
            "H": self.randint(1, side),
            "W": self.randint(1, side),
        }

    def window(self, size: int, dilation: int, pads: int) -> int:
        """A kernel size (1..3) whose dilated extent fits ``size`` plus ``pads``."""
        return self.randint(1, min(3, (size + pads - 1) // dilation + 1))

    # elementwise -------------------------------------------------------------------------------
    @_recipe(3)
    def unary(self) -> None:
        x = self.pick(_is_number)
        if x is None:
            return
        if _is_float(_tt(x)):
            floats = ["neg", "abs", "tanh", "sigmoid", "sin", "cos", "relu", "gelu", "silu", "erf", "floor"]
            name = self.choice(floats + ["ceil", "round", "sign", "atan"])
        else:
            name = self.choice(["neg", "abs", "relu", "sign"])
        attrs = {"approximate": "tanh"} if name == "gelu" and self.flip(0.3) else {}
        self.emit(name, x, **attrs)

    @_recipe(1.5)
    def guarded_unary(self) -> None:
        x = self.pick_float()
        if x is None:
            return
        name = self.choice(["exp", "log", "sqrt", "rsqrt", "reciprocal", "asin", "acos"])
        if name == "exp":
            inner = self.emit("tanh", x)
        elif name in ("asin", "acos"):
            inner = self.bounded(x, 0.9)
        else:
            inner = self.positive(x, self.choice([1.0, 0.5]))
        self.emit(name, inner)

    @_recipe(4)
    def binary(self) -> None:
        a = self.pick(_is_number)
        if a is None:
            return
        t = _tt(a)
        b = self.partner(t)
        name = self.choice(["add", "sub", "mul", "max", "min", "div", "mod", "pow"])
        if name in ("div", "mod"):
            self.emit(name, a, self.positive(b))
        elif name == "pow":
            self.power(a, b)
        else:
            lhs, rhs = (a, b) if self.flip(0.7) else (b, a)
            self.emit(name, lhs, rhs)

    def power(self, a: Value, b: Value) -> None:
        """``a ** b`` on operands made safe: no NaN, no overflow."""
        element = _tt(a).element
        if not isinstance(element, FloatType):
            powers = self.rng.integers(-1, 4, size=self.broadcastable(_shape(a)))
            self.emit("pow", a, self.constant_of(powers.astype(storage_dtype(element)), element))
            return
        if self.flip(0.3):  # a small whole exponent of any base in (-1, 1)
            base, exponent = self.emit("tanh", a), self.scalar(self.choice([0.0, 1.0, 2.0, 3.0]), element)
        else:  # a base in [0.5, 1.5]
            base = self.emit("add", self.emit("sigmoid", a), self.scalar(0.5, element))
            if self.flip(0.6):
                exponent = self.bounded(b, 2.0)
            else:
                exponent = self.scalar(self.choice([0.5, -1.0, -2.0, 2.0, 3.0]), element)
        self.emit("pow", base, exponent)

    @_recipe(1)
    def compare_select(self) -> None:
        a = self.pick(_is_number)
        if a is None:
            return
        b = self.partner(_tt(a))
        cond = self.emit(self.choice(["lt", "le", "gt", "ge", "eq", "ne"]), a, b)
        lhs, rhs = (a, b) if self.flip(0.7) else (b, a)
        self.emit("where", cond, lhs, rhs)

    @_recipe(1)
    def logical(self) -> None:
        x = self.pick(_is_int) if self.flip(0.3) else self.pick(_is_bool)
        if x is None:
            x = self.comparison()
        name = self.choice(["and", "or", "xor", "not"])
        if name == "not":
            self.emit("not", x)
        else:
            self.emit(name, x, self.partner(_tt(x)))

    @_recipe(0.7)
    def clamp(self) -> None:
        x = self.pick(_is_number)
        if x is None:
            return
        low = self.choice([None, -1.0, -0.5, 0.0, -2.5])
        high = self.choice([None, 1.0, 0.5, 2.5])
        if low is not None and high is not None and low > high:
            low, high = high, low
        self.emit("clamp", x, min=low, max=high)

    @_recipe(1)
    def cast(self) -> None:
        x = self.pick()
        if x is None:
            return
        source = _tt(x).element
        target = self.choice([e for e in ELEMENTS if e != source])
        if target == f16 and source != i1:
            x = self.emit("clamp", x, min=-1000.0, max=1000.0)
        y = self.emit("cast", x, dtype=target)
        if self.flip(0.5):
            self.emit("cast", y, dtype=source)

    @_recipe(0.5)
    def constant_subgraph(self) -> None:
        element = i32 if self.flip(0.2) else f32
        t = TensorType(self.shape(), element)
        a = self.constant(t)
        b = self.constant(TensorType(self.broadcastable(t.static_shape), element))
        self.emit(self.choice(["add", "mul", "sub"]), a, b)

    @_recipe(1)
    def duplicate(self) -> None:
        ops = [v.defining_op() for v in self.values]
        candidates = [op for op in ops if op is not None and op.has_trait("pure")]
        if candidates:
            self.insert(self.choice(candidates).clone())

    # contractions ------------------------------------------------------------------------------
    @_recipe(1.5)
    def matmul(self) -> None:
        a = self.pick(lambda t: t.rank >= 2 and _is_number(t))
        if a is None:
            a = self.constant(TensorType(self.shape(2), self.float_element()))
        s, element = _shape(a), _tt(a).element
        transpose_a, transpose_b = self.flip(0.25), self.flip(0.5)
        k = s[-2] if transpose_a else s[-1]
        b = self.pick(lambda t: t.rank == 2 and t.element == element and t.static_shape[1 if transpose_b else 0] == k)
        if b is None or self.flip(0.6):
            n = self.randint(1, self.config.max_dim)
            batch = self.broadcastable(s[:-2]) if self.flip(0.3) else ()
            b = self.weight(TensorType(batch + ((n, k) if transpose_b else (k, n)), element))
        self.emit("matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b)

    @_recipe(0.3)
    def sibling_matmuls(self) -> None:
        """Matmuls of one input by constant weights of one shape (for fuse-siblings), some with a bias."""
        x = self.float_value(min_rank=2)
        element, k = _tt(x).element, _shape(x)[-1]
        n, transpose_b, bias = self.randint(1, self.config.max_dim), self.flip(0.4), self.flip(0.5)
        for _ in range(self.randint(2, 3)):
            y = self.emit(
                "matmul",
                x,
                self.constant(TensorType((n, k) if transpose_b else (k, n), element)),
                transpose_b=transpose_b,
            )
            if bias:
                self.emit("add", y, self.constant(TensorType((n,), element)))

    @_recipe(0.8)
    def einsum(self) -> None:
        a = self.pick(lambda t: 1 <= t.rank <= 4 and _is_number(t))
        if a is None:
            a = self.float_value()
        s, element = _shape(a), _tt(a).element
        letters = [chr(ord("a") + i) for i in range(len(s) + 2)]
        a_sub = letters[: len(s)]
        sizes = dict(zip(a_sub, s))
        subs = [a_sub]
        operands = [a]
        if self.flip(0.75):
            shared = [c for c in a_sub if self.flip(0.6)]
            new = letters[len(s) : len(s) + self.randint(0, 2)]
            for c in new:
                sizes[c] = self.randint(1, self.config.max_dim)
            b_sub = [str(c) for c in self.rng.permutation(shared + new)]
            subs.append(b_sub)
            operands.append(self.weight(TensorType(tuple(sizes[c] for c in b_sub), element)))
        union = list(dict.fromkeys(c for sub in subs for c in sub))
        out = [str(c) for c in self.rng.permutation(union) if self.flip(0.6)]
        while math.prod(sizes[c] for c in out) > self.config.max_elements:
            out.pop()
        equation = ",".join("".join(sub) for sub in subs) + "->" + "".join(out)
        if self.flip(0.1):
            equation = equation.replace(",", ", ").replace("->", " -> ")
        self.emit("einsum", *operands, equation=equation)

    def attention_operands(self) -> tuple[Value, Value, Value]:
        """q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] (k and v constants, or q itself)."""
        q = self.pick(lambda t: 2 <= t.rank <= 4 and _is_float(t))
        if q is None:
            q = self.constant(TensorType(self.shape(3), self.float_element()))
        if self.flip(0.25):
            return q, q, q
        s, element = _shape(q), _tt(q).element
        batch = self.broadcastable(s[:-2])
        length = self.randint(1, self.config.max_dim)
        k = self.weight(TensorType(batch + (length, s[-1]), element))
        v = self.weight(TensorType(batch + (length, self.randint(1, self.config.max_dim)), element))
        return q, k, v

    @_recipe(0.6)
    def attention(self) -> None:
        q, k, v = self.attention_operands()
        element, rows, cols = _tt(q).element, _shape(q)[-2], _shape(k)[-2]
        operands = [q, k, v]
        mask_kind = self.choice(["none", "float", "bool"])
        if mask_kind == "float":
            operands.append(self.constant(TensorType(self.choice([(rows, cols), (1, cols), (cols,)]), element)))
        elif mask_kind == "bool":
            keep = self.rng.random((rows, cols)) < 0.6
            keep[:, 0] = True  # every row keeps a score, also under causal
            operands.append(self.constant_of(keep, i1))
        d = _shape(q)[-1]
        scale = 1 / math.sqrt(d) if self.flip(0.6) else float(np.round(self.rng.uniform(0.1, 2.0), 3))
        self.emit("attention", *operands, scale=scale, causal=self.flip(0.3))

    @_recipe(0.4)
    def attention_pattern(self) -> None:
        """softmax(q @ k^T * scale [masked]) @ v as separate ops, as imported graphs have it (for
        fuse-attention); the intermediates are hidden so that they keep their one use."""
        q, k, v = self.attention_operands()
        element, rows, cols = _tt(q).element, _shape(q)[-2], _shape(k)[-2]
        steps: list[Value] = []
        if self.flip(0.5):
            scores = self.emit("matmul", q, k, transpose_b=True)
        else:
            perm = list(range(len(_shape(k))))
            perm[-2], perm[-1] = perm[-1], perm[-2]
            steps.append(self.emit("transpose", k, perm=perm))
            scores = self.emit("matmul", q, steps[-1])
        steps.append(scores)
        how = self.choice(["none", "mul", "div"])
        if how != "none":
            # fuse-attention divides by multiplying with the reciprocal (documented), exact for powers of two
            factors = [0.5, 0.125, 2.0] + ([1 / math.sqrt(_shape(q)[-1])] if how == "mul" or element != f16 else [])
            factor = self.scalar(self.choice(factors), element)
            steps += [factor, self.emit(how, steps[-1], factor)]
        mask = self.choice(["none", "causal", "bool", "float"])
        if mask in ("causal", "bool"):
            keep = np.tril(np.ones((rows, cols), bool)) if mask == "causal" else self.rng.random((rows, cols)) < 0.6
            keep[:, 0] = True
            ninf = self.scalar(-np.inf, element)
            steps += [ninf, self.emit("where", self.constant_of(keep, i1), steps[-1], ninf)]
        elif mask == "float":
            steps.append(
                self.emit("add", steps[-1], self.constant(TensorType(self.choice([(rows, cols), (cols,)]), element)))
            )
        steps.append(self.emit("softmax", steps[-1], axis=-1))
        self.emit("matmul", steps[-1], v)
        self.hide(*steps)

    # reductions and normalizations -------------------------------------------------------------
    @_recipe(1.5)
    def reduce(self) -> None:
        name = self.choice(["sum", "mean", "max", "min", "prod"])
        x = self.pick(lambda t: t.rank >= 1 and (_is_number(t) or name in ("max", "min")))
        if x is None:
            return
        if name == "prod" and _is_float(_tt(x)):
            x = self.emit("tanh", x)
        rank = len(_shape(x))
        chosen = [int(a) for a in self.rng.choice(rank, size=self.randint(1, rank), replace=False)]
        axes = [] if self.flip(0.05) else [a - rank if self.flip(0.3) else a for a in chosen]
        if self.flip(0.7):
            axes.sort(key=lambda a: a % rank)
        self.emit(f"reduce_{name}", x, axes=axes, keepdims=self.flip())

    @_recipe(0.6)
    def arg_reduce(self) -> None:
        x = self.pick(lambda t: t.rank >= 1)
        if x is None:
            return
        name = self.choice(["argmax", "argmin"])
        self.emit(name, x, axis=self.axis(len(_shape(x))), keepdims=self.flip(), select_last_index=self.flip(0.3))

    @_recipe(0.6)
    def cumsum(self) -> None:
        x = self.pick(lambda t: t.rank >= 1 and _is_number(t))
        if x is None:
            return
        self.emit("cumsum", x, axis=self.axis(len(_shape(x))), exclusive=self.flip(0.3), reverse=self.flip(0.3))

    @_recipe(0.8)
    def softmax(self) -> None:
        x = self.pick_float(min_rank=1)
        if x is None:
            return
        axis = -1 if self.flip(0.5) else self.axis(len(_shape(x)))
        self.emit(self.choice(["softmax", "log_softmax"]), x, axis=axis)

    @_recipe(0.8)
    def norm(self) -> None:
        x = self.pick_float(min_rank=1)
        if x is None:
            return
        s, element = _shape(x), _tt(x).element
        axis = -1 if self.flip(0.4) else self.axis(len(s))
        params = TensorType(s[axis:], element)
        name = self.choice(["layer_norm", "rms_norm"])
        operands = [x]
        if self.flip(0.6):
            operands.append(self.weight(params))
            if name == "layer_norm" and self.flip(0.6):
                operands.append(self.constant(params))
        self.emit(name, *operands, axis=axis, eps=self.choice([1e-5, 1e-6, 1e-3]))

    def batch_norm_of(self, x: Value, axis: int) -> Value:
        """Inference batch norm of ``x`` along ``axis``, its parameters constants (variance in [0.1, 1.1])."""
        t = TensorType((_shape(x)[axis],), _tt(x).element)
        scale, bias, mean = (self.constant(t) for _ in range(3))
        var = self.constant(t, low=0.1, high=1.1)
        return self.emit("batch_norm", x, scale, bias, mean, var, eps=self.choice([1e-5, 1e-3, 0.0]), axis=axis)

    @_recipe(0.5)
    def batch_norm(self) -> None:
        x = self.pick_float(min_rank=1)
        producer = x.defining_op() if x is not None else None
        if x is None or (_tt(x).element == f16 and producer is not None and producer.name == "graph.conv2d"):
            return  # (see conv)
        self.batch_norm_of(x, self.choice([1, 1, -1]) if len(_shape(x)) >= 2 else 0)

    # convolutions, pooling, resizing -----------------------------------------------------------
    @_recipe(1)
    def conv(self) -> None:
        """A convolution (any layout, kernel layout, groups, strides, dilations, padding, with or without
        bias), sometimes followed by a batch norm (for fold-batch-norm) and a relu."""
        x, layout, dims = self.image()
        element, c = _tt(x).element, dims["C"]
        groups = self.choice(_divisors(c)) if self.flip(0.4) else 1
        out = groups * self.randint(1, max(1, 6 // groups))
        strides = [self.randint(1, 2) for _ in range(2)]
        dilations = [self.randint(1, 2) if self.flip(0.3) else 1 for _ in range(2)]
        padding = [self.randint(0, 2) if self.flip(0.4) else 0 for _ in range(4)]
        kh, kw = (self.window(dims[a], dilations[i], padding[i] + padding[i + 2]) for i, a in enumerate("HW"))
        kernel_layout = self.choice(["OIHW", "OIHW", "HWIO", "OHWI"])
        w = self.weight(TensorType(_in_layout({"O": out, "I": c // groups, "H": kh, "W": kw}, kernel_layout), element))
        operands = [x, w] + ([self.constant(TensorType((out,), element))] if self.flip(0.5) else [])
        y = self.emit(
            "conv2d",
            *operands,
            strides=strides,
            padding=padding,
            dilations=dilations,
            groups=groups,
            layout=layout,
            kernel_layout=kernel_layout,
        )
        # Not after an f16 conv: fold-batch-norm rounds the folded weights to f16 (documented), which the
        # property tests would see as a mismatch.
        if self.flip(0.3) and element != f16:
            channel = layout.index("C")
            y = self.batch_norm_of(y, channel - 4 if self.flip(0.3) else channel)
        if self.flip(0.3):
            self.emit("relu", y)

    @_recipe(0.5)
    def conv_transpose(self) -> None:
        x, layout, dims = self.image()
        element, c = _tt(x).element, dims["C"]
        groups = self.choice(_divisors(c)) if self.flip(0.3) else 1
        per_group = self.randint(1, 3)
        strides = [self.randint(1, 2) if dims[a] <= 4 else 1 for a in "HW"]
        dilations = [self.randint(1, 2) if self.flip(0.3) else 1 for _ in range(2)]
        kernel = [self.randint(1, 3) for _ in range(2)]
        output_padding = [self.randint(0, max(s, d) - 1) for s, d in zip(strides, dilations)]
        padding = [self.randint(0, 2) if self.flip(0.4) else 0 for _ in range(4)]
        for i, a in enumerate("HW"):
            full = (dims[a] - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1 + output_padding[i]
            while padding[i] + padding[i + 2] >= full:
                padding[i if padding[i] >= padding[i + 2] else i + 2] -= 1
        w = self.weight(TensorType((c, per_group, kernel[0], kernel[1]), element))
        operands = [x, w] + ([self.constant(TensorType((groups * per_group,), element))] if self.flip(0.5) else [])
        self.emit(
            "conv_transpose2d",
            *operands,
            strides=strides,
            padding=padding,
            output_padding=output_padding,
            dilations=dilations,
            groups=groups,
            layout=layout,
        )

    @_recipe(0.9)
    def pool(self) -> None:
        name = self.choice(["max_pool2d", "avg_pool2d", "global_max_pool2d", "global_avg_pool2d"])
        x, layout, dims = self.image(floats="avg" in name)
        if name.startswith("global"):
            self.emit(name, x, layout=layout)
            return
        dilations = [self.randint(1, 2) if name == "max_pool2d" and self.flip(0.3) else 1 for _ in range(2)]
        kernel, padding = [0, 0], [0, 0, 0, 0]
        for i, a in enumerate("HW"):
            kernel[i] = self.window(dims[a], dilations[i], 0)
            half = (dilations[i] * (kernel[i] - 1) + 1) // 2
            padding[i], padding[i + 2] = (self.randint(0, half) if self.flip(0.4) else 0 for _ in range(2))
        strides = [self.randint(1, 3) for _ in range(2)]
        attrs: dict[str, Any] = {"kernel": kernel, "strides": strides, "padding": padding, "layout": layout}
        attrs["ceil_mode"] = self.flip(0.3)
        if name == "max_pool2d":
            attrs["dilations"] = dilations
        else:
            attrs["count_include_pad"] = self.flip()
        self.emit(name, x, **attrs)

    @_recipe(0.5)
    def resize(self) -> None:
        mode = self.choice(["nearest", "bilinear"])
        x, layout, _ = self.image(floats=mode == "bilinear")
        self.emit(
            "resize",
            x,
            size=[self.randint(1, self.config.max_image) for _ in range(2)],
            mode=mode,
            coordinate_mode=self.choice(["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"]),
            nearest_mode=self.choice(["floor", "round_prefer_floor", "round_prefer_ceil", "ceil"]),
            layout=layout,
        )

    # shapes ------------------------------------------------------------------------------------
    @_recipe(1)
    def transpose_chain(self) -> None:
        x = self.pick(lambda t: t.rank >= 2) if self.flip(0.9) else self.pick()
        if x is None:
            return
        for _ in range(self.randint(1, 2)):
            x = self.emit("transpose", x, perm=[int(p) for p in self.rng.permutation(len(_shape(x)))])

    @_recipe(1)
    def reshape_chain(self) -> None:
        x = self.pick()
        if x is None:
            return
        for _ in range(self.randint(1, 2)):
            s = _shape(x)
            target = self.factor(math.prod(s))
            allowzero = self.flip(0.1)
            if not allowzero:
                copies = [i for i, d in enumerate(target) if i < len(s) and s[i] == d]
                if copies and self.flip(0.3):
                    target[self.choice(copies)] = 0
                free = [i for i, d in enumerate(target) if d != 0]
                if free and self.flip(0.4):
                    target[self.choice(free)] = -1
            x = self.emit("reshape", x, shape=target, allowzero=allowzero)

    def factor(self, total: int) -> list[int]:
        """Random dims (at most four) whose product is ``total``."""
        dims: list[int] = []
        for _ in range(self.randint(1, 3)):
            dims.append(self.choice(_divisors(total // math.prod(dims))))
        dims.append(total // math.prod(dims))
        dims = [d for d in dims if d != 1 or self.flip(0.3)]
        return [int(d) for d in self.rng.permutation(dims)] if dims else []

    @_recipe(0.8)
    def squeeze_unsqueeze(self) -> None:
        x = self.pick()
        if x is None:
            return
        s = _shape(x)
        ones = [i for i, d in enumerate(s) if d == 1]
        if ones and self.flip(0.4):
            axes = [a - len(s) if self.flip(0.3) else a for a in ones if self.flip(0.7)] or [ones[0]]
            self.emit("squeeze", x, axes=axes)
            return
        rank = len(s) + self.randint(1, 2)
        new = sorted(int(a) for a in self.rng.choice(rank, size=rank - len(s), replace=False))
        y = self.emit("unsqueeze", x, axes=[a - rank if self.flip(0.3) else a for a in new])
        if self.flip(0.3):
            self.emit("squeeze", y, axes=new)

    @_recipe(0.6)
    def broadcast_to(self) -> None:
        x = self.pick()
        if x is None:
            return
        s = _shape(x)
        target = [self.randint(1, 3) for _ in range(self.randint(0, 1))]
        target += [self.randint(1, self.config.max_dim) if d == 1 and self.flip(0.7) else d for d in s]
        if math.prod(target) > self.config.max_elements:
            target = list(s)
        offset = len(target) - len(s)
        target = [-1 if i >= offset and self.flip(0.2) and s[i - offset] == d else d for i, d in enumerate(target)]
        self.emit("broadcast_to", x, shape=target)

    @_recipe(0.9)
    def slice(self) -> None:
        x = self.pick()
        if x is None:
            return
        s = _shape(x)
        count = self.randint(1, len(s)) if s else 0
        if count == 0:
            return
        explicit = self.flip(0.7)
        axes = [int(a) for a in self.rng.choice(len(s), size=count, replace=False)] if explicit else list(range(count))
        starts, ends, steps = [], [], []
        for a in axes:
            start, end, step = self.slice_range(s[a])
            starts.append(start)
            ends.append(end)
            steps.append(step)
        attrs: dict[str, Any] = {"starts": starts, "ends": ends}
        if explicit:
            attrs["axes"] = [a - len(s) if self.flip(0.3) else a for a in axes]
        if explicit or any(st != 1 for st in steps) or self.flip(0.5):
            attrs["steps"] = steps
        self.emit("slice", x, **attrs)

    def slice_range(self, size: int) -> tuple[int, int, int]:
        """(start, end, step) that keep at least one of ``size`` elements; out-of-range bounds clamp."""
        for _ in range(8):
            step = self.choice([1, 1, 1, 2, 3, -1, -2])
            start = self.randint(-size - 1, size + 1)
            end = self.randint(-size - 1, size + 1)
            if self.flip(0.25):
                end = INT64_MAX if step > 0 else -INT64_MAX
            if len(range(*slice(start, end, step).indices(size))) > 0:
                return start, end, step
        return 0, INT64_MAX, 1

    @_recipe(0.9)
    def split_concat(self) -> None:
        x = self.pick(lambda t: t.rank >= 1)
        if x is None:
            return
        s, t = _shape(x), _tt(x)
        axis = self.axis(len(s))
        d = s[axis]
        if d >= 2 and self.flip(0.6):
            cuts = sorted(
                int(c) for c in self.rng.choice(np.arange(1, d), size=min(d - 1, self.randint(1, 2)), replace=False)
            )
            sizes = [b - a for a, b in zip([0, *cuts], [*cuts, d])]
            pieces = self.emit_all("split", x, axis=axis, sizes=sizes)
            if self.flip(0.5):
                self.emit("concat", *[pieces[int(i)] for i in self.rng.permutation(len(pieces))], axis=axis)
            return
        same = [
            v
            for v in self.values
            if self.readable(v.type)
            and isinstance(v.type, TensorType)
            and v.type.element == t.element
            and v.type.is_static
            and len(v.type.static_shape) == len(s)
            and all(a == b for i, (a, b) in enumerate(zip(v.type.static_shape, s)) if i != axis % len(s))
        ]
        operands = [x]
        for _ in range(self.randint(0, 2)):
            if same and self.flip(0.5):
                operands.append(self.choice(same))
            else:
                other = list(s)
                other[axis] = self.randint(1, 3)
                operands.append(self.constant(TensorType(tuple(other), t.element)))
        self.emit("concat", *[operands[int(i)] for i in self.rng.permutation(len(operands))], axis=axis)

    @_recipe(0.7)
    def pad(self) -> None:
        x = self.pick()
        if x is None:
            return
        s, t = _shape(x), _tt(x)
        mode = self.choice(["constant", "constant", "reflect", "edge"])
        begins, ends = [], []
        for d in s:
            begin, end = self.choice([-1, 0, 0, 1, 2]), self.choice([-1, 0, 0, 1, 2])
            if d + min(begin, 0) + min(end, 0) < 1:
                begin, end = max(begin, 0), max(end, 0)
            cropped = d + min(begin, 0) + min(end, 0)
            if mode == "reflect" and max(begin, end) >= cropped:
                begin, end = min(begin, 0), min(end, 0)
            begins.append(begin)
            ends.append(end)
        value = 0.0
        if mode == "constant":
            if _is_float(t):
                value = self.choice([0.0, 1.0, -0.5, 0.25])
            elif _is_int(t):
                value = float(self.randint(-3, 3))
            else:
                value = float(self.randint(0, 1))
        self.emit("pad", x, pads=begins + ends, mode=mode, value=value)

    @_recipe(0.5)
    def tile(self) -> None:
        x = self.pick()
        if x is None:
            return
        s = _shape(x)
        repeats = [self.randint(1, 3) if self.flip(0.4) else 1 for _ in s]
        if math.prod(s) * math.prod(repeats) > self.config.max_elements:
            repeats = [1] * len(s)
        self.emit("tile", x, repeats=repeats)

    @_recipe(0.5)
    def triangle(self) -> None:
        x = self.pick(lambda t: t.rank >= 2)
        if x is None:
            return
        self.emit(self.choice(["tril", "triu"]), x, k=self.randint(-2, 2))

    @_recipe(0.5)
    def arange(self) -> None:
        """An arange, usually added to (or multiplied with) a value whose last dim it matches."""
        x = self.pick(lambda t: t.rank >= 1 and t.element in (f32, f64, i32, i64))
        element = _tt(x).element if x is not None else self.choice([f32, i32, i64, f64])
        n = _shape(x)[-1] if x is not None else self.randint(1, self.config.max_dim)
        if isinstance(element, FloatType):
            start, step = self.choice([0.0, -1.5, 0.5, 2.0]), self.choice([1.0, 0.5, -1.0, 0.25, 2.0])
        else:
            start, step = float(self.randint(-3, 3)), float(self.choice([1, 2, -1, 3]))
        r = self.emit("arange", start=start, limit=start + step * (n - 0.5), step=step, dtype=element)
        if x is not None and self.flip(0.7):
            self.emit(self.choice(["add", "mul"]), x, r)

    # indexing ----------------------------------------------------------------------------------
    @_recipe(0.4)
    def gather(self) -> None:
        data = self.any_value()
        s = _shape(data)
        axis = self.randint(0, len(s) - 1)
        index_shape = tuple(self.randint(1, 4) for _ in range(self.randint(0, 2)))
        indices = self.indices(self.rng.integers(-s[axis], s[axis], size=index_shape))
        self.emit("gather", data, indices, axis=axis - len(s) if self.flip(0.3) else axis)

    @_recipe(0.4)
    def gather_elements(self) -> None:
        data = self.any_value()
        s = _shape(data)
        axis = self.randint(0, len(s) - 1)
        shape = [self.randint(1, self.config.max_dim) if i == axis else self.randint(1, d) for i, d in enumerate(s)]
        indices = self.indices(self.rng.integers(-s[axis], s[axis], size=shape))
        self.emit("gather_elements", data, indices, axis=axis - len(s) if self.flip(0.3) else axis)

    @_recipe(0.4)
    def gather_nd(self) -> None:
        data = self.any_value()
        s = _shape(data)
        batch_dims = self.randint(0, len(s) - 1) if len(s) >= 2 and self.flip(0.3) else 0
        m = self.randint(1, len(s) - batch_dims)
        outer = s[:batch_dims] + tuple(self.randint(1, 3) for _ in range(self.randint(0, 2)))
        columns = [self.rng.integers(-n, n, size=outer) for n in s[batch_dims : batch_dims + m]]
        self.emit("gather_nd", data, self.indices(np.stack(columns, axis=-1)), batch_dims=batch_dims)

    @_recipe(0.4)
    def embedding(self) -> None:
        table = self.pick(lambda t: t.rank == 2 and _is_float(t))
        if table is None or self.flip(0.3):
            table = self.weight(
                TensorType((self.randint(1, 6), self.randint(1, self.config.max_dim)), self.float_element())
            )
        rows = _shape(table)[0]
        shape = tuple(self.randint(1, 4) for _ in range(self.randint(0, 2)))
        self.emit("embedding", table, self.indices(self.rng.integers(0, rows, size=shape)))

    def reduction(self, data: Value) -> str:
        numbers = _is_number(_tt(data))
        return self.choice(["none", "none", "max", "min"] + (["add", "mul"] if numbers else []))

    def updates(self, shape: tuple[int, ...], element: ScalarType) -> Value:
        """Scatter updates: a value of this type when there is one, else a constant."""
        t = TensorType(shape, element)
        found = [v for v in self.values if v.type == t]
        return self.choice(found) if found and self.flip(0.3) else self.constant(t)

    @_recipe(0.5)
    def scatter_elements(self) -> None:
        data = self.any_value()
        s, element = _shape(data), _tt(data).element
        axis = self.randint(0, len(s) - 1)
        d = s[axis]
        reduction = self.reduction(data)
        off = [self.randint(1, n) for i, n in enumerate(s) if i != axis]
        k = self.randint(1, d)
        if reduction == "none":  # each line along the axis writes distinct positions
            positions = np.argsort(self.rng.random((*off, d)), axis=-1)[..., :k]
        else:
            positions = self.rng.integers(0, d, size=(*off, k))
        positions = np.moveaxis(positions, -1, axis)
        positions = np.where(self.rng.random(positions.shape) < 0.3, positions - d, positions)
        indices = self.indices(positions)
        updates = self.updates(positions.shape, element)
        self.emit(
            "scatter_elements",
            data,
            indices,
            updates,
            axis=axis - len(s) if self.flip(0.3) else axis,
            reduction=reduction,
        )

    @_recipe(0.5)
    def scatter_nd(self) -> None:
        data = self.any_value()
        s, element = _shape(data), _tt(data).element
        m = self.randint(1, len(s))
        lead = s[:m]
        total = math.prod(lead)
        reduction = self.reduction(data)
        outer = tuple(self.randint(1, 3) for _ in range(self.randint(1, 2)))
        if reduction == "none":  # distinct tuples
            outer = (min(math.prod(outer), total),)
            flat = self.rng.choice(total, size=outer[0], replace=False)
        else:
            flat = self.rng.integers(0, total, size=math.prod(outer))
        tuples = np.stack(np.unravel_index(flat, lead), axis=-1).reshape(*outer, m)
        tuples = np.where(self.rng.random(tuples.shape) < 0.3, tuples - np.array(lead), tuples)
        updates = self.updates(outer + s[m:], element)
        self.emit("scatter_nd", data, self.indices(tuples), updates, reduction=reduction)

    # driver ------------------------------------------------------------------------------------
    def input_type(self) -> TensorType:
        if self.flip(self.config.image_probability):
            layout = "NCHW" if self.flip(0.6) else "NHWC"
            return TensorType(_in_layout(self.image_dims(), layout), f32)
        element = i32 if self.flip(self.config.int_probability) else self.float_element()
        return TensorType(self.shape(0 if self.flip(0.05) else None), element)

    def build(self) -> Operation:
        inputs = [self.input_type() for _ in range(self.config.num_inputs)]
        func = make_func("main", inputs, arg_names=[f"x{i}" for i in range(len(inputs))])
        self.values = list(func_body(func).args)
        with InsertionPoint(func_body(func)):
            for _ in range(self.config.num_ops):
                _RECIPES[pick_recipe(self.rng)][0](self)
        set_results(func, self._outputs())
        return make_module([func])

    def _outputs(self) -> list[Value]:
        """The last value computed from the inputs, and most other unused ones (up to 8 results in all),
        so that little of the program is dead code for the passes and backends."""
        computed = [v for v in self.values if not _is_constant(v)]
        live = [v for v in computed if self.live(v)]
        last = (live or computed)[-1]
        unused = [v for v in computed if v is not last and not v.uses and v.defining_op() is not None]
        extra = [v for v in unused if self.flip(0.7)][-7:]
        return [last, *extra]


RECIPE_WEIGHTS = MappingProxyType({name: weight for name, (_, weight) in _RECIPES.items()})
"""Every recipe by name, with the relative weight with which it is chosen."""
RECIPE_NAMES = tuple(_RECIPES)
_PROBABILITIES = np.array(list(RECIPE_WEIGHTS.values())) / sum(RECIPE_WEIGHTS.values())


def pick_recipe(rng: np.random.Generator) -> str:
    """The name of a recipe drawn by weight."""
    return RECIPE_NAMES[int(rng.choice(len(RECIPE_NAMES), p=_PROBABILITIES))]


def apply_recipe(
    name: str, rng: np.random.Generator, values: Sequence[Value], config: GenConfig | None = None
) -> list[Value]:
    """Run recipe ``name`` at the current insertion point, reading only ``values`` (which must dominate
    it); returns the values it made that later recipes may read (some intermediates are left out).
    A recipe that finds nothing to work on may emit nothing."""
    if current_insertion_point() is None:
        raise RuntimeError("apply_recipe needs an active InsertionPoint")
    gen = _Gen(rng, config if config is not None else GenConfig(), values)
    _RECIPES[name][0](gen)
    given = {id(v) for v in values}
    return [v for v in gen.values if id(v) not in given]


def apply_random_recipe(
    rng: np.random.Generator, values: Sequence[Value], config: GenConfig | None = None
) -> list[Value]:
    """:func:`apply_recipe` of a recipe drawn by weight."""
    return apply_recipe(pick_recipe(rng), rng, values, config)


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
    target = lookup_func(module, func)
    if target is None:
        raise ValueError(f"no function @{func}")
    rng = np.random.default_rng(seed)
    out = []
    for arg in func_body(target).args:
        assert isinstance(arg.type, TensorType)
        out.append(random_array(arg.type, rng))
    return out
