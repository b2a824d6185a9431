"""The pattern rewriter and the one greedy pattern driver.

Every change a pattern makes goes through a :class:`PatternRewriter`, which keeps use lists right
and tells its listener what happened; :func:`apply_patterns_greedily` listens to re-visit exactly
the ops a change may have made rewritable, and applies patterns until none fires.

    @pattern("graph.neg")
    def neg_of_neg(op: Operation, rewriter: PatternRewriter) -> bool:
        inner = op.operands[0].defining_op()
        if inner is None or inner.name != "graph.neg":
            return False
        rewriter.replace_op(op, inner.operands)
        return True
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PassError
from .attributes import normalize_attr
from .core import Operation, Value
from .opdef import lookup


class RewriteListener:
    """Hears about every change a :class:`PatternRewriter` makes; the default ignores them."""

    def op_inserted(self, op: Operation) -> None:
        """``op`` was just inserted into a block."""

    def op_modified(self, op: Operation) -> None:
        """An operand, an attribute or the uses of a result of ``op`` just changed."""

    def op_erased(self, op: Operation) -> None:
        """``op`` is about to be erased (its operands are still attached)."""


class PatternRewriter:
    """The only way patterns and passes change IR: creates, replaces, erases and updates ops."""

    def __init__(self, listener: RewriteListener | None = None):
        self.listener = listener if listener is not None else RewriteListener()
        self.changed = False

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        """Insert the detached ``op`` right before ``anchor``."""
        if anchor.parent is None:
            raise ValueError(f"cannot insert before {anchor.name}: it is not in a block")
        anchor.parent.insert_before(anchor, op)
        self.changed = True
        for inner in op.walk():
            self.listener.op_inserted(inner)
        return op

    def create_before(
        self,
        anchor: Operation,
        name: str,
        operands: Sequence[Value],
        attrs: dict[str, Any] | None = None,
    ) -> Operation:
        """Build op ``name`` (result types inferred) right before ``anchor``, at ``anchor``'s location."""
        opdef = lookup(name)
        if opdef is None:
            raise ValueError(f"cannot create unknown op '{name}'")
        return self.insert_before(anchor, opdef.build(list(operands), attrs, loc=anchor.loc))

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        """Make every user of ``old`` use ``new``; the users count as modified."""
        if old is new:
            return
        if old.type != new.type:
            raise ValueError(f"cannot replace a value of type {old.type} with one of type {new.type}")
        users = old.users
        old.replace_all_uses_with(new)
        if users:
            self.changed = True
        for user in users:
            self.listener.op_modified(user)
        self._uses_dropped(old)

    def replace_op(self, op: Operation, values: Sequence[Value]) -> None:
        """Replace every use of ``op``'s results with ``values`` (one each, same types), then erase ``op``."""
        if len(values) != len(op.results):
            raise ValueError(f"{op.name} has {len(op.results)} results but {len(values)} replacements were given")
        for result, value in zip(op.results, values):
            self.replace_all_uses_with(result, value)
        self.erase_op(op)

    def replace_op_with_new(
        self,
        op: Operation,
        name: str,
        operands: Sequence[Value],
        attrs: dict[str, Any] | None = None,
    ) -> Operation:
        """Build op ``name`` before ``op`` and replace ``op`` with its results."""
        new = self.create_before(op, name, operands, attrs)
        self.replace_op(op, new.results)
        return new

    def erase_op(self, op: Operation) -> None:
        """Erase ``op`` and everything nested in it; its results must be unused."""
        for result in op.results:
            if result.uses:
                raise ValueError(f"cannot erase {op.name}: result #{result.index} still has uses")
        for inner in reversed(list(op.walk())):
            self.listener.op_erased(inner)
        op.erase()
        self.changed = True

    def set_operand(self, op: Operation, index: int, value: Value) -> None:
        """Make operand ``index`` of ``op`` be ``value``."""
        old = op.operands[index]
        op.set_operand(index, value)
        self.changed = True
        self.listener.op_modified(op)
        self._uses_dropped(old)

    def _uses_dropped(self, value: Value) -> None:
        producer = value.defining_op()
        if producer is not None and producer.parent is not None:
            self.listener.op_modified(producer)

    def set_attr(self, op: Operation, key: str, value: Any) -> None:
        """Set attribute ``key`` of ``op`` (normalized like a builder argument)."""
        op.attributes[key] = normalize_attr(value)
        self.changed = True
        self.listener.op_modified(op)


PatternFn = Callable[[Operation, PatternRewriter], bool]


@dataclass(frozen=True)
class RewritePattern:
    """A rewrite rooted at ops named in ``op_names`` (every op when empty).

    ``fn(op, rewriter)`` changes the IR only through ``rewriter`` and returns True when it did.
    """

    name: str
    op_names: tuple[str, ...]
    fn: PatternFn
    benefit: int = 1

    def __call__(self, op: Operation, rewriter: PatternRewriter) -> bool:
        return self.fn(op, rewriter)


def pattern(*op_names: str, benefit: int = 1, canonical: bool = False) -> Callable[[PatternFn], RewritePattern]:
    """Decorate ``fn(op, rewriter) -> bool`` as a pattern for ops ``op_names`` (all ops when none).

    ``canonical=True`` also registers it as a canonicalization of those ops.
    """

    def wrap(fn: PatternFn) -> RewritePattern:
        pat = RewritePattern(fn.__name__, tuple(op_names), fn, benefit)
        if canonical:
            if not op_names:
                raise ValueError(f"canonicalization pattern '{pat.name}' must name its root ops")
            _CANONICAL.append(pat)
        return pat

    return wrap


_CANONICAL: list[RewritePattern] = []


def canonicalization_patterns() -> list[RewritePattern]:
    """Every registered canonicalization pattern, in registration order."""
    return list(_CANONICAL)


class _Worklist(RewriteListener):
    """Ops waiting to be visited, each at most once; erased ops leave, the producers and other users of
    their operands come back."""

    def __init__(self) -> None:
        self.queue: deque[Operation] = deque()
        self.present: dict[int, Operation] = {}

    def push(self, op: Operation) -> None:
        if id(op) not in self.present:
            self.present[id(op)] = op
            self.queue.append(op)

    def pop(self) -> Operation | None:
        while self.queue:
            op = self.queue.popleft()
            if self.present.get(id(op)) is op:
                del self.present[id(op)]
                return op
        return None

    def op_inserted(self, op: Operation) -> None:
        self.push(op)

    def op_modified(self, op: Operation) -> None:
        self.push(op)
        for result in op.results:
            for user in result.users:
                self.push(user)
        parent = op.parent_op
        if parent is not None and op.has_trait("terminator"):  # what a region gives changed: its op may simplify
            self.push(parent)

    def op_erased(self, op: Operation) -> None:
        self.present.pop(id(op), None)
        for operand in op.operands:
            producer = operand.defining_op()
            if producer is not None:
                self.push(producer)
            for user in operand.users:  # one use fewer: a pattern that wants a single-use operand may fire now
                if user is not op:
                    self.push(user)


def is_trivially_dead(op: Operation) -> bool:
    """True for a pure op none of whose results is used."""
    opdef = op.opdef
    return opdef is not None and opdef.has_trait("pure") and not any(r.uses for r in op.results)


def _within(op: Operation, root: Operation) -> bool:
    """Whether ``op`` is still nested in ``root`` (not erased, nor inside an erased op)."""
    while op is not root:
        parent = op.parent_op
        if parent is None:
            return False
        op = parent
    return True


def apply_patterns_greedily(
    root: Operation,
    patterns: Iterable[RewritePattern],
    max_iterations: int = 32,
) -> bool:
    """Apply ``patterns`` to the ops nested in ``root`` until none fires; True when the IR changed.

    Ops are visited in order, producers first; after a change, the ops it touched (new ops, users of
    replaced values, producers and other users of erased ops' operands) are visited again. Trivially dead
    pure ops are erased. Patterns may fire ``max_iterations`` times per op of the input on average; past
    that the pattern set does not converge and PassError names the patterns that fired most.
    """
    patterns = list(patterns)
    generic = [p for p in patterns if not p.op_names]
    by_name: dict[str, list[RewritePattern]] = {}
    for pat in patterns:
        for name in pat.op_names:
            by_name.setdefault(name, []).append(pat)
    ordered = {name: sorted(pats + generic, key=lambda p: -p.benefit) for name, pats in by_name.items()}
    generic.sort(key=lambda p: -p.benefit)
    worklist = _Worklist()
    for nested in list(root.walk())[1:]:
        worklist.push(nested)
    budget = max_iterations * max(len(worklist.present), 1)
    rewriter = PatternRewriter(worklist)
    changed = False
    fired: Counter[str] = Counter()
    while (op := worklist.pop()) is not None:
        if not _within(op, root):
            continue
        if is_trivially_dead(op):
            rewriter.erase_op(op)
            changed = True
            continue
        for pat in ordered.get(op.name, generic):
            rewriter.changed = False
            applied = pat(op, rewriter)
            if applied != rewriter.changed:
                did = "changed the IR but returned False" if rewriter.changed else "returned True but changed nothing"
                raise PassError(f"pattern '{pat.name}' {did}")
            if applied:
                changed = True
                fired[pat.name] += 1
                break
        if fired.total() > budget:
            top = ", ".join(f"'{name}' ({count} times)" for name, count in fired.most_common(2))
            raise PassError(f"pattern rewriting did not converge after {fired.total()} rewrites; most applied: {top}")
    return changed
