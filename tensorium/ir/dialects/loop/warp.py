"""Warp-level exchange of the loop dialect: ``loop.shuffle``, one register value between the lanes of a warp.

The threads of a ``gpu_thread`` loop (axis 0) form warps of :data:`WARP` consecutive iterations; thread ``p``
of the loop is lane ``p % 32`` of warp ``p // 32``. Lanes are grouped further into segments of ``width``
lanes (a power of two up to 32). ``loop.shuffle %value, %offset {mode}`` gives each lane ``l`` (in the segment
starting at lane ``s``) the ``value`` of the lane

- ``xor``: ``l ^ offset`` (a butterfly: after ``xor`` with 16, 8, 4, 2, 1 every lane holds the warp's sum),
- ``down``: ``l + offset``, ``up``: ``l - offset``, its own value where that lane is outside the segment,
- ``idx``: ``s + offset`` (a broadcast of one lane),

with ``0 <= offset < width``. Every thread of the loop must reach the shuffle together (no thread may skip it
in a ``loop.if``), and the loop must have whole warps: it is CUDA's ``__shfl_*_sync`` with a full mask. The
interpreter runs it in lockstep as it runs barriers; targets without warps (the CPU, WebGPU without its
subgroups extension) reject it by name.

``loop.mma %acc, %a, %ar, %ac, %b, %br, %bc`` is the warp's matrix instruction (``mma.sync`` m16n8k16 with f16
operands and f32 accumulators): the warp adds the product of the 16 x 16 tile of ``a`` at ``(ar, ac)`` and the
16 x 8 tile of ``b`` at ``(br, bc)`` to a 16 x 8 tile of C held four elements per lane in ``acc``, lane ``l``
holding C[l / 4 + 8 (i / 2), 2 (l % 4) + i % 2] in ``acc[i]`` (PTX's accumulator fragment). The tile
positions must be the same in every lane of a warp.
"""

from __future__ import annotations

from ...attributes import IntAttr, StrAttr
from ...core import Operation
from ...opdef import InferError, define
from ...types import BufferType, Type, f16, f32
from .common import enclosing_loops, expect_buffer, expect_index, expect_scalar

WARP = 32
"""Lanes per warp: the threads a shuffle exchanges values between."""
MODES = ("xor", "down", "up", "idx")
MMA_SHAPE = (16, 8, 16)
"""The rows, columns and contraction of one ``loop.mma``: PTX's m16n8k16."""


def source_lane(mode: str, lane: int, offset: int, width: int) -> int:
    """The lane whose value lane ``lane`` receives (its own where the source is outside its segment)."""
    start = lane - lane % width
    source = {"xor": lane ^ offset, "down": lane + offset, "up": lane - offset, "idx": start + offset}[mode]
    return source if start <= source < start + width else lane


def _shuffle_infer(value: Type, offset: Type, *, mode: str, width: int) -> Type:
    expect_index(offset, "offset")
    if width < 1 or width > WARP or width & (width - 1):
        raise InferError(f"width must be a power of two up to {WARP}, got {width}")
    return expect_scalar(value, what="shuffled value")


def _verify_shuffle(op: Operation) -> str | None:
    for loop in enclosing_loops(op):
        kind = loop.attributes.get("kind", "serial")
        if kind == "gpu_thread":
            return None if loop.attributes.get("axis") == 0 else "needs its gpu_thread loop on axis 0 (the lanes)"
        if kind not in ("serial", "unroll"):
            return f'may not be inside a "{kind}" loop within its gpu_thread loop'
    return "must be inside a gpu_thread loop"


shuffle = define(
    "loop.shuffle",
    operands=("value", "offset"),
    attrs={"mode": StrAttr("xor", choices=MODES), "width": IntAttr(WARP)},
    infer=_shuffle_infer,
    verify=_verify_shuffle,
    doc="The `value` of another lane of the warp (`mode` xor: lane ^ offset; down: lane + offset; up: lane - "
    "offset; idx: lane offset of the segment; within segments of `width` lanes, a lane outside giving the "
    "thread's own value); every thread of its gpu_thread loop (axis 0, whole warps) reaches it together.",
)


def accumulator_position(lane: int, i: int) -> tuple[int, int]:
    """(row, column) of the C tile that ``acc[i]`` of lane ``lane`` holds in a ``loop.mma``."""
    return lane // 4 + 8 * (i // 2), 2 * (lane % 4) + i % 2


def _mma_infer(acc: Type, a: Type, ar: Type, ac: Type, b: Type, br: Type, bc: Type) -> list[Type]:
    if expect_buffer(acc, "accumulator") != BufferType((4,), f32, "local"):
        raise InferError(f"the accumulator must be a buffer<4xf32, local>, got {acc}")
    for name, t in (("a", a), ("b", b)):
        tile = expect_buffer(t, name)
        if tile.rank != 2 or tile.element != f16:
            raise InferError(f"{name} must be a 2-D buffer of f16, got {t}")
    for name, t in (("ar", ar), ("ac", ac), ("br", br), ("bc", bc)):
        expect_index(t, name)
    return []


mma = define(
    "loop.mma",
    operands=("acc", "a", "ar", "ac", "b", "br", "bc"),
    infer=_mma_infer,
    verify=_verify_shuffle,
    num_results=0,
    doc="The warp adds the product of the 16x16 f16 tile of `a` at (ar, ac) and the 16x8 f16 tile of `b` at "
    "(br, bc) to the 16x8 f32 tile of C whose elements lane l holds in `acc` (buffer<4xf32, local>): acc[i] is "
    "C[l / 4 + 8 (i / 2), 2 (l % 4) + i % 2] (mma.sync m16n8k16); tile positions equal across the warp.",
)
