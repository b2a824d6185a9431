"""The builder that generator recipes share: a random source, the generator's knobs (:class:`GenConfig`), the
values recipes may read, and helpers to pick operands and to make constants, indices and images of fitting
shapes (see :mod:`.recipes` and :mod:`.generator`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..ir.attributes import DenseAttr
from ..ir.builder import current_insertion_point
from ..ir.core import Operation, Value
from ..ir.opdef import OpDef, lookup
from ..ir.types import (
    FloatType,
    IntegerType,
    ScalarType,
    Sym,
    TensorType,
    Type,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
    integer_bounds,
    storage_dtype,
)
from .special import sprinkle

T = TypeVar("T")

WIDE = (17, 40)
"""The least and the most elements of a wide last dimension (:attr:`GenConfig.wide_probability`)."""

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
    wide_probability: float = 0.0
    """How often a new shape (or image) has a wide last dimension, :data:`WIDE` elements, its other dimensions
    kept small: wide enough that the CPU backend's vector loops (16 f32 lanes with AVX-512) run their bodies,
    not only their remainders. Off by default; the fuzzer turns it on."""
    special_probability: float = 0.0
    """How often a new constant holds special values (NaN, infinities, signed zeros, subnormals, integer
    extremes: :mod:`.special`). Off by default, for the property tests that want finite programs; the fuzzer
    turns it on."""


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


def build_op(name: str, *operands: Value, **attrs: Any) -> Value:
    """Build op ``name`` (dialect-qualified) at the current insertion point; its (first) result."""
    opdef = lookup(name)
    assert opdef is not None, name
    result = opdef(*operands, **attrs)
    return result[0] if isinstance(result, tuple) else result  # type: ignore[no-any-return]


def _layout_dims(shape: Sequence[int], layout: str) -> dict[str, int]:
    """The dims of a 4-D ``shape`` by letter of ``layout`` (N, C, H, W or O, I, H, W)."""
    return dict(zip(layout, shape))


def _in_layout(dims: dict[str, int], layout: str) -> tuple[int, ...]:
    return tuple(dims[letter] for letter in layout)


class ProgramBuilder:
    """The state recipes share: the random source, the knobs and the values they may read, with helpers to
    pick operands and to make constants, indices and images of fitting shapes."""

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
        if rank and self.flip(self.config.wide_probability):
            return (*(self.randint(1, 3) for _ in range(rank - 1)), self.randint(*WIDE))
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
        [-4, 4] (within the type's range: a narrow integer's or a k-bit code's) or bools, with special values now
        and then (``GenConfig.special_probability``)."""
        shape, dtype = t.static_shape, storage_dtype(t.element)
        if splat is not None:
            array = np.full(shape, splat, dtype=dtype)
        elif _is_float(t):
            array = self.rng.uniform(low, high, size=shape).astype(dtype)
        else:
            array = random_array(t, self.rng)
        if splat is None and self.config.special_probability and self.flip(self.config.special_probability):
            array = sprinkle(array, t.element, self.rng)
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
        if self.flip(self.config.wide_probability):
            return {"N": 1, "C": self.randint(1, 2), "H": self.randint(1, 3), "W": self.randint(*WIDE)}
        return {
            "N": self.randint(1, 2),
            "C": self.randint(1, 4),
            "H": self.randint(1, side),
            "W": self.randint(1, side),
        }

    def window(self, size: int, dilation: int, pads: int) -> int:
        """A kernel size (1..3) whose dilated extent fits ``size`` plus ``pads``."""
        return self.randint(1, min(3, (size + pads - 1) // dilation + 1))


FUZZ_DIM = re.compile(r"s(\d+)")
"""The names of the dynamic dims the fuzzer writes (the ``dynamic-dims`` mutator): ``[s3]`` is a dim known only at
run time whose size in the case's inputs is 3, so that a case file alone says how to run it."""


def fuzz_shape(t: TensorType) -> tuple[int, ...]:
    """The shape of ``t`` in a case's inputs: its static dims, and :data:`FUZZ_DIM` dims at the size they name;
    ValueError for other dynamic dims."""
    shape = []
    for d in t.shape:
        found = FUZZ_DIM.fullmatch(d.name or "") if isinstance(d, Sym) else None
        if not isinstance(d, int) and found is None:
            raise ValueError(f"{t} has a dynamic dim {d} that is not the fuzzer's s<size>")
        shape.append(d if isinstance(d, int) else int(found[1]))  # type: ignore[index]
    return tuple(shape)


def random_array(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Random data of tensor type ``t`` (static, or with the fuzzer's dynamic dims: :func:`fuzz_shape`): floats in
    [-1, 1], bools, integers in [-4, 4] within the type's range (a narrow integer's or a k-bit code's:
    :func:`~tensorium.ir.types.integer_bounds`)."""
    dtype = storage_dtype(t.element)
    shape = fuzz_shape(t)
    if isinstance(t.element, FloatType):
        return rng.uniform(-1, 1, size=shape).astype(dtype)
    if isinstance(t.element, IntegerType) and t.element.is_bool:
        return rng.random(size=shape) < 0.5
    bounds = integer_bounds(t.element)
    assert bounds is not None, f"random data of {t}, which is neither float, bool nor integer"
    return rng.integers(max(-4, bounds[0]), min(4, bounds[1]) + 1, size=shape).astype(dtype)
