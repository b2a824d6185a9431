"""Helpers shared by graph op declarations: dtype checks and elementwise declarers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...attributes import AttrSpec
from ...opdef import InferError, OpDef, define
from ...shapes import broadcast_shapes, expect_tensor
from ...types import FloatType, IndexType, IntegerType, ScalarType, TensorType, Type, i1

DTYPE_CLASSES: dict[str, Callable[[ScalarType], bool]] = {
    "any": lambda t: True,
    "float": lambda t: isinstance(t, FloatType),
    "int": lambda t: isinstance(t, (IntegerType, IndexType)) and not (isinstance(t, IntegerType) and t.is_bool),
    "bool": lambda t: isinstance(t, IntegerType) and t.is_bool,
    "intbool": lambda t: isinstance(t, (IntegerType, IndexType)),
    "number": lambda t: not (isinstance(t, IntegerType) and t.is_bool),
}

_CLASS_NAMES = {
    "float": "a float",
    "int": "an integer",
    "bool": "i1",
    "intbool": "an integer or i1",
    "number": "a number (not i1)",
    "any": "any",
}


def check_dtype(t: TensorType, cls: str, what: str = "operand") -> None:
    """InferError unless the element type of ``t`` belongs to dtype class ``cls``."""
    if not DTYPE_CLASSES[cls](t.element):
        raise InferError(f"{what} element type must be {_CLASS_NAMES[cls]}, got {t.element}")


def same_element(types: Sequence[TensorType], what: str = "operands") -> ScalarType:
    """The common element type of ``types``, or InferError when they differ."""
    elements = {t.element for t in types}
    if len(elements) > 1:
        shown = ", ".join(str(t.element) for t in types)
        raise InferError(f"{what} must have one element type, got {shown}")
    return types[0].element


def tensors(*types: Type | None) -> list[TensorType]:
    return [expect_tensor(t, f"operand #{i}") for i, t in enumerate(types)]


def unary(
    name: str,
    fn: Callable[..., np.ndarray],
    dtypes: str = "float",
    result_dtype: ScalarType | None = None,
    attrs: dict[str, AttrSpec] | None = None,
    doc: str = "",
) -> OpDef:
    """Declare an elementwise op of one operand; ``fn`` is its numpy semantics."""

    def infer(x: Type, **kw: Any) -> Type:
        (t,) = tensors(x)
        check_dtype(t, dtypes)
        return t.with_element(result_dtype) if result_dtype else t

    return define(
        f"graph.{name}",
        operands=("x",),
        attrs=attrs,
        infer=infer,
        reference=fn,
        traits=("pure", "elementwise"),
        doc=doc,
    )


def binary(
    name: str,
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
    dtypes: str = "number",
    result_dtype: ScalarType | None = None,
    commutative: bool = False,
    doc: str = "",
) -> OpDef:
    """Declare an elementwise op of two operands with numpy broadcasting."""

    def infer(lhs: Type, rhs: Type) -> Type:
        a, b = tensors(lhs, rhs)
        element = same_element([a, b])
        check_dtype(a, dtypes)
        return TensorType(broadcast_shapes(a.shape, b.shape), result_dtype or element)

    traits = ("pure", "elementwise") + (("commutative",) if commutative else ())
    return define(f"graph.{name}", operands=("lhs", "rhs"), infer=infer, reference=fn, traits=traits, doc=doc)


BOOL = i1
