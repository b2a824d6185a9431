"""The memory plan of a launch plan: which memory slot each intermediate buffer lives in.

Target-neutral: a plan's buffers are tensor types and its steps read and write them by number, whatever
runs the kernels. A buffer takes a slot freed by a buffer whose last use came before it, so buffers whose
lifetimes do not overlap share memory; a view (a reshape, say) has no memory of its own and keeps its
source alive; an in-place kernel's output may take over the slot of an input that dies at its step.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir.types import Sym, TensorType, dim_size, storage_dtype
from ..lowering.plan import Step, View

__all__ = ["MemoryPlan", "nbytes"]


def nbytes(t: TensorType, bindings: Mapping[str, int]) -> int:
    """The bytes of a buffer of type ``t`` with its named dims bound by ``bindings``."""
    size = storage_dtype(t.element).itemsize
    for d in t.shape:
        size *= dim_size(d, bindings)
    return size


def _static_bytes(t: TensorType) -> int:
    """The bytes of ``t`` with every symbolic dim taken as 1 (the coefficient of its named dims)."""
    return int(np.prod([d for d in t.shape if isinstance(d, int)], dtype=np.int64)) * storage_dtype(t.element).itemsize


def _symbols(t: TensorType) -> tuple[str, ...]:
    return tuple(sorted(d.name for d in t.shape if isinstance(d, Sym) and d.name is not None))


@dataclass(frozen=True)
class MemoryPlan:
    """Which slot each intermediate buffer lives in (None: an input, constant or output, not pooled).

    A slot is one allocation per run, as large as its largest buffer; buffers sharing a slot have
    disjoint lifetimes (a buffer lives from the step that writes it to the last step that reads it).
    """

    slots: tuple[int | None, ...]
    count: int

    @staticmethod
    def build(
        buffers: Sequence[TensorType],
        steps: Sequence[Step],
        outputs: Sequence[int],
        views: Sequence[View] = (),
        reuse: bool = True,
        inplace: Sequence[frozenset[tuple[int, int]]] = (),
        runtime: Collection[str] = (),
    ) -> MemoryPlan:
        """Greedy slot assignment in step order; a free slot of buffers with the same named dims is preferred.

        A view has no slot of its own: a step that reads it keeps its source alive. ``inplace[s]`` holds
        the (input, output) argument pairs of step ``s``'s kernel that may share memory: an output takes the
        slot of such an input when that input dies at the step (and is no view's source). Without ``reuse``
        (the ``memory-plan`` stage disabled) every buffer gets a slot of its own. A buffer with a dim of
        ``runtime`` (dims computed by a step, sized only then) is allocated alone, like an output.
        """
        alone = {b for b, t in enumerate(buffers) if set(_symbols(t)) & set(runtime)}
        root = {v.buffer: v.source for v in views}
        last = {root.get(b, b): s for s, step in enumerate(steps) for b in (*step.inputs, *step.outputs)}
        slots: list[int | None] = [None] * len(buffers)
        members: list[list[int]] = []
        free: list[int] = []
        for s, step in enumerate(steps):
            taken = (
                _in_place(step, inplace[s] if s < len(inplace) else frozenset(), slots, last, root, s) if reuse else {}
            )
            taken = {o: i for o, i in taken.items() if o not in alone}
            for b in step.outputs:
                if b in outputs or b in alone:
                    continue
                if b in taken:
                    slots[b] = slots[taken[b]]
                    members[slots[b]].append(b)  # type: ignore[index]
                    continue
                same = [k for k in free if _symbols(buffers[members[k][0]]) == _symbols(buffers[b])]
                if same or free:
                    slot = (same or free)[-1]
                    free.remove(slot)
                else:
                    slot = len(members)
                    members.append([])
                members[slot].append(b)
                slots[b] = slot
            if not reuse:
                continue
            for b in dict.fromkeys(root.get(b, b) for b in (*step.inputs, *step.outputs)):
                held = slots[b]
                if held is not None and last[b] == s and b not in taken.values():
                    free.append(held)
        return MemoryPlan(tuple(slots), len(members))

    def slot_bytes(self, buffers: Sequence[TensorType], bindings: dict[str, int]) -> list[int]:
        """The size of each slot for the named dims ``bindings``."""
        sizes = [0] * self.count
        for b, slot in enumerate(self.slots):
            if slot is not None:
                sizes[slot] = max(sizes[slot], nbytes(buffers[b], bindings))
        return sizes

    def describe(self, buffers: Sequence[TensorType]) -> str:
        """The peak intermediate bytes as a formula of the named dims (``1024 + 256*batch``)."""
        linear: dict[tuple[str, ...], int] = {}
        maxima: list[str] = []
        for slot in range(self.count):
            sizes: dict[tuple[str, ...], int] = {}
            for b, s in enumerate(self.slots):
                if s == slot:
                    key = _symbols(buffers[b])
                    sizes[key] = max(sizes.get(key, 0), _static_bytes(buffers[b]))
            if len(sizes) == 1:
                ((key, n),) = sizes.items()
                linear[key] = linear.get(key, 0) + n
            else:
                maxima.append(f"max({', '.join(_monomial(n, key) for key, n in sizes.items())})")
        terms = [_monomial(n, key) for key, n in sorted(linear.items(), key=lambda kv: (len(kv[0]), kv[0]))]
        return " + ".join(terms + maxima or ["0"]) + " bytes"


def _in_place(
    step: Step,
    pairs: frozenset[tuple[int, int]],
    slots: list[int | None],
    last: dict[int, int],
    root: dict[int, int],
    s: int,
) -> dict[int, int]:
    """The outputs of ``step`` that take over the slot of an input, as ``{output: input}``: the input is pooled,
    dies at this step, is no view's source, and every argument position it fills pairs with that output."""
    args = (*step.inputs, *step.outputs)
    sources = set(root.values())
    taken: dict[int, int] = {}
    for i, o in sorted(pairs):
        if i >= len(step.inputs) or o < len(step.inputs):
            continue
        source, out = args[i], args[o]
        if out in taken or source in taken.values() or source in root or source in sources:
            continue
        if slots[source] is None or last.get(source) != s:
            continue
        if all((n, o) in pairs for n, b in enumerate(step.inputs) if b == source):
            taken[out] = source
    return taken


def _monomial(n: int, symbols: tuple[str, ...]) -> str:
    return "*".join([str(n), *symbols])
