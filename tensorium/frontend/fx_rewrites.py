"""Rewrites of the exported FX graph that keep named symbolic dims alive through the translation.

torch decomposes a linear layer on an N-d input into ``view(x, [-1, K])``, ``mm``/``addmm`` and a ``view``
back. With a symbolic batch the flat row count is an expression (``8*batch``) that Tensorium's types
cannot name, and the host could not size the intermediate buffers; :func:`unflatten_linear` gives the
matmul the N-d input instead (``graph.matmul`` broadcasts leading dims), so every dim stays a named one.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["unflatten_linear"]

_aten = torch.ops.aten
_VIEWS = (_aten.view.default, _aten._unsafe_view.default, _aten.reshape.default)


def _is_plain(size: Any) -> bool:
    """An int, or a SymInt that is a single symbol (a name the types can carry)."""
    return isinstance(size, int) or bool(size.node.expr.is_Symbol or size.node.expr.is_Integer)


def _shape(node: Any) -> tuple[Any, ...] | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def unflatten_linear(graph: Any) -> int:
    """Rewrite ``view(x, [-1, K]) -> mm|addmm -> view(back)`` into ``matmul(x, W) (+ bias)`` where the
    flattening merges a symbolic dim; returns how many were rewritten."""
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (_aten.mm.default, _aten.addmm.default):
            continue
        bias, flat, weight = (None, *node.args[:2]) if node.target == _aten.mm.default else node.args[:3]
        if node.target == _aten.addmm.default and (node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1):
            continue
        if not (isinstance(flat, torch.fx.Node) and flat.target in _VIEWS and len(flat.users) == 1):
            continue
        source, flat_shape, out_shape = flat.args[0], _shape(flat), _shape(node)
        source_shape = _shape(source)
        if source_shape is None or flat_shape is None or out_shape is None or all(map(_is_plain, flat_shape)):
            continue
        users = list(node.users)
        if len(users) != 1 or users[0].target not in _VIEWS:
            continue
        back = users[0]
        back_shape = _shape(back)
        if back_shape is None or len(back_shape) != len(source_shape) or not all(map(_is_plain, back_shape)):
            continue
        with graph.inserting_before(back):
            product = graph.call_function(_aten.matmul.default, (source, weight))
            product.meta = dict(back.meta)
            result = product
            if bias is not None:
                result = graph.call_function(_aten.add.Tensor, (product, bias))
                result.meta = dict(back.meta)
        back.replace_all_uses_with(result)
        for dead in (back, node, flat):
            graph.erase_node(dead)
        rewritten += 1
    return rewritten
