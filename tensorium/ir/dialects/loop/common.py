"""Type checks shared by loop op declarations: scalars, indices, buffers and enclosing loops."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ...core import Operation
from ...opdef import InferError
from ...types import BufferType, FloatType, IndexType, IntegerType, QuantizedType, ScalarType, Type, index

SCALAR_CLASSES: dict[str, tuple[str, Callable[[ScalarType], bool]]] = {
    "any": ("a scalar", lambda t: True),
    "float": ("a float", lambda t: isinstance(t, FloatType)),
    "number": ("a number (not i1)", lambda t: not (isinstance(t, IntegerType) and t.is_bool)),
    "intbool": ("an integer or i1", lambda t: isinstance(t, (IntegerType, IndexType))),
}


def expect_scalar(t: Type, cls: str = "any", what: str = "operand") -> ScalarType:
    """``t`` as a scalar of class ``cls`` (see SCALAR_CLASSES), or an InferError naming ``what``."""
    if not isinstance(t, ScalarType) or isinstance(t, QuantizedType):
        raise InferError(f"{what} must be a scalar, got {t}")
    description, check = SCALAR_CLASSES[cls]
    if not check(t):
        raise InferError(f"{what} must be {description}, got {t}")
    return t


def same_scalar(types: Sequence[Type], cls: str = "any") -> ScalarType:
    """The one scalar type of ``types``, of class ``cls``; InferError when they differ or do not fit."""
    for i, t in enumerate(types):
        expect_scalar(t, what=f"operand #{i}")
    if len(set(types)) > 1:
        raise InferError(f"operands must have one type, got {', '.join(map(str, types))}")
    return expect_scalar(types[0], cls, "operands")


def expect_index(t: Type, what: str) -> None:
    """InferError unless ``t`` is ``index``."""
    if t != index:
        raise InferError(f"{what} must be an index, got {t}")


def expect_buffer(t: Type, what: str = "operand") -> BufferType:
    """``t`` as a buffer type, or an InferError naming ``what``."""
    if not isinstance(t, BufferType):
        raise InferError(f"{what} must be a buffer, got {t}")
    return t


def check_indices(buffer: BufferType, indices: Sequence[Type]) -> None:
    """InferError unless ``indices`` are one ``index`` per dimension of ``buffer``."""
    if len(indices) != buffer.rank:
        raise InferError(f"expected {buffer.rank} indices for {buffer}, got {len(indices)}")
    for i, t in enumerate(indices):
        expect_index(t, f"index #{i}")


def enclosing_loops(op: Operation) -> Iterator[Operation]:
    """The ``loop.for`` ops around ``op``, innermost first, up to the enclosing function."""
    parent = op.parent_op
    while parent is not None and parent.name != "func.func":
        if parent.name == "loop.for":
            yield parent
        parent = parent.parent_op
