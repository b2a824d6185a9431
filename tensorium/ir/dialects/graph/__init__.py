"""The graph dialect: value-semantics tensor ops with numpy reference semantics.

Each submodule declares one family of ops; importing this package registers them all. Every op
is reachable as an attribute that builds it: ``graph.add(x, y)``, ``graph.matmul(a, b,
transpose_b=True)``; names that are Python keywords take a trailing underscore (``graph.and_``).
"""

from __future__ import annotations

from ...opdef import OpDef, lookup
from . import (  # noqa: F401  (registers the ops)
    canonical,
    dynamic,
    elementwise,
    fusion,
    indexing,
    linalg,
    misc,
    nn,
    reduce,
    rng,
    sdpa,
    shape,
)


def __getattr__(name: str) -> OpDef:
    opdef = lookup("graph." + name.rstrip("_"))
    if opdef is None:
        raise AttributeError(f"the graph dialect has no op '{name}'")
    return opdef
