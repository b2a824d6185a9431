"""The quant dialect: k-bit (1..8) quantized types and ops (docs/quantization.md).

Importing this package registers the ``!quant<...>`` type syntax and the ops; every op is reachable as
an attribute that builds it: ``quant.matmul(x, w, scale)``.
"""

from __future__ import annotations

from ...opdef import OpDef, lookup
from . import canonical, layouts, ops, types  # noqa: F401  (registers the type syntax, ops and patterns)


def __getattr__(name: str) -> OpDef:
    opdef = lookup("quant." + name)
    if opdef is None:
        raise AttributeError(f"the quant dialect has no op '{name}'")
    return opdef
