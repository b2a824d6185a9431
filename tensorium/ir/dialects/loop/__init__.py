"""The loop dialect: buffers in memory spaces, annotated loop nests, loads and stores, scalar math.

It is the target-neutral level below the graph dialect: a kernel is a ``func.func`` whose arguments
are buffers (and scalars), and the CPU, CUDA and WebGPU backends all consume the same ops. Importing
this package registers them. Ops are reachable as builders: ``loop.add(x, y)``, ``loop.load(buf, i,
j)``, ``loop.const(value=0.0, dtype=f32)``; names that are Python keywords take a trailing underscore
(``loop.and_``, ``loop.yield_``). ``loop.for_`` and ``loop.if_`` are context managers that build the op
with its body and insert into it::

    with loop.for_(0, n, kind="parallel", name="i") as i:
        loop.store(loop.load(a, i), b, i)
"""

from __future__ import annotations

from ...opdef import OpDef, lookup
from . import bits, control, memory, scalar, warp
from .control import GPU_KINDS, KINDS, as_index, build_for, for_, if_
from .memory import PACKED_WORD_WIDTHS, pack_bits
from .scalar import PREDICATES, const_value

__all__ = [
    "GPU_KINDS",
    "KINDS",
    "PACKED_WORD_WIDTHS",
    "PREDICATES",
    "as_index",
    "bits",
    "build_for",
    "const_value",
    "control",
    "for_",
    "if_",
    "memory",
    "pack_bits",
    "scalar",
    "warp",
]


def __getattr__(name: str) -> OpDef:
    opdef = lookup("loop." + name.rstrip("_"))
    if opdef is None:
        raise AttributeError(f"the loop dialect has no op '{name}'")
    return opdef
