"""Test-only ops for the pass tests (registered once, under the `test` dialect).

- ``test.opaque``: a pure op taking any operands and any attribute ``v`` (so ``1`` and ``1.0`` both
  fit); its result has the type of its first operand and it returns that operand's value.
- ``test.sink``: an op with side effects and no results that keeps its operands alive.
- ``test.scope``: a non-pure op with one region, whose block sees the enclosing values.
"""

from __future__ import annotations

from tensorium.ir.attributes import AttrSpec
from tensorium.ir.opdef import define, lookup

if lookup("test.opaque") is None:
    define(
        "test.opaque",
        operands=("*inputs",),
        attrs={"v": AttrSpec("any attribute", lambda v: True, None, False)},
        infer=lambda inputs, *, v: inputs[0],
        reference=lambda inputs, *, v: inputs[0],
        traits=("pure",),
        doc="Test op: pure, returns its first operand, takes any attribute 'v'.",
    )
    define(
        "test.sink",
        operands=("*inputs",),
        infer=lambda inputs: [],
        num_results=0,
        doc="Test op: has side effects, uses its operands.",
    )
    define(
        "test.scope",
        operands=("*inputs",),
        infer=lambda inputs: [],
        num_results=0,
        doc="Test op: one region whose block sees the enclosing values.",
    )
