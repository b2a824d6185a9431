"""The mutable op graph: SSA values with use lists, operations, blocks and regions.

An :class:`Operation` is generic (a name, operands, results, attributes, regions); what an op
*means* comes from its declaration (:mod:`tensorium.ir.opdef`), looked up by name. Values keep
their uses so that ``replace_all_uses_with`` costs O(uses) and dead ops are found in O(1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import Location
from .attributes import Attr
from .types import Type


@dataclass(eq=False)
class Use:
    """One use of a value: operand ``index`` of ``owner``."""

    owner: Operation
    index: int


class Value:
    """An SSA value: defined once (op result or block argument), used by any number of ops."""

    __slots__ = ("name_hint", "type", "uses")

    def __init__(self, type: Type, name_hint: str | None = None):
        self.type = type
        self.uses: list[Use] = []
        self.name_hint = name_hint

    @property
    def owner(self) -> Operation | Block:
        raise NotImplementedError

    @property
    def users(self) -> list[Operation]:
        """The ops that use this value, each once, in use order."""
        seen: dict[int, Operation] = {}
        for use in self.uses:
            seen.setdefault(id(use.owner), use.owner)
        return list(seen.values())

    @property
    def has_uses(self) -> bool:
        return bool(self.uses)

    def replace_all_uses_with(self, other: Value) -> None:
        """Make every user of this value use ``other`` instead."""
        if other is self:
            return
        for use in list(self.uses):
            use.owner.set_operand(use.index, other)

    def defining_op(self) -> Operation | None:
        """The op that defines this value, or None for a block argument."""
        return None


class OpResult(Value):
    """Result number ``index`` of ``op``."""

    __slots__ = ("index", "op")

    def __init__(self, type: Type, op: Operation, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.op = op
        self.index = index

    @property
    def owner(self) -> Operation:
        return self.op

    def defining_op(self) -> Operation:
        return self.op

    def __repr__(self) -> str:
        return f"<OpResult #{self.index} of {self.op.name}: {self.type}>"


class BlockArgument(Value):
    """Argument number ``index`` of ``block``."""

    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: Block, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.block = block
        self.index = index

    @property
    def owner(self) -> Block:
        return self.block

    def __repr__(self) -> str:
        return f"<BlockArgument #{self.index}: {self.type}>"


class Operation:
    """A generic operation. Build ops through :mod:`tensorium.ir.builder` or an op definition."""

    def __init__(
        self,
        name: str,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, Attr] | None = None,
        regions: Sequence[Region] = (),
        loc: Location | None = None,
    ):
        self.name = name
        self._operands: list[Value] = []
        self.results: list[OpResult] = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Attr] = dict(attributes or {})
        self.regions: list[Region] = []
        self.parent: Block | None = None
        self.loc = loc
        for v in operands:
            self._add_operand(v)
        for r in regions:
            self.add_region(r)

    # operands ---------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    def _add_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"operand of {self.name} must be a Value, got {type(v).__name__}")
        v.uses.append(Use(self, len(self._operands)))
        self._operands.append(v)

    def set_operand(self, index: int, value: Value) -> None:
        """Replace operand ``index``, keeping both use lists right."""
        old = self._operands[index]
        old.uses = [u for u in old.uses if not (u.owner is self and u.index == index)]
        self._operands[index] = value
        value.uses.append(Use(self, index))

    def set_operands(self, values: Sequence[Value]) -> None:
        """Replace the whole operand list."""
        self.drop_operands()
        for v in values:
            self._add_operand(v)

    def drop_operands(self) -> None:
        """Remove this op from its operands' use lists (before erasing it)."""
        for i, v in enumerate(self._operands):
            v.uses = [u for u in v.uses if not (u.owner is self and u.index == i)]
        self._operands = []

    # results ----------------------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        """The single result (raises when the op has zero or several)."""
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def result_types(self) -> list[Type]:
        return [r.type for r in self.results]

    # regions ----------------------------------------------------------------------------
    def add_region(self, region: Region) -> None:
        region.parent = self
        self.regions.append(region)

    # structure --------------------------------------------------------------------------
    @property
    def parent_op(self) -> Operation | None:
        block = self.parent
        if block is None or block.parent is None:
            return None
        return block.parent.parent

    def walk(self) -> Iterator[Operation]:
        """This op and every op nested in its regions, in pre-order.

        Each block's ops are read when the walk reaches that block (an op added to it later is not visited),
        and an op's regions once the op has been yielded. A stack of iterators rather than nested generators:
        a ``yield from`` chain costs every op one step per level of nesting."""
        yield self
        stack = [self._nested_ops()]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                continue
            yield op
            stack.append(op._nested_ops())

    def _nested_ops(self) -> Iterator[Operation]:
        """The ops directly inside this op's regions, block by block, each block's list read on reaching it."""
        for region in self.regions:
            for block in region.blocks:
                yield from list(block.ops)

    def erase(self) -> None:
        """Detach this op and drop its operand uses; its results must have no uses."""
        for r in self.results:
            if r.uses:
                raise ValueError(f"cannot erase {self.name}: result #{r.index} still has uses")
        for nested in list(self.walk())[1:]:
            nested.drop_operands()
        self.drop_operands()
        if self.parent is not None:
            self.parent.remove(self)

    def clone(self, mapping: dict[Value, Value] | None = None) -> Operation:
        """A detached deep copy of this op and its regions, as MLIR's ``Operation::clone``.

        Operands found in ``mapping`` are replaced by their mapped values (others are kept, so a clone of an
        op inside a block uses the same outer values); ``mapping`` is extended with this op's results and
        every value defined inside its regions. Attributes are immutable and shared, so large constants are
        not copied.
        """
        mapping = {} if mapping is None else mapping
        copy = Operation(
            self.name,
            [mapping.get(v, v) for v in self._operands],
            [r.type for r in self.results],
            self.attributes,
            loc=self.loc,
        )
        for old, new in zip(self.results, copy.results):
            new.name_hint = old.name_hint
            mapping[old] = new
        for region in self.regions:
            cloned = Region()
            for block in region.blocks:
                new_block = cloned.add_block(Block([a.type for a in block.args], [a.name_hint for a in block.args]))
                mapping.update(zip(block.args, new_block.args))
                for op in block.ops:
                    new_block.append(op.clone(mapping))
            copy.add_region(cloned)
        return copy

    def has_trait(self, trait: str) -> bool:
        """True when this op's declaration lists ``trait`` (False for undeclared ops)."""
        opdef = self.opdef
        return opdef is not None and opdef.has_trait(trait)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attributes.get(name, default)

    @property
    def opdef(self) -> Any:
        """The declaration of this op (an :class:`~tensorium.ir.opdef.OpDef`), or None."""
        from .opdef import lookup

        return lookup(self.name)

    def __repr__(self) -> str:
        return f"<Operation {self.name} at {self.loc}>" if self.loc else f"<Operation {self.name}>"

    def __str__(self) -> str:
        from .printer import print_op

        return print_op(self)


class Block:
    """A list of ops with typed arguments."""

    def __init__(self, arg_types: Iterable[Type] = (), arg_names: Iterable[str | None] | None = None):
        types = list(arg_types)
        names = list(arg_names) if arg_names is not None else [None] * len(types)
        self.args: list[BlockArgument] = [BlockArgument(t, self, i, n) for i, (t, n) in enumerate(zip(types, names))]
        self.ops: list[Operation] = []
        self.parent: Region | None = None

    def add_arg(self, type: Type, name: str | None = None) -> BlockArgument:
        arg = BlockArgument(type, self, len(self.args), name)
        self.args.append(arg)
        return arg

    def append(self, op: Operation) -> Operation:
        return self.insert(len(self.ops), op)

    def insert(self, index: int, op: Operation) -> Operation:
        if op.parent is not None:
            raise ValueError(f"{op.name} is already in a block")
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.index_of(anchor), op)

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.index_of(anchor) + 1, op)

    def index_of(self, op: Operation) -> int:
        for i, o in enumerate(self.ops):
            if o is op:
                return i
        raise ValueError(f"{op.name} is not in this block")

    def remove(self, op: Operation) -> None:
        del self.ops[self.index_of(op)]
        op.parent = None

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None

    def __iter__(self) -> Iterator[Operation]:
        return iter(list(self.ops))


class Region:
    """A list of blocks owned by an op (Tensorium uses single-block regions)."""

    def __init__(self, blocks: Iterable[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The only block of this region."""
        if len(self.blocks) != 1:
            raise ValueError(f"region has {len(self.blocks)} blocks, not one")
        return self.blocks[0]
