"""k-bit tensors on WebGPU: stored packed in ``u32`` words in a quant-dialect layout, unpacked in the shader.

WGSL has no 8-bit integers, so a ``!quant<uK:...>`` tensor (held one code per byte elsewhere) cannot be
bound as it is. :func:`pack_quantized` rewrites a lowered module (its launch plan and its loop kernels) so
that every k-bit constant or input is a buffer of ``u32`` words in one of the quant dialect's packing
layouts (:mod:`tensorium.ir.dialects.quant.layouts`, ``K`` = 1..8, signed or not):

- ``stream``: a dense bit stream per row (``ceil(K k / 32)`` words per row of ``K`` codes: the densest; odd
  widths straddle two words);
- ``planes``: ``k`` one-bit streams, plane ``b`` holding bit ``b`` of every code (``[k, ..., ceil(K / 32)]``);
- ``shards``: the code cut into 4-, 2- and 1-bit pieces, each a stream that never straddles words;
- ``interleaved``: matrices only, ``lanes`` rows side by side per block of 32 codes (the CPU GEMV's layout).

Each ``loop.load`` of such a buffer becomes the loads of the words holding the element and the bit
arithmetic that takes its code out (``shr``, ``and``, ``or`` on ``u32``; a code straddling two words takes
its high bits from the next one; signed codes are sign-extended by a pair of shifts), as an ``i32``; the
loaded value's users (the lowering's ``loop.cast`` to the float the code stands for) take that instead. All
index arithmetic on the words is shifts and masks, so nothing needs the integer-division decompositions.
Constants are packed at compile time; inputs are packed by the runtimes (Python and JavaScript) from their
codes, one per byte, as the interpreter holds them. A k-bit tensor a kernel writes (a k-bit result computed at
run time), an output or a view (or the source of one) is not packed here: it stays a buffer of codes, one per
byte, which the WGSL emitter holds four to a ``u32`` word like any 8-bit integer tensor
(:func:`~tensorium.backends.webgpu.emitter.packed_bits`), so the runtimes take and return it as the
interpreter does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CompileError
from ..ir.attributes import DenseAttr
from ..ir.builder import InsertionPoint
from ..ir.core import Operation, Value
from ..ir.dialects import loop
from ..ir.dialects.builtin import func_body, func_name, functions
from ..ir.dialects.quant import layouts
from ..ir.types import BufferType, FunctionType, IntegerType, QuantizedType, TensorType, i32, index
from .plan import plan_of

U32 = IntegerType(32, False)
SHADER_LAYOUTS = ("stream", "planes", "shards", "interleaved")
"""The quant dialect's layouts the WGSL kernels unpack."""
DEFAULT_LAYOUT = "stream"
"""Exactly k bits per code (the others pad: ``planes`` and ``shards`` each row of each plane or shard to
whole words, ``interleaved`` rows to ``lanes`` and columns to 32)."""
DEFAULT_LANES = 4


@dataclass(frozen=True)
class Packing:
    """How a k-bit tensor of type ``type`` is held on the GPU: ``layout`` (with ``lanes`` for ``interleaved``)
    in words of type ``words``."""

    type: TensorType
    layout: str
    lanes: int
    words: TensorType

    @property
    def quantized(self) -> QuantizedType:
        element = self.type.element
        assert isinstance(element, QuantizedType)
        return element

    def pack(self, codes: Any) -> np.ndarray:
        """The words holding ``codes`` (integers of the tensor's shape, as the interpreter holds them)."""
        q = self.quantized
        return layouts.pack(np.asarray(codes), q.bits, q.signed, self.layout, self.lanes).reshape(
            self.words.static_shape
        )

    def unpack(self, words: Any) -> np.ndarray:
        """The codes ``words`` hold (the inverse of :meth:`pack`)."""
        q = self.quantized
        shape = self.type.static_shape
        return layouts.unpack(np.asarray(words), q.bits, q.signed, self.layout, shape, self.lanes)

    def to_json(self) -> dict[str, object]:
        """The packing as the runtimes read it (the JavaScript runtime packs inputs from it)."""
        q = self.quantized
        return {
            "type": str(self.type),
            "shape": list(self.type.static_shape),
            "bits": q.bits,
            "signed": q.signed,
            "layout": self.layout,
            "lanes": self.lanes,
        }


def packing_for(t: TensorType, layout: str = DEFAULT_LAYOUT, lanes: int = DEFAULT_LANES, what: str = "") -> Packing:
    """The packing of a static k-bit tensor type ``t`` in ``layout``; CompileError naming ``what`` when the
    layout cannot hold it (a scalar, ``interleaved`` beyond matrices, lanes not a power of two)."""
    if layout not in SHADER_LAYOUTS:
        raise CompileError(f"unknown k-bit layout '{layout}' for WebGPU (known: {', '.join(SHADER_LAYOUTS)})")
    if lanes < 1 or lanes & (lanes - 1):
        raise CompileError(f"interleaved lanes must be a power of two, got {lanes}")
    q = t.element
    if not isinstance(q, QuantizedType) or not t.is_static:
        raise CompileError(f"{what or t}: only static k-bit tensors are packed, got {t}")
    shape = t.static_shape
    if not shape:
        raise CompileError(f"{what or t}: a k-bit scalar has no row to pack; the WebGPU backend packs tensors")
    if layout == "interleaved" and len(shape) != 2:
        raise CompileError(f"{what or t}: the interleaved layout packs matrices, got rank {len(shape)}")
    zeros = np.zeros(shape, np.int64)
    words = layouts.pack(zeros, q.bits, q.signed, layout, lanes)
    return Packing(t, layout, lanes, TensorType(words.shape, U32))


def pack_quantized(lowered: Operation, layout: str = DEFAULT_LAYOUT, lanes: int = DEFAULT_LANES) -> dict[int, Packing]:
    """Hold every k-bit buffer of ``lowered``'s plan packed in ``layout`` (see the module docstring): the plan's
    buffer types and constants, the kernels' argument types and their loads are rewritten in place. Returns
    the packings by plan buffer. k-bit tensors written by a kernel, returned, viewed or computed on as codes
    are left as they are (codes, one per byte)."""
    plan = plan_of(lowered)
    packings: dict[int, Packing] = {}
    kernels = {func_name(f): f for f in functions(lowered)}
    for number, t in enumerate(plan.buffers):
        if not isinstance(t.element, QuantizedType):
            continue
        what = f"tensor #{number} ({t})"
        if number in plan.outputs or any(number in s.outputs for s in plan.steps):
            continue  # computed at run time or returned: kept as codes, one per byte (packed_bits in the emitter)
        if any(v.buffer == number or v.source == number for v in plan.views):
            continue  # a view of it: kept as codes, so the view is one of bytes
        if not all(_casts_only(kernels[s.kernel], p) for s in plan.steps for p in _positions(s, number)):
            continue  # some kernel computes on the codes themselves (a k-bit add): kept as codes too
        packings[number] = packing_for(t, layout, lanes, what)
    if not packings:
        return {}
    attrs = lowered.attributes
    attrs["plan_buffers"] = tuple(packings[b].words if b in packings else t for b, t in enumerate(plan.buffers))
    attrs["plan_constants"] = tuple(
        (b, DenseAttr.adopt(packings[b].pack(c.array), packings[b].words) if b in packings else c)
        for b, c in plan.constants
    )
    done: set[tuple[str, int]] = set()
    for step in plan.steps:
        for position, b in enumerate((*step.inputs, *step.outputs)):
            if b in packings and (step.kernel, position) not in done:
                done.add((step.kernel, position))
                _rewrite_argument(kernels[step.kernel], position, packings[b])
    return packings


def _positions(step: Any, number: int) -> list[int]:
    """The argument positions at which ``step`` passes plan buffer ``number``."""
    return [p for p, b in enumerate((*step.inputs, *step.outputs)) if b == number]


def _casts_only(kernel: Operation, position: int) -> bool:
    """Whether argument ``position`` of ``kernel`` is only sized and loaded, each load converted by casts (what
    the unpacking rewrites)."""
    for op in func_body(kernel).args[position].users:
        if op.name == "loop.dim":
            continue
        if op.name != "loop.load" or op.operands[0] is not func_body(kernel).args[position]:
            return False
        if any(u.name != "loop.cast" for u in op.results[0].users):
            return False
    return True


def _rewrite_argument(kernel: Operation, position: int, packing: Packing) -> None:
    """Make argument ``position`` of ``kernel`` the packed words and unpack every load of it."""
    arg = func_body(kernel).args[position]
    old = arg.type
    assert isinstance(old, BufferType)
    name = f"@{func_name(kernel)} argument #{position} ({packing.type})"
    arg.type = BufferType(packing.words.static_shape, U32, old.space)
    ftype = kernel.attributes["function_type"]
    assert isinstance(ftype, FunctionType)
    kernel.attributes["function_type"] = FunctionType(tuple(a.type for a in func_body(kernel).args), ftype.results)
    for op in list(arg.users):
        if op.name == "loop.dim":
            with InsertionPoint.before_op(op):
                size = loop.const(value=packing.type.static_shape[int(op.attr("axis"))], dtype=index)
            op.results[0].replace_all_uses_with(size)
            op.erase()
        elif op.name == "loop.load" and op.operands[0] is arg:
            _rewrite_load(op, packing, name)
        else:
            raise CompileError(f"{name}: '{op.name}' of a k-bit buffer is not supported by the WebGPU backend")


def _rewrite_load(op: Operation, packing: Packing, what: str) -> None:
    users = op.results[0].users
    if any(u.name != "loop.cast" for u in users):
        bad = next(u.name for u in users if u.name != "loop.cast")
        raise CompileError(f"{what}: a k-bit code used by '{bad}'; the WebGPU backend unpacks codes into casts")
    with InsertionPoint.before_op(op):
        code = unpack_code(packing, op.operands[0], list(op.operands[1:]))
        for user in users:
            dtype = user.attr("dtype")
            if dtype == i32:
                user.results[0].replace_all_uses_with(code)
            else:
                user.results[0].replace_all_uses_with(loop.cast(code, dtype=dtype))
    for user in users:
        user.erase()
    op.erase()


def _u32(value: int) -> Value:
    return loop.const(value=value, dtype=U32)  # type: ignore[no-any-return]


def _index(value: Value) -> Value:
    return loop.cast(value, dtype=index)  # type: ignore[no-any-return]


def _field(words: Value, at: list[Value], element: Value, width: int, start: int, row_words: int) -> Value:
    """Bits ``[e w, e w + w)`` of the stream of ``row_words`` words starting at word ``start`` of the row
    ``at`` (the leading indices) of ``words``, for element ``element`` (a ``u32``), as the low bits of a ``u32``
    (the bits above them are garbage: the caller masks)."""
    offset = loop.mul(element, _u32(width))
    word = loop.add(loop.shr(offset, _u32(5)), _u32(start))
    shift = loop.and_(offset, _u32(31))
    low = loop.shr(loop.load(words, [*at, _index(word)]), shift)
    if 32 % width == 0:
        return low  # type: ignore[no-any-return]
    following = loop.min(loop.add(word, _u32(1)), _u32(start + row_words - 1))
    high = loop.shl(loop.load(words, [*at, _index(following)]), loop.sub(_u32(32), shift))
    return loop.or_(low, high)  # type: ignore[no-any-return]


def unpack_code(packing: Packing, words: Value, indices: list[Value]) -> Value:
    """Loop ops (at the current insertion point) reading the code at ``indices`` of the k-bit tensor that
    ``words`` holds packed as ``packing`` says; an ``i32``."""
    q = packing.quantized
    bits, shape = q.bits, packing.type.static_shape
    count = shape[-1]
    *outer, last = indices
    element = loop.cast(last, dtype=U32)
    if packing.layout == "stream":
        code = loop.and_(_field(words, outer, element, bits, 0, _words(count, bits)), _u32((1 << bits) - 1))
    elif packing.layout == "planes":
        code = None
        for plane in range(bits):
            at = [loop.const(value=plane, dtype=index), *outer]
            bit = loop.and_(_field(words, at, element, 1, 0, _words(count, 1)), _u32(1))
            piece = loop.shl(bit, _u32(plane)) if plane else bit
            code = piece if code is None else loop.or_(code, piece)
    elif packing.layout == "shards":
        code, start, low = None, 0, 0
        for width in layouts.shard_widths(bits):
            size = _words(count, width)
            piece = loop.and_(_field(words, outer, element, width, start, size), _u32((1 << width) - 1))
            piece = loop.shl(piece, _u32(low)) if low else piece
            code = piece if code is None else loop.or_(code, piece)
            start, low = start + size, low + width
    else:
        code = _interleaved(packing, words, outer[0], element, bits)
    assert code is not None
    value = loop.cast(code, dtype=i32)
    if q.signed and bits < 32:
        spare = loop.const(value=32 - bits, dtype=i32)
        value = loop.shr(loop.shl(value, spare), spare)
    return value  # type: ignore[no-any-return]


def _interleaved(packing: Packing, words: Value, row: Value, column: Value, bits: int) -> Value:
    """The code at ``row`` (an index) and ``column`` (a ``u32``) of an ``interleaved`` matrix: words
    ``[row / lanes, column / 32, w, row % lanes]``, ``w`` the word of the block holding bit ``(column % 32) k``."""
    lanes = packing.lanes
    r = loop.cast(row, dtype=U32)
    group = _index(loop.shr(r, _u32(lanes.bit_length() - 1)))
    lane = _index(loop.and_(r, _u32(lanes - 1)))
    block = _index(loop.shr(column, _u32(5)))
    offset = loop.mul(loop.and_(column, _u32(31)), _u32(bits))
    word = loop.shr(offset, _u32(5))
    shift = loop.and_(offset, _u32(31))
    code = loop.shr(loop.load(words, [group, block, _index(word), lane]), shift)
    if 32 % bits:
        following = _index(loop.min(loop.add(word, _u32(1)), _u32(bits - 1)))
        code = loop.or_(code, loop.shl(loop.load(words, [group, block, following, lane]), loop.sub(_u32(32), shift)))
    return loop.and_(code, _u32((1 << bits) - 1))  # type: ignore[no-any-return]


def _words(count: int, width: int) -> int:
    return -(-count * width // layouts.WORD_BITS)


__all__ = ["DEFAULT_LAYOUT", "SHADER_LAYOUTS", "Packing", "pack_quantized", "packing_for", "unpack_code"]
