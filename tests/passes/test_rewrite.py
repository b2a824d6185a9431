"""The pattern rewriter (use lists, listeners) and the greedy driver (fixpoint, dead ops, termination)."""

from __future__ import annotations

import pytest

from tensorium.errors import Location, PassError
from tensorium.ir import Block, InsertionPoint, Operation, TensorType, f32, func_body, graph, make_func, make_module
from tensorium.ir.dialects.builtin import functions, set_results
from tensorium.ir.rewrite import (
    PatternRewriter,
    RewriteListener,
    RewritePattern,
    apply_patterns_greedily,
    canonicalization_patterns,
    is_trivially_dead,
    pattern,
)

T = TensorType((2, 3), f32)


class Recorder(RewriteListener):
    """Remembers every notification as (event, op name)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def op_inserted(self, op: Operation) -> None:
        self.events.append(("inserted", op.name))

    def op_modified(self, op: Operation) -> None:
        self.events.append(("modified", op.name))

    def op_erased(self, op: Operation) -> None:
        self.events.append(("erased", op.name))


def _program() -> tuple[Operation, Block]:
    """@main(a, b) { s = add(a, b); n = neg(s); r = relu(n); return r, s }"""
    func = make_func("main", [T, T], arg_names=["a", "b"])
    block = func_body(func)
    a, b = block.args
    with InsertionPoint(block):
        s = graph.add(a, b)
        n = graph.neg(s)
        r = graph.relu(n)
    set_results(func, [r, s])
    return make_module([func]), block


def test_replace_op_rewires_uses_and_erases() -> None:
    _, block = _program()
    add, neg, relu, ret = block.ops
    recorder = Recorder()
    rewriter = PatternRewriter(recorder)
    rewriter.replace_op(neg, [add.result])
    assert [op.name for op in block.ops] == ["graph.add", "graph.relu", "func.return"]
    assert relu.operands[0] is add.result
    assert [(u.owner.name, u.index) for u in add.result.uses] == [("func.return", 1), ("graph.relu", 0)]
    assert neg.parent is None and not neg.operands
    assert recorder.events == [("modified", "graph.relu"), ("modified", "graph.neg"), ("erased", "graph.neg")]
    assert rewriter.changed
    assert ret.operands == (relu.result, add.result)


def test_create_before_infers_types_and_takes_the_anchor_location() -> None:
    _, block = _program()
    add, neg, _, _ = block.ops
    neg.loc = Location(3, 5)
    recorder = Recorder()
    rewriter = PatternRewriter(recorder)
    new = rewriter.create_before(neg, "graph.transpose", [add.result], {"perm": [1, 0]})
    assert block.ops[1] is new
    assert new.result.type == TensorType((3, 2), f32)
    assert new.attributes["perm"] == (1, 0)
    assert new.loc == Location(3, 5)
    assert add.result.users == [neg, block.ops[-1], new]
    assert recorder.events == [("inserted", "graph.transpose")]


def test_replace_op_with_new_and_set_operand_keep_use_lists() -> None:
    _, block = _program()
    add, neg, relu, _ = block.ops
    a, b = block.args
    rewriter = PatternRewriter()
    new = rewriter.replace_op_with_new(add, "graph.sub", [a, b])
    assert new.name == "graph.sub" and add.parent is None
    assert neg.operands[0] is new.result
    assert [u.owner for u in a.uses] == [new] and [u.owner for u in b.uses] == [new]
    rewriter.set_operand(relu, 0, a)
    assert [u.owner for u in a.uses] == [new, relu]
    assert not neg.result.uses


def test_set_attr_normalizes_and_notifies() -> None:
    _, block = _program()
    add, neg, _, _ = block.ops
    recorder = Recorder()
    rewriter = PatternRewriter(recorder)
    transpose = rewriter.create_before(neg, "graph.transpose", [add.result], {"perm": [1, 0]})
    rewriter.set_attr(transpose, "perm", [0, 1])
    assert transpose.attributes["perm"] == (0, 1)
    assert recorder.events[-1] == ("modified", "graph.transpose")


def test_rewriter_rejects_type_changes_and_erasing_used_ops() -> None:
    _, block = _program()
    add, neg, _, _ = block.ops
    other = graph.transpose(add.result, perm=[1, 0])
    rewriter = PatternRewriter()
    mismatch = r"cannot replace a value of type tensor<2x3xf32> with one of type tensor<3x2xf32>"
    with pytest.raises(ValueError, match=mismatch):
        rewriter.replace_op(neg, [other])
    with pytest.raises(ValueError, match=r"cannot erase graph.add: result #0 still has uses"):
        rewriter.erase_op(add)
    with pytest.raises(ValueError, match=r"graph.neg has 1 results but 2 replacements were given"):
        rewriter.replace_op(neg, [add.result, add.result])
    with pytest.raises(ValueError, match=r"cannot create unknown op 'graph.nope'"):
        rewriter.create_before(neg, "graph.nope", [])
    assert not rewriter.changed


def test_erase_op_notifies_nested_ops_first() -> None:
    module, _ = _program()
    recorder = Recorder()
    func = module.regions[0].block.ops[0]
    PatternRewriter(recorder).erase_op(func)
    assert recorder.events == [
        ("erased", "func.return"),
        ("erased", "graph.relu"),
        ("erased", "graph.neg"),
        ("erased", "graph.add"),
        ("erased", "func.func"),
    ]
    assert not module.regions[0].block.ops


@pattern("graph.neg")
def neg_to_abs(op: Operation, rewriter: PatternRewriter) -> bool:
    rewriter.replace_op_with_new(op, "graph.abs", op.operands)
    return True


@pattern("graph.abs")
def abs_of_abs(op: Operation, rewriter: PatternRewriter) -> bool:
    inner = op.operands[0].defining_op()
    if inner is None or inner.name != "graph.abs":
        return False
    rewriter.replace_op(op, [inner.result])
    return True


def test_driver_reaches_a_fixpoint_and_revisits_users() -> None:
    module, block = _program()
    with InsertionPoint(block, block.ops[-1]):
        twice = graph.neg(graph.neg(block.args[0]))
    set_results(functions(module)[0], [twice])
    assert apply_patterns_greedily(module, [neg_to_abs, abs_of_abs])
    names = [op.name for op in block.ops]
    assert names == ["graph.abs", "func.return"], "dead add/neg/relu are erased; abs(abs(a)) is one abs"
    assert block.ops[0].operands[0] is block.args[0]
    assert not apply_patterns_greedily(module, [neg_to_abs, abs_of_abs])


@pattern("graph.relu")
def relu_of_sole_neg(op: Operation, rewriter: PatternRewriter) -> bool:
    """relu(neg(x)) -> abs(x), only when the neg has no other use (as fold-batch-norm wants of its conv)."""
    inner = op.operands[0].defining_op()
    if inner is None or inner.name != "graph.neg" or len(inner.result.uses) != 1:
        return False
    rewriter.replace_op_with_new(op, "graph.abs", inner.operands)
    return True


def test_driver_revisits_the_other_users_of_an_erased_ops_operands() -> None:
    """The relu is tried while its neg has a second, dead use that comes later; erasing that use makes the
    pattern fire, in the same run (found by the fuzzer as fold-batch-norm not reaching a fixpoint)."""
    func = make_func("main", [T], arg_names=["a"])
    block = func_body(func)
    with InsertionPoint(block):
        n = graph.neg(block.args[0])
        r = graph.relu(n)
        graph.sin(n)
    set_results(func, [r])
    module = make_module([func])
    assert apply_patterns_greedily(module, [relu_of_sole_neg])
    assert [op.name for op in block.ops] == ["graph.abs", "func.return"]


def test_driver_keeps_ops_with_effects_and_erases_dead_pure_ops() -> None:
    module, block = _program()
    ret = block.ops[-1]
    PatternRewriter().set_operand(ret, 0, block.args[0])
    assert is_trivially_dead(block.ops[2]) and not is_trivially_dead(ret)
    assert apply_patterns_greedily(module, [])
    assert [op.name for op in block.ops] == ["graph.add", "func.return"]


def test_higher_benefit_pattern_wins_and_generic_patterns_see_every_op() -> None:
    module, block = _program()
    seen: list[str] = []

    @pattern(benefit=5)
    def record(op: Operation, rewriter: PatternRewriter) -> bool:
        seen.append(op.name)
        return False

    @pattern("graph.neg", benefit=10)
    def neg_to_exp(op: Operation, rewriter: PatternRewriter) -> bool:
        rewriter.replace_op_with_new(op, "graph.exp", op.operands)
        return True

    assert apply_patterns_greedily(module, [record, neg_to_abs, neg_to_exp])
    assert [op.name for op in block.ops] == ["graph.add", "graph.exp", "graph.relu", "func.return"]
    assert set(seen) == {"func.func", "graph.add", "graph.exp", "graph.relu", "func.return"}
    assert "graph.neg" not in seen, "the neg pattern of higher benefit fired first"


@pattern("graph.sin")
def sin_to_cos(op: Operation, rewriter: PatternRewriter) -> bool:
    rewriter.replace_op_with_new(op, "graph.cos", op.operands)
    return True


@pattern("graph.cos")
def cos_to_sin(op: Operation, rewriter: PatternRewriter) -> bool:
    rewriter.replace_op_with_new(op, "graph.sin", op.operands)
    return True


def test_ping_pong_patterns_raise_naming_them() -> None:
    func = make_func("main", [T])
    block = func_body(func)
    with InsertionPoint(block):
        y = graph.sin(block.args[0])
    set_results(func, [y])
    module = make_module([func])
    with pytest.raises(PassError) as info:
        apply_patterns_greedily(module, [sin_to_cos, cos_to_sin], max_iterations=3)
    assert str(info.value) == (
        "pattern rewriting did not converge after 10 rewrites; "
        "most applied: 'sin_to_cos' (5 times), 'cos_to_sin' (5 times)"
    )


def test_canonical_patterns_must_name_their_ops() -> None:
    with pytest.raises(ValueError, match="canonicalization pattern 'anything' must name its root ops"):

        @pattern(canonical=True)
        def anything(op: Operation, rewriter: PatternRewriter) -> bool:
            return False


def test_graph_dialect_registers_its_canonicalizations() -> None:
    names = {p.name for p in canonicalization_patterns()}
    assert {"add_zero", "mul_one", "mul_zero", "sub_self", "neg_neg", "pow_small_integer", "transpose_chain"} <= names
    assert "cast_chain" in names
    roots = {name for p in canonicalization_patterns() for name in p.op_names}
    assert {"graph.reshape", "graph.squeeze", "graph.broadcast_to", "graph.slice"} <= roots


@pattern("graph.neg")
def sneaky(op: Operation, rewriter: PatternRewriter) -> bool:
    rewriter.set_attr(op, "note", 1)
    return False


@pattern("graph.neg")
def boastful(op: Operation, rewriter: PatternRewriter) -> bool:
    return True


@pytest.mark.parametrize(
    ("pat", "message"),
    [
        (sneaky, "pattern 'sneaky' changed the IR but returned False"),
        (boastful, "pattern 'boastful' returned True but changed nothing"),
    ],
)
def test_patterns_must_report_what_they_did(pat: RewritePattern, message: str) -> None:
    module, _ = _program()
    with pytest.raises(PassError, match=f"^{message}$"):
        apply_patterns_greedily(module, [pat])
