"""Fused groups: ``graph.fused`` holds ops that a backend computes as one kernel.

    %r = graph.fused %x, %w, %b (
      {
      ^bb0(%a: tensor<8x16xf32>, %m: tensor<16x4xf32>, %c: tensor<4xf32>):
        %0 = graph.matmul %a, %m : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
        %1 = graph.add %0, %c : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
        %2 = graph.relu %1 : (tensor<8x4xf32>) -> tensor<8x4xf32>
        graph.yield %2 : (tensor<8x4xf32>) -> ()
      }
    ) : (tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>

The region's block takes one argument per operand (same types) and ends with ``graph.yield`` of the
results; it sees nothing from outside (isolated from above). Its meaning is exactly its body's: the
interpreter runs the body op by op. The fuse pass builds these groups; the CPU lowering turns one into a
single loop kernel.
"""

from __future__ import annotations

from ...core import Operation
from ...evaluate import COMPUTES_REGION
from ...opdef import define


def _verify_fused(op: Operation) -> str | None:
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return "needs one region with one block"
    block = op.regions[0].block
    if [a.type for a in block.args] != [v.type for v in op.operands]:
        return "block arguments must have the operands' types"
    term = block.terminator
    if term is None or term.name != "graph.yield":
        return "body must end with 'graph.yield'"
    if [v.type for v in term.operands] != op.result_types:
        return "'graph.yield' must give values of the result types"
    if not op.results:
        return "needs at least one result"
    return None


fused = define(
    "graph.fused",
    operands=("*inputs",),
    traits=("pure", "isolated_from_above", COMPUTES_REGION),
    verify=_verify_fused,
    num_results=None,
    doc="A group of ops computed as one kernel: the results are what the body's `graph.yield` gives, the "
    "body's block arguments are the operands. Made by the fuse pass.",
)


def _verify_yield(op: Operation) -> str | None:
    parent = op.parent_op
    if parent is None or parent.name != "graph.fused":
        return "must end the body of a graph.fused"
    return None


yield_ = define(
    "graph.yield",
    operands=("*values",),
    infer=lambda values: [],
    traits=("terminator",),
    verify=_verify_yield,
    num_results=0,
    doc="Ends the body of a graph.fused with the values it gives.",
)
