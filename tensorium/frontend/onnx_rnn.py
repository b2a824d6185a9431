"""ONNX RNN, GRU and LSTM, unrolled over the (static) sequence length into matmuls and elementwise ops.

Each direction projects the whole input sequence once (``X @ W^T + biases``), then steps through
time: the recurrent matmul, the gates of the cell kind and its activations (any of ONNX's list,
with ``activation_alpha``/``beta``, ``clip``). ``sequence_lens`` becomes a mask per step: a batch
entry past its length keeps its state and outputs zeros, which also makes a reverse pass start at
each entry's own last element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.core import Value
from ..ir.dialects import graph
from ..ir.types import i64
from .onnx_context import ConversionError, Node
from .onnx_ops import Results, cast, converts, element, static_dims, take

Activation = Callable[[Node, Value, float, float], Value]


def _scaled(n: Node, x: Value, factor: float) -> Value:
    return graph.mul(x, n.scalar(factor, x))  # type: ignore[no-any-return]


_ACTIVATIONS: dict[str, tuple[Activation, tuple[float, ...]]] = {
    "relu": (lambda n, x, a, b: graph.relu(x), ()),
    "tanh": (lambda n, x, a, b: graph.tanh(x), ()),
    "sigmoid": (lambda n, x, a, b: graph.sigmoid(x), ()),
    "affine": (lambda n, x, a, b: graph.add(_scaled(n, x, a), n.scalar(b, x)), (1.0, 0.0)),
    "leakyrelu": (
        lambda n, x, a, b: graph.where(graph.lt(x, n.scalar(0.0, x)), _scaled(n, x, a), x),
        (0.01,),
    ),
    "thresholdedrelu": (
        lambda n, x, a, b: graph.where(graph.gt(x, n.scalar(a, x)), x, n.scalar(0.0, x)),
        (1.0,),
    ),
    "scaledtanh": (lambda n, x, a, b: _scaled(n, graph.tanh(_scaled(n, x, b)), a), (1.0, 1.0)),
    "hardsigmoid": (
        lambda n, x, a, b: graph.clamp(graph.add(_scaled(n, x, a), n.scalar(b, x)), min=0.0, max=1.0),
        (0.2, 0.5),
    ),
    "elu": (
        lambda n, x, a, b: graph.where(
            graph.lt(x, n.scalar(0.0, x)), _scaled(n, graph.sub(graph.exp(x), n.scalar(1.0, x)), a), x
        ),
        (1.0,),
    ),
    "softsign": (lambda n, x, a, b: graph.div(x, graph.add(n.scalar(1.0, x), graph.abs(x))), ()),
    "softplus": (lambda n, x, a, b: graph.log(graph.add(n.scalar(1.0, x), graph.exp(x))), ()),
}

_CELLS = {"RNN": (1, ("Tanh",)), "GRU": (3, ("Sigmoid", "Tanh")), "LSTM": (4, ("Sigmoid", "Tanh", "Tanh"))}


@dataclass
class Cell:
    """One direction's weights and activations; ``step`` advances the state by one time step."""

    n: Node
    kind: str
    w: Value  # G*H x I
    r: Value  # G*H x H
    bias_w: Value | None  # G*H
    bias_r: Value | None  # G*H
    peephole: Value | None  # 3*H (LSTM: input, output, forget)
    activations: list[Callable[[Value], Value]]
    hidden: int

    def gate(self, v: Value, i: int) -> Value:
        """Gate ``i`` (a slice of width H along the last axis) of ``v``."""
        h = self.hidden
        return graph.slice(v, starts=(i * h,), ends=((i + 1) * h,), axes=(-1,))  # type: ignore[no-any-return]

    def clip(self, v: Value) -> Value:
        limit = self.n.attr("clip")
        return v if limit is None else graph.clamp(v, min=-float(limit), max=float(limit))  # type: ignore[no-any-return]

    def step(self, x_proj: Value, h: Value, c: Value | None) -> tuple[Value, Value | None]:
        """(H, C) after one step; ``x_proj`` is X_t @ W^T plus the input bias."""
        f = self.activations
        rec = graph.matmul(h, self.r, transpose_b=True)
        if self.kind == "RNN":
            return f[0](self.clip(graph.add(x_proj, self.with_r_bias(rec)))), None
        if self.kind == "GRU":
            z = f[0](self.clip(graph.add(self.gate(x_proj, 0), self.gate(self.with_r_bias(rec), 0))))
            r = f[0](self.clip(graph.add(self.gate(x_proj, 1), self.gate(self.with_r_bias(rec), 1))))
            if self.n.attr("linear_before_reset", 0):
                candidate = graph.mul(r, self.gate(self.with_r_bias(rec), 2))
            else:
                r_h = graph.matmul(graph.mul(r, h), self.r_gate(2), transpose_b=True)
                candidate = r_h if self.bias_r is None else graph.add(r_h, self.gate(self.bias_r, 2))
            hh = f[1](self.clip(graph.add(self.gate(x_proj, 2), candidate)))
            one = self.n.scalar(1.0, z)
            return graph.add(graph.mul(graph.sub(one, z), hh), graph.mul(z, h)), None
        assert c is not None
        pre = graph.add(x_proj, self.with_r_bias(rec))
        p = self.peephole
        gi, go, gf, gc = (self.gate(pre, k) for k in range(4))
        if p is not None:
            gi = graph.add(gi, graph.mul(self.gate(p, 0), c))
            gf = graph.add(gf, graph.mul(self.gate(p, 2), c))
        i = f[0](self.clip(gi))
        forget = graph.sub(self.n.scalar(1.0, i), i) if self.n.attr("input_forget", 0) else f[0](self.clip(gf))
        c_new = graph.add(graph.mul(forget, c), graph.mul(i, f[1](self.clip(gc))))
        if p is not None:
            go = graph.add(go, graph.mul(self.gate(p, 1), c_new))
        o = f[0](self.clip(go))
        return graph.mul(o, f[2](c_new)), c_new

    def r_gate(self, i: int) -> Value:
        """Rows of R for gate ``i`` (H x H)."""
        h = self.hidden
        return graph.slice(self.r, starts=(i * h,), ends=((i + 1) * h,), axes=(0,))  # type: ignore[no-any-return]

    def with_r_bias(self, v: Value) -> Value:
        return v if self.bias_r is None else graph.add(v, self.bias_r)  # type: ignore[no-any-return]


def _bind(fn: Activation, n: Node, a: float, b: float) -> Callable[[Value], Value]:
    return lambda v: fn(n, v, a, b)


def _activations(n: Node, kind: str, directions: int) -> list[list[Callable[[Value], Value]]]:
    defaults = _CELLS[kind][1]
    names = list(n.attr("activations", defaults * directions))
    if len(names) != len(defaults) * directions:
        raise ConversionError(f"{kind} needs {len(defaults) * directions} activations, got {len(names)}")
    alphas, betas = list(n.attr("activation_alpha", ())), list(n.attr("activation_beta", ()))
    built: list[Callable[[Value], Value]] = []
    for name in names:
        found = _ACTIVATIONS.get(name.lower())
        if found is None:
            raise ConversionError(f"activation '{name}' is not supported")
        fn, params = found
        a = alphas.pop(0) if params and alphas else (params[0] if params else 0.0)
        b = betas.pop(0) if len(params) > 1 and betas else (params[1] if len(params) > 1 else 0.0)
        built.append(_bind(fn, n, a, b))
    per = len(defaults)
    return [built[d * per : (d + 1) * per] for d in range(directions)]


def _state(n: Node, index: int, d: int, batch: int, hidden: int, like: Value) -> Value:
    given = n.optional(index)
    if given is None:
        return n.constant(np.zeros((batch, hidden)), element(like))
    if n.attr("layout", 0):
        given = graph.transpose(given, perm=(1, 0, 2))
    return take(given, 0, d)


@converts("RNN", "GRU", "LSTM")
def _recurrent(n: Node) -> Results:
    kind = n.op_type
    gates = _CELLS[kind][0]
    layout = n.attr("layout", 0)
    x = n.input(0)
    if layout:
        x = graph.transpose(x, perm=(1, 0, 2))
    steps, batch, _ = static_dims(x, kind)
    hidden = int(n.attr("hidden_size", static_dims(n.input(2), kind)[-1]))
    direction = n.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ConversionError(f"direction '{direction}' is not supported")
    directions = 2 if direction == "bidirectional" else 1
    activations = _activations(n, kind, directions)
    lengths = n.optional(4)
    masks = None
    if lengths is not None:
        positions = n.constant(np.arange(steps, dtype=np.int64).reshape(steps, 1, 1))
        masks = graph.lt(positions, graph.reshape(cast(lengths, i64), shape=(1, batch, 1)))
    ys, hs, cs = [], [], []
    for d in range(directions):
        bias = take(n.input(3), 0, d) if n.has(3) else None
        cell = Cell(
            n,
            kind,
            take(n.input(1), 0, d),
            take(n.input(2), 0, d),
            None if bias is None else graph.slice(bias, starts=(0,), ends=(gates * hidden,), axes=(0,)),
            None
            if bias is None
            else graph.slice(bias, starts=(gates * hidden,), ends=(2 * gates * hidden,), axes=(0,)),
            take(n.input(7), 0, d) if kind == "LSTM" and n.has(7) else None,
            activations[d],
            hidden,
        )
        projected = graph.matmul(x, cell.w, transpose_b=True)
        if cell.bias_w is not None:
            projected = graph.add(projected, cell.bias_w)
        h = _state(n, 5, d, batch, hidden, x)
        c = _state(n, 6, d, batch, hidden, x) if kind == "LSTM" else None
        reverse = direction == "reverse" or d == 1
        outputs: list[Value | None] = [None] * steps
        for t in reversed(range(steps)) if reverse else range(steps):
            x_t = take(projected, 0, t)
            h_new, c_new = cell.step(x_t, h, c)
            if masks is None:
                h, c, y = h_new, c_new, h_new
            else:
                m = take(masks, 0, t)
                h = graph.where(m, h_new, h)
                if c is not None and c_new is not None:
                    c = graph.where(m, c_new, c)
                y = graph.where(m, h_new, n.scalar(0.0, h_new))
            outputs[t] = graph.unsqueeze(y, axes=(0,))
        ys.append(graph.unsqueeze(graph.concat([o for o in outputs if o is not None], axis=0), axes=(1,)))
        hs.append(graph.unsqueeze(h, axes=(0,)))
        if c is not None:
            cs.append(graph.unsqueeze(c, axes=(0,)))
    y_all, h_all = graph.concat(ys, axis=1), graph.concat(hs, axis=0)
    c_all = graph.concat(cs, axis=0) if cs else None
    if layout:
        y_all = graph.transpose(y_all, perm=(2, 0, 1, 3))
        h_all = graph.transpose(h_all, perm=(1, 0, 2))
        c_all = None if c_all is None else graph.transpose(c_all, perm=(1, 0, 2))
    results: Sequence[Value | None] = [y_all, h_all] + ([c_all] if kind == "LSTM" else [])
    return results
