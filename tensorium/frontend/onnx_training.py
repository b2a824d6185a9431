"""ONNX's training optimizers (domain ``ai.onnx.preview.training``): Adagrad, Adam and Momentum updates.

Each is an elementwise formula over a parameter, its gradient and its optimizer state, applied to
every (X, G, state...) group the node carries; the learning rate R and step count T are run-time
scalars, so the step-dependent terms (Adam's bias correction, Momentum's first step) are selected
with ``graph.where`` rather than decided at import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..ir.core import Value
from ..ir.dialects import graph
from .onnx_context import Node
from .onnx_ops import Results, cast, converts, element

_DOMAIN = "ai.onnx.preview.training"

Update = Callable[[Node, Value, Value, list[Value]], list[Value]]


def _groups(n: Node, update: Update, per_group: int) -> Results:
    """Apply ``update(node, r, t, [x, g, states...])`` to each group; outputs all new X, then each state."""
    inputs = n.inputs()
    count = (len(inputs) - 2) // per_group
    first = inputs[2]
    r, t = cast(inputs[0], element(first)), cast(inputs[1], element(first))
    results = [update(n, r, t, [inputs[2 + k * count + i] for k in range(per_group)]) for i in range(count)]
    return [results[i][k] for k in range(per_group - 1) for i in range(count)]


def _regularized(n: Node, x: Value, g: Value) -> Value:
    return graph.add(graph.mul(n.scalar(n.attr("norm_coefficient", 0.0), x), x), g)  # type: ignore[no-any-return]


def _adagrad(n: Node, r: Value, t: Value, group: Sequence[Value]) -> list[Value]:
    x, g, h = group
    rate = graph.div(r, graph.add(n.scalar(1.0, t), graph.mul(t, n.scalar(n.attr("decay_factor", 0.0), t))))
    g_reg = _regularized(n, x, g)
    h_new = graph.add(h, graph.mul(g_reg, g_reg))
    denom = graph.add(graph.sqrt(h_new), n.scalar(n.attr("epsilon", 0.0), x))
    return [graph.sub(x, graph.div(graph.mul(rate, g_reg), denom)), h_new]


def _adam(n: Node, r: Value, t: Value, group: Sequence[Value]) -> list[Value]:
    x, g, v, h = group
    alpha, beta = n.attr("alpha", 0.9), n.attr("beta", 0.999)
    g_reg = _regularized(n, x, g)
    v_new = graph.add(graph.mul(n.scalar(alpha, v), v), graph.mul(n.scalar(1 - alpha, g_reg), g_reg))
    h_new = graph.add(graph.mul(n.scalar(beta, h), h), graph.mul(n.scalar(1 - beta, g_reg), graph.mul(g_reg, g_reg)))
    denom = graph.add(graph.sqrt(h_new), n.scalar(n.attr("epsilon", 0.0), x))
    one = n.scalar(1.0, t)
    corrected = graph.div(
        graph.mul(r, graph.sqrt(graph.sub(one, graph.pow(n.scalar(beta, t), t)))),
        graph.sub(one, graph.pow(n.scalar(alpha, t), t)),
    )
    rate = graph.where(graph.gt(t, n.scalar(0.0, t)), corrected, r)
    x_new = graph.sub(x, graph.mul(rate, graph.div(v_new, denom)))
    return [graph.mul(n.scalar(1 - n.attr("norm_coefficient_post", 0.0), x), x_new), v_new, h_new]


def _momentum(n: Node, r: Value, t: Value, group: Sequence[Value]) -> list[Value]:
    x, g, v = group
    alpha = n.attr("alpha")
    g_reg = _regularized(n, x, g)
    beta = graph.where(graph.gt(t, n.scalar(0.0, t)), n.scalar(n.attr("beta"), t), n.scalar(1.0, t))
    v_new = graph.add(graph.mul(n.scalar(alpha, v), v), graph.mul(beta, g_reg))
    step = v_new if n.attr("mode", "standard") == "standard" else graph.add(g_reg, graph.mul(n.scalar(alpha, v), v_new))
    return [graph.sub(x, graph.mul(r, step)), v_new]


@converts(f"{_DOMAIN}.Adagrad")
def _adagrad_node(n: Node) -> Results:
    return _groups(n, _adagrad, 3)


@converts(f"{_DOMAIN}.Adam")
def _adam_node(n: Node) -> Results:
    return _groups(n, _adam, 4)


@converts(f"{_DOMAIN}.Momentum")
def _momentum_node(n: Node) -> Results:
    return _groups(n, _momentum, 3)
