"""Recipes: small methods that pick operands among the values built so far (or make constants of fitting
shapes) and emit one op or a short chain of ops, registered with a weight (see :mod:`.generator`).

Together they emit every graph op but those only passes make, with their attributes varied, and keep
values in a numerically safe range; the generator's docstring says how. A recipe reads only
``self.values`` and creates ops only through the builder at the current insertion point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np

from ..ir.core import Value
from ..ir.dialects.graph.shape import INT64_MAX
from ..ir.types import FloatType, IntegerType, ScalarType, TensorType, f16, f32, f64, i1, i32, i64, storage_dtype
from .builder import (
    ELEMENTS,
    ProgramBuilder,
    _divisors,
    _in_layout,
    _is_bool,
    _is_float,
    _is_int,
    _is_number,
    _shape,
    _tt,
)
from .special import sprinkle

Recipe = Callable[["Recipes"], None]
ODD_WIDTHS = (2, 3, 4, 5, 6, 7, 9, 12, 15, 17, 24, 31, 33, 48, 63)
"""The integer widths of :meth:`Recipes.odd_integers`: every sub-byte width and widths between numpy's."""
_RECIPES: dict[str, tuple[Recipe, float]] = {}


def _recipe(weight: float) -> Callable[[Recipe], Recipe]:
    """Register a method of ``Recipes`` as a recipe, chosen with relative ``weight``."""

    def register(fn: Recipe) -> Recipe:
        _RECIPES[fn.__name__] = (fn, weight)
        return fn

    return register


class Recipes(ProgramBuilder):
    """Every recipe, as a method; :data:`RECIPE_WEIGHTS` lists them with their weights."""

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

    @_recipe(1)
    def odd_integers(self) -> None:
        """A number cast to an integer type of odd width (``i3``, ``u5``, ``i17``, ...; a float scaled first so
        the cast reaches the type's edges) and combined with a constant of that type that holds its minimum and
        maximum: arithmetic, a shift (a product or quotient by a power of two), a comparison and select, then
        cast to another width (of the other signedness half the time) or back to a type later recipes read."""
        x = self.pick(_is_number)
        if x is None:
            x = self.constant(TensorType(self.shape(), i32))
        element = IntegerType(self.choice(ODD_WIDTHS), self.flip())
        if _is_float(_tt(x)):  # scaled (within f16's range too) so that the cast reaches the type's edges
            x = self.emit("mul", x, self.scalar(float(2 ** min(element.width, 14)), _tt(x).element))
        v = self.emit("cast", x, dtype=element)
        shape = self.broadcastable(_shape(v))
        values = self.rng.integers(element.min_value, element.max_value, size=shape, endpoint=True)
        other = self.constant_of(sprinkle(values.astype(storage_dtype(element)), element, self.rng), element)
        name = self.choice(["add", "sub", "mul", "max", "min", "div", "mod", "shift", "select", "neg", "abs"])
        if name == "shift":
            power = self.scalar(float(2 ** self.randint(1, element.width - 1)), element)
            y = self.emit(self.choice(["mul", "div"]), v, power)
        elif name == "select":
            cmp = self.choice(["lt", "le", "gt", "ge", "eq", "ne"])
            y = self.emit("where", self.emit(cmp, v, other), v, self.emit("broadcast_to", other, shape=list(_shape(v))))
        elif name in ("neg", "abs"):
            y = self.emit(name, v)
        else:
            lhs, rhs = (v, other) if self.flip(0.7) else (other, v)
            y = self.emit(name, lhs, rhs)
        if self.flip(0.4):
            width = self.choice([w for w in ODD_WIDTHS if w != element.width])
            y = self.emit("cast", y, dtype=IntegerType(width, not element.signed or self.flip()))
        if self.flip(0.8):  # else the odd-width value stays, to be stored as such when it is an output
            self.emit("cast", y, dtype=self.choice([i32, i64, f32, _tt(x).element]))

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
        transpose_a, transpose_b = self.flip(0.4), self.flip(0.5)  # both together one time in five
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
            if self.flip(0.2):
                x = self.reshape_by_dims(x, target)
                continue
            allowzero = self.flip(0.1)
            if not allowzero:
                copies = [i for i, d in enumerate(target) if i < len(s) and s[i] == d]
                if copies and self.flip(0.3):
                    target[self.choice(copies)] = 0
                free = [i for i, d in enumerate(target) if d != 0]
                if free and self.flip(0.4):
                    target[self.choice(free)] = -1
            x = self.emit("reshape", x, shape=target, allowzero=allowzero)

    def reshape_by_dims(self, x: Value, target: list[int]) -> Value:
        """``graph.reshape_dims`` of ``x`` to ``target``, up to two of its dims taken from other values that have
        them (with the dynamic-dims mutator, run-time sizes), now and then one more left to infer."""
        positions: list[int] = []
        sources: list[tuple[Value, int]] = []
        for i in self.rng.permutation(len(target))[:2]:
            size = target[i]
            source = self.pick(lambda t: size in t.static_shape)  # noqa: B023 (pick calls it at once)
            if source is not None:
                axes = [a for a, d in enumerate(_shape(source)) if d == size]
                positions.append(int(i))
                sources.append((source, self.choice(axes)))
        shape = [-1 if i in positions else d for i, d in enumerate(target)]
        rest = [i for i in range(len(shape)) if i not in positions]
        if rest and self.flip(0.4):
            shape[self.choice(rest)] = -1
        return self.emit(
            "reshape_dims", x, *[v for v, _ in sources], shape=shape, positions=positions, axes=[a for _, a in sources]
        )

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

    @_recipe(0.3)
    def random(self) -> None:
        """Random draws, usually combined with a float value of their shape."""
        x = self.pick(lambda t: t.element in (f32, f64))
        element = _tt(x).element if x is not None else self.choice([f32, f64])
        shape = list(_shape(x)) if x is not None else [self.randint(1, self.config.max_dim)]
        distribution = self.choice(["uniform", "normal"])
        r = self.emit("random", shape=shape, dtype=element, distribution=distribution, seed=self.randint(0, 1000))
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

    # run-time sizes ----------------------------------------------------------------------------
    @_recipe(0.3)
    def compress(self) -> None:
        """Rows of one or two values kept where a mask holds: results of a run-time size (which recipes do
        not read), summed back to a static value; the kept count is readable too."""
        data = self.any_value()
        rows = _shape(data)[0]
        others = [v for v in self.values if self.readable(v.type) and _shape(v)[:1] == (rows,) and v is not data]
        operands = [data, self.choice(others)] if others and self.flip(0.3) else [data]
        source = self.pick(lambda t: _is_float(t) and t.static_shape == (rows,))
        if source is not None and self.flip(0.7):
            mask = self.emit("gt", source, self.constant(TensorType((), _tt(source).element), splat=0.0))
        else:
            mask = self.constant(TensorType((rows,), i1))
        kept = self.emit_all("compress", mask, *operands, dim=f"rows{self.randint(0, 10**6)}")
        if _is_number(_tt(kept[0])):
            self.emit("reduce_sum", kept[0], axes=[0])


RECIPE_WEIGHTS = MappingProxyType({name: weight for name, (_, weight) in _RECIPES.items()})
"""Every recipe by name, with the relative weight with which it is chosen."""
RECIPE_NAMES = tuple(_RECIPES)
_PROBABILITIES = np.array(list(RECIPE_WEIGHTS.values())) / sum(RECIPE_WEIGHTS.values())


def pick_recipe(rng: np.random.Generator) -> str:
    """The name of a recipe drawn by weight."""
    return RECIPE_NAMES[int(rng.choice(len(RECIPE_NAMES), p=_PROBABILITIES))]
