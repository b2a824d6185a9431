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

from collections.abc import Sequence

import numpy as np

from ..ir.builder import InsertionPoint, current_insertion_point
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, lookup_func, make_func, make_module, set_results
from ..ir.types import TensorType, f32, i32
from .builder import ELEMENTS, GenConfig, _in_layout, _is_constant, random_array
from .recipes import _RECIPES, RECIPE_NAMES, RECIPE_WEIGHTS, Recipes, pick_recipe

__all__ = [
    "ELEMENTS",
    "PASS_PRODUCED_OPS",
    "RECIPE_NAMES",
    "RECIPE_WEIGHTS",
    "GenConfig",
    "apply_random_recipe",
    "apply_recipe",
    "generate_module",
    "pick_recipe",
    "random_array",
    "random_inputs",
]

PASS_PRODUCED_OPS = frozenset(
    {
        "graph.fused",  # the fuse pass's kernel groups: a region of ops the recipes already emit one by one
        "graph.yield",  # only ends the body of a graph.fused
        "graph.matmul_packed",  # pack-weights' form of a matmul by a constant f32 weight, panels laid out for the CPU
    }
)
"""Graph ops no recipe emits, because only passes make them."""


class _ProgramGenerator(Recipes):
    """Recipes run one after another on a new function whose inputs are random tensors and images."""

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


def apply_recipe(
    name: str, rng: np.random.Generator, values: Sequence[Value], config: GenConfig | None = None
) -> list[Value]:
    """Run recipe ``name`` at the current insertion point, reading only ``values`` (which must dominate
    it); returns the values it made that later recipes may read (some intermediates are left out).
    A recipe that finds nothing to work on may emit nothing."""
    if current_insertion_point() is None:
        raise RuntimeError("apply_recipe needs an active InsertionPoint")
    gen = Recipes(rng, config if config is not None else GenConfig(), values)
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
    return _ProgramGenerator(np.random.default_rng(seed), cfg).build()


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
