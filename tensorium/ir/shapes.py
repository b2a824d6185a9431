"""Shape arithmetic shared by op type inference: broadcasting, axes, symbolic products."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .opdef import InferError
from .types import DYN, Dim, Sym, TensorType, Type


def expect_tensor(t: Type | None, what: str = "operand") -> TensorType:
    """``t`` as a tensor type, or an InferError naming ``what``."""
    if not isinstance(t, TensorType):
        raise InferError(f"{what} must be a tensor, got {t}")
    return t


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """The broadcast of two dimensions (numpy rules), or InferError when they cannot match."""
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            raise InferError(f"cannot broadcast dimensions {a} and {b}")
        return a
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    return a if a == b and a.name is not None else DYN


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """numpy-style broadcast of several shapes (right-aligned)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dim: Dim = 1
        for s in shapes:
            k = i - (rank - len(s))
            if k >= 0:
                try:
                    dim = broadcast_dim(dim, s[k])
                except InferError:
                    shown = " and ".join(_shape_str(x) for x in shapes)
                    raise InferError(f"shapes {shown} do not broadcast") from None
        out.append(dim)
    return tuple(out)


def _shape_str(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in 0..rank-1 (negative counts from the end), or InferError."""
    if not -rank <= axis < rank:
        raise InferError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> tuple[int, ...]:
    """Sorted, distinct, non-negative axes, or InferError on out-of-range or repeated axes."""
    singular = what[:-2] + "is" if what.endswith("axes") else what
    out = [normalize_axis(a, rank, singular) for a in axes]
    if len(set(out)) != len(out):
        raise InferError(f"{what} {list(axes)} repeat an axis")
    return tuple(sorted(out))


def dims_equal(a: Dim, b: Dim) -> bool | None:
    """True or False when known at compile time, None when it depends on run-time sizes."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, Sym) and isinstance(b, Sym) and a.name is not None and a == b:
        return True
    return None


def check_dims_match(a: Dim, b: Dim, what: str) -> Dim:
    """The more precise of two dims that must be equal, or InferError when they differ."""
    if dims_equal(a, b) is False:
        raise InferError(f"{what}: {a} != {b}")
    if isinstance(a, int) or (isinstance(a, Sym) and a.name is not None and not isinstance(b, int)):
        return a
    return b


def dim_product(dims: Sequence[Dim]) -> tuple[int, Counter[str], int]:
    """The product of dims as (static factor, multiset of the names it multiplies, count of anonymous dims);
    a product dim (``[8*batch]``) adds its factor and names."""
    static = 1
    names: Counter[str] = Counter()
    anonymous = 0
    for d in dims:
        if isinstance(d, int):
            static *= d
        elif d.name is None:
            anonymous += 1
        else:
            coefficient, factors = d.factors
            static *= coefficient
            names.update(factors)
    return static, names, anonymous


def leftover_dim(in_shape: Sequence[Dim], known: Sequence[Dim]) -> Dim:
    """The dim that, with the dims ``known``, holds as many elements as ``in_shape``: a static size, a named dim or
    a product of names and a static factor; ``?`` when a dim is anonymous, ``known`` multiplies a name that
    ``in_shape`` lacks, or the static sizes do not divide."""
    in_static, in_names, in_anonymous = dim_product(in_shape)
    out_static, out_names, out_anonymous = dim_product(known)
    if in_anonymous or out_anonymous or not out_names <= in_names or out_static == 0 or in_static % out_static:
        return DYN
    return Sym.product(in_static // out_static, (in_names - out_names).elements())


def solve_reshape(in_shape: Sequence[Dim], target: Sequence[int]) -> tuple[Dim, ...]:
    """The result shape of reshaping ``in_shape`` to ``target`` (numpy rules: one -1 inferred).

    With named symbolic inputs the -1 dim is what the static sizes leave over: a named dim, or a product of
    named dims and a static factor (``[batch]x[seq]x8`` to ``[-1, 8]`` gives ``[batch*seq]x8``); ``?`` when an
    input dim is anonymous or the static sizes do not divide.
    """
    if sum(1 for t in target if t == -1) > 1:
        raise InferError("reshape target has more than one -1")
    if any(t < -1 for t in target):
        raise InferError(f"reshape target {list(target)} has a negative size")
    in_static, in_names, anonymous = dim_product(in_shape)
    out_static = 1
    for t in target:
        if t != -1:
            out_static *= t
    symbolic = bool(in_names) or anonymous > 0
    if -1 not in target:
        if not symbolic and in_static != out_static:
            raise InferError(f"cannot reshape {_shape_str(in_shape)} ({in_static} elements) to {list(target)}")
        return tuple(target)
    if not symbolic:
        if out_static == 0 or in_static % out_static:
            if out_static == 0 and in_static == 0:
                raise InferError("cannot infer -1 in a reshape of zero elements")
            raise InferError(f"cannot reshape {_shape_str(in_shape)} ({in_static} elements) to {list(target)}")
        fill: Dim = in_static // out_static
    else:
        fill = leftover_dim(in_shape, [t for t in target if t != -1])
    return tuple(fill if t == -1 else t for t in target)
