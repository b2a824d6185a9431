"""The op graph: use lists, rewiring, erasing, insertion points, builders and op declarations."""

from __future__ import annotations

import numpy as np
import pytest

import tensorium as tm
from tensorium.errors import VerifyError
from tensorium.ir import (
    Block,
    InsertionPoint,
    Operation,
    TensorType,
    f32,
    func_body,
    graph,
    i32,
    make_func,
    make_module,
    set_results,
)
from tensorium.ir.attributes import DenseAttr, FloatAttr, IntAttr
from tensorium.ir.opdef import define, lookup, registered_ops

T = TensorType((2, 3), f32)


def _func() -> tuple[Operation, Block]:
    func = make_func("main", [T, T], arg_names=["a", "b"])
    return func, func_body(func)


def test_builders_append_at_insertion_point_and_infer_types() -> None:
    _, block = _func()
    a, b = block.args
    with InsertionPoint(block):
        s = graph.add(a, b)
        r = graph.relu(s)
    assert [op.name for op in block.ops] == ["graph.add", "graph.relu"]
    assert s.type == T and r.type == T
    assert [u.owner for u in a.uses] == [block.ops[0]]
    assert s.users == [block.ops[1]]


def test_builder_outside_insertion_point_gives_detached_op() -> None:
    _, block = _func()
    a, b = block.args
    value = graph.mul(a, b)
    assert value.owner.parent is None
    assert not block.ops


def test_insertion_point_before_op() -> None:
    _, block = _func()
    a, b = block.args
    with InsertionPoint(block):
        last = graph.neg(a)
    with InsertionPoint.before_op(last.owner):
        first = graph.abs(b)
    assert [op.name for op in block.ops] == ["graph.abs", "graph.neg"]
    with InsertionPoint.after_op(first.owner):
        graph.exp(b)
    assert [op.name for op in block.ops] == ["graph.abs", "graph.exp", "graph.neg"]


def test_replace_all_uses_with_moves_every_use() -> None:
    _, block = _func()
    a, b = block.args
    with InsertionPoint(block):
        s = graph.add(a, a)
        t = graph.mul(s, a)
    a.replace_all_uses_with(b)
    assert not a.uses
    assert s.owner.operands == (b, b)
    assert t.owner.operands == (s, b)
    assert sorted(u.index for u in b.uses) == [0, 1, 1]


def test_set_operand_keeps_use_lists_right_for_repeated_operands() -> None:
    _, block = _func()
    a, b = block.args
    with InsertionPoint(block):
        s = graph.add(a, a)
    op = s.owner
    op.set_operand(1, b)
    assert [(u.owner, u.index) for u in a.uses] == [(op, 0)]
    assert [(u.owner, u.index) for u in b.uses] == [(op, 1)]


def test_erase_refuses_live_results_and_drops_uses() -> None:
    _, block = _func()
    a, b = block.args
    with InsertionPoint(block):
        s = graph.add(a, b)
        r = graph.relu(s)
    with pytest.raises(ValueError, match="still has uses"):
        s.owner.erase()
    r.owner.erase()
    s.owner.erase()
    assert not block.ops and not a.uses and not b.uses


def test_set_results_writes_return_and_signature() -> None:
    func, block = _func()
    a, b = block.args
    with InsertionPoint(block):
        c = graph.cast(a, dtype=i32)
    set_results(func, [c, b])
    assert (
        str(func.attributes["function_type"])
        == "(tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xi32>, tensor<2x3xf32>)"
    )
    tm.verify(make_module([func]))


def test_builder_checks_attributes_and_types() -> None:
    _, block = _func()
    a, _ = block.args
    with pytest.raises(VerifyError, match="unknown attribute 'aproximate' \\(did you mean 'approximate'\\?\\)"):
        graph.gelu(a, aproximate="tanh")
    with pytest.raises(VerifyError, match="attribute 'approximate': expected one of"):
        graph.gelu(a, approximate="fast")
    with pytest.raises(VerifyError, match="expected 2 operands, got 1"):
        graph.add(a)
    x = make_func("f", [TensorType((3,), i32)]).regions[0].block.args[0]
    with pytest.raises(VerifyError, match="operands must have one element type, got f32, i32"):
        graph.add(a, x)


def test_graph_namespace_names_ops_and_rejects_unknown() -> None:
    assert graph.and_ is lookup("graph.and")
    with pytest.raises(AttributeError, match="no op 'frobnicate'"):
        graph.frobnicate  # noqa: B018


def test_declaring_an_op_is_one_block() -> None:
    scale = define(
        "test_core.scale",
        operands=("x",),
        attrs={"factor": FloatAttr(2.0), "repeat": IntAttr(1)},
        infer=lambda x, factor, repeat: x,
        reference=lambda x, *, factor, repeat: x * factor**repeat,
        traits=("pure", "elementwise"),
        doc="x * factor ** repeat",
    )
    assert scale in registered_ops("test_core")
    func, block = _func()
    with InsertionPoint(block):
        y = scale(block.args[0], factor=3, repeat=2)
    assert y.owner.attributes == {"factor": 3.0, "repeat": 2}
    set_results(func, [y])
    module = make_module([func])
    text = tm.print_module(module)
    assert "test_core.scale %a {factor = 3.0, repeat = 2}" in text
    from tensorium.backends.interp import run

    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(run(tm.parse_module(text), [x, x])[0], 9 * x)
    with pytest.raises(ValueError, match="declared twice"):
        define("test_core.scale")


def test_dense_attr_equality_and_hash_follow_bytes() -> None:
    a = DenseAttr.of(np.array([1.0, 2.0], np.float32))
    b = DenseAttr.of(np.array([1.0, 2.0], np.float32))
    c = DenseAttr.of(np.array([1.0, 2.0], np.float64))
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert DenseAttr.of(np.array([np.nan], np.float32)) == DenseAttr.of(np.array([np.nan], np.float32))
    assert not DenseAttr.of(np.array([0.0, -0.0], np.float32)).is_splat
    with pytest.raises(ValueError, match="read-only"):
        a.array[0] = 5
