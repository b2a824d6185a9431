"""ATen ops whose result sizes depend on the data: nonzero, masked_select, unique, unique_consecutive.

Registered into the converter table of :mod:`.pytorch_ops` on import. Each becomes a ``graph.compress``
(:mod:`.data_dependent`) whose run-time dim takes the name of torch.export's unbacked symbol (``u0``), so
the shapes of later nodes, which name the same symbol, match it.
"""

from __future__ import annotations

from typing import Any

from ..ir.core import Value
from ..ir.types import Sym, i64
from . import data_dependent
from .pytorch_ops import Context, ConversionError, converts

__all__: list[str] = []


def _dim_name(cx: Context, index: int | None = None) -> str:
    """The name of the run-time leading dim of the node's (``index``-th) result: torch's symbol, or a fresh one."""
    d = cx.out_dims(index)[0]
    if isinstance(d, Sym) and d.name is not None:
        return d.name
    assert cx.node is not None
    return f"{cx.node.name}_rows"


def _built(what: str, build: Any, *args: Any) -> Any:
    try:
        return build(*args)
    except ValueError as e:
        raise ConversionError(f"{what}: {e}") from None


@converts("aten.nonzero.default", "aten.argwhere.default")
def _nonzero(cx: Context, x: Value) -> Value:
    return _built("nonzero", data_dependent.nonzero, x, _dim_name(cx))  # type: ignore[no-any-return]


@converts("aten.masked_select.default")
def _masked_select(cx: Context, x: Value, mask: Value) -> Value:
    return _built("masked_select", data_dependent.masked_select, x, mask, _dim_name(cx))  # type: ignore[no-any-return]


def _unique_results(cx: Context, built: tuple[Value, Value, Value], inverse: bool, counts: bool) -> tuple[Any, ...]:
    """The three results torch gives, an empty i64 tensor for each one not asked for."""
    values, positions, how_many = built
    empty = cx.const([], i64)
    return values, positions if inverse else empty, how_many if counts else empty


@converts("aten._unique2.default")
def _unique2(
    cx: Context, x: Value, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False
) -> tuple[Any, ...]:
    built = _built("unique", data_dependent.unique, x, _dim_name(cx, 0))
    return _unique_results(cx, built, return_inverse, return_counts)


@converts("aten.unique_consecutive.default")
def _unique_consecutive(
    cx: Context, x: Value, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> tuple[Any, ...]:
    if dim is not None:
        raise ConversionError("unique_consecutive along a dim is not supported (only over all elements)")
    built = _built("unique_consecutive", data_dependent.unique_consecutive, x, _dim_name(cx, 0))
    return _unique_results(cx, built, return_inverse, return_counts)
