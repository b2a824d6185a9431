"""Mutants for the fuzzer's evaluation: deliberately broken variants of Tensorium's passes and compilation path.

Each :class:`Mutant` is a realistic bug of the kind a pass author makes: a copy of the real function with one
or two lines changed, swapped in (monkeypatched) where Tensorium really looks it up at run time: a
canonicalization pattern in the registry ``canonicalization_patterns()`` reads, a module global a pass calls,
a method of the class that emits kernels, an entry of the lowering table. ``with mutant.patch():`` breaks
Tensorium in this process until the block exits, and restores every object on exit, exceptions included.

Each mutant comes with a *witness*: a small case file (IR with ``// pipeline:``, ``// seed:`` and
``// backends:`` header lines, as :func:`tensorium.fuzz.reduce.parse_case` reads them) that passes the oracle
unpatched and fails it patched, so every mutant is live. The mutation study measures how many mutants the
fuzzer detects, with no knowledge of the witness, within a time budget each.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from llvmlite import ir as llvm_ir

import tensorium.backends.llvm.vectorize as llvm_vectorize
import tensorium.ir.dialects.graph.canonical as canonical
import tensorium.ir.rewrite as rewrite
import tensorium.lowering.fused as fused_lowering
import tensorium.lowering.inplace as inplace
import tensorium.lowering.reduce as reduce_lowering
import tensorium.passes.cse as cse
import tensorium.passes.dce as dce
import tensorium.passes.fold as fold
import tensorium.passes.fold_batch_norm as fold_batch_norm
import tensorium.passes.fuse as fuse
import tensorium.passes.fuse_attention as fuse_attention
import tensorium.passes.fuse_siblings as fuse_siblings
import tensorium.passes.layout as layout
import tensorium.passes.pack_weights as pack_weights
from tensorium.errors import InterpreterError
from tensorium.ir.attributes import DenseAttr
from tensorium.ir.core import Block, Operation, Value
from tensorium.ir.dialects import loop
from tensorium.ir.evaluate import evaluate_op
from tensorium.ir.rewrite import PatternFn, PatternRewriter
from tensorium.ir.shapes import dims_equal, normalize_axes, normalize_axis
from tensorium.ir.types import FloatType, IndexType, IntegerType, ScalarType, TensorType, storage_dtype
from tensorium.lowering.kernel import LOWERINGS, Kernel, convert, element_of, shape_of

Patch = Callable[[], contextlib.AbstractContextManager[None]]


@dataclass(frozen=True)
class Mutant:
    """A deliberately broken variant of one pass or stage, and a case that shows the bug."""

    name: str
    """Short kebab-case id."""
    target: str
    """The pass or stage broken (``cse``, ``canonicalize``, ``fuse``, ``cpu-lowering``, ...)."""
    description: str
    """What is wrong, in one sentence, like a bug report."""
    patch: Patch
    """Applying it breaks Tensorium in this process until the context exits."""
    witness: str
    """A case file that passes the oracle unpatched and fails it patched."""


# --- patching ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _attribute(owner: object, name: str, value: object) -> Iterator[None]:
    """``owner.name = value`` until the block exits."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


@contextlib.contextmanager
def _items(table: MutableMapping[str, Any], values: dict[str, Any]) -> Iterator[None]:
    """``table[key] = value`` for each of ``values`` until the block exits."""
    originals = {key: table[key] for key in values}
    table.update(values)
    try:
        yield
    finally:
        table.update(originals)


@contextlib.contextmanager
def _swapped_pattern(name: str, fn: PatternFn) -> Iterator[None]:
    """The registered canonicalization pattern ``name`` runs ``fn`` until the block exits."""
    registry = rewrite._CANONICAL
    (index,) = [n for n, p in enumerate(registry) if p.name == name]
    original = registry[index]
    registry[index] = dataclasses.replace(original, fn=fn)
    try:
        yield
    finally:
        registry[index] = original


def _patch(owner: object, name: str, value: object) -> Patch:
    return lambda: _attribute(owner, name, value)


def _canonical(name: str, fn: PatternFn) -> Patch:
    return lambda: _swapped_pattern(name, fn)


def _case(pipeline: str, backends: str, body: str, note: str = "") -> str:
    """A case file: the header lines (and ``note`` as a comment), then ``body`` (a module)."""
    comment = "".join(f"// {line}\n" for line in note.splitlines())
    return f"{comment}// pipeline: {pipeline}\n// seed: 0\n// backends: {backends}\n{body.strip()}\n"


# --- cse ---------------------------------------------------------------------------------------------------
def _cse_key_without_attributes(op: Operation) -> Hashable | None:
    opdef = op.opdef
    if opdef is None or not opdef.has_trait("pure") or op.regions or not op.results:
        return None
    operands = [id(v) for v in op.operands]
    if opdef.has_trait("commutative"):
        operands.sort()
    return (op.name, tuple(operands), tuple(op.result_types))  # the bug: attributes are not part of the key


def _cse_key_always_sorted(op: Operation) -> Hashable | None:
    opdef = op.opdef
    if opdef is None or not opdef.has_trait("pure") or op.regions or not op.results:
        return None
    operands = sorted(id(v) for v in op.operands)  # the bug: sorted for every op, not only commutative ones
    attrs = tuple(sorted((k, cse._attr_key(v)) for k, v in op.attributes.items()))
    return (op.name, tuple(operands), attrs, tuple(op.result_types))


# --- canonicalize ------------------------------------------------------------------------------------------
def _add_zero_both_sides(op: Operation, rewriter: PatternRewriter) -> bool:
    lhs, rhs = op.operands
    if canonical._is_splat_of(rhs, 0) and canonical._replace_if_same_type(rewriter, op, lhs):
        return True
    return canonical._is_splat_of(lhs, 0) and canonical._replace_if_same_type(rewriter, op, rhs)  # also 0 - x


def _transpose_chain_backwards(op: Operation, rewriter: PatternRewriter) -> bool:
    perm = canonical._ints(op, "perm")
    if perm == tuple(range(len(perm))):
        return canonical._replace_if_same_type(rewriter, op, op.operands[0])
    in_type, out_type = op.operands[0].type, op.result.type
    if isinstance(in_type, TensorType) and isinstance(out_type, TensorType) and in_type.is_static:
        moved = [a for a in perm if in_type.shape[a] != 1]
        if moved == sorted(moved):
            return canonical._rebuild(rewriter, op, "graph.reshape", op.operands[0], {"shape": out_type.static_shape})
    inner = canonical.producer(op.operands[0], "graph.transpose")
    if inner is None:
        return False
    inner_perm = canonical._ints(inner, "perm")
    composed = tuple(perm[p] for p in inner_perm)  # the bug: q[p] instead of p[q]
    source = inner.operands[0]
    if composed == tuple(range(len(composed))):
        return canonical._replace_if_same_type(rewriter, op, source)
    return canonical._rebuild(rewriter, op, "graph.transpose", source, {"perm": composed})


def _slice_full_any_direction(op: Operation, rewriter: PatternRewriter) -> bool:
    x = op.operands[0]
    t = x.type
    if not isinstance(t, TensorType) or t != op.result.type:
        return False
    starts, ends = canonical._ints(op, "starts"), canonical._ints(op, "ends")
    axes = canonical._ints(op, "axes") or tuple(range(len(starts)))
    steps = canonical._ints(op, "steps") or (1,) * len(starts)
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if abs(step) != 1:  # the bug: a reversing slice (step -1) keeps the type too, but not the order
            return False
        full = (start == 0 or start <= -canonical.INT64_MAX) and end >= canonical.INT64_MAX
        if not full and not isinstance(t.shape[axis], int):
            return False
    rewriter.replace_op(op, [x])
    return True


def _is_lossless_cast_ignoring_sign(source: ScalarType, target: ScalarType) -> bool:
    if isinstance(source, IndexType):
        source = IntegerType(64)
    if isinstance(target, IndexType):
        target = IntegerType(64)
    if source == target:
        return True
    if isinstance(source, FloatType):
        return isinstance(target, FloatType) and (source.name, target.name) in canonical._FLOAT_WIDENING
    if not isinstance(source, IntegerType) or type(target) not in (IntegerType, FloatType):
        return False
    if source.is_bool:
        return True
    magnitude_bits = source.width - 1 if source.signed else source.width
    if isinstance(target, FloatType):
        return magnitude_bits <= canonical._MANTISSA_BITS[target.name]
    assert isinstance(target, IntegerType)
    if target.is_bool:
        return False
    if target.signed:
        return magnitude_bits <= target.width - 1
    return source.width <= target.width  # the bug: a signed source does not fit an unsigned target


# --- fold, dce ---------------------------------------------------------------------------------------------
def _fold_first_result_everywhere(op: Operation, rewriter: PatternRewriter, max_elements: int) -> bool:
    opdef = op.opdef
    if opdef is None or opdef.reference is None or not opdef.has_trait("pure") or opdef.has_trait("constant"):
        return False
    if op.regions or not op.results:
        return False
    producers = [v.defining_op() for v in op.operands]
    constants = [p for p in producers if p is not None and p.name == "graph.constant"]
    if len(constants) != len(producers):
        return False
    types = [r.type for r in op.results]
    for t in types:
        if not isinstance(t, TensorType) or not t.is_static or (t.num_elements or 0) > max_elements:
            return False
    args = []
    for c in constants:
        value = c.attributes["value"]
        assert isinstance(value, DenseAttr)
        args.append(value.array)
    try:
        arrays = evaluate_op(op, args)
    except InterpreterError:
        return False
    if any(a.shape != t.static_shape for a, t in zip(arrays, types) if isinstance(t, TensorType)):
        return False
    values = []
    for _array, t in zip(arrays, types):
        assert isinstance(t, TensorType)
        attr = DenseAttr(arrays[0], t)  # the bug: every result gets the first result's value
        values.append(rewriter.create_before(op, "graph.constant", [], {"value": attr}).result)
    rewriter.replace_op(op, values)
    return True


def _dead_when_first_result_unused(op: Operation) -> bool:
    opdef = op.opdef
    return opdef is not None and opdef.has_trait("pure") and not op.results[0].uses  # the bug: only result #0


# --- fold-batch-norm, layout -------------------------------------------------------------------------------
def _fold_batch_norm_without_eps(bn: Operation, rewriter: PatternRewriter) -> bool:
    conv = bn.operands[0].defining_op()
    if conv is None or conv.name != "graph.conv2d" or len(conv.result.uses) != 1:
        return False
    out_type = conv.result.type
    assert isinstance(out_type, TensorType)
    attrs = conv.opdef.attr_kwargs(conv)
    channel_axis = 1 if attrs["layout"] == "NCHW" else 3
    if normalize_axis(int(bn.attr("axis", 1)), out_type.rank) != channel_axis:
        return False
    weight = canonical.constant_array(conv.operands[1])
    bias = canonical.constant_array(conv.operands[2]) if len(conv.operands) > 2 else np.zeros(1)
    params = [canonical.constant_array(v) for v in bn.operands[1:]]
    if weight is None or bias is None or any(p is None for p in params):
        return False
    scale, beta, mean, var = (np.asarray(p, np.float64) for p in params)  # type: ignore[arg-type]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = scale / np.sqrt(var)  # the bug: eps is left out
    out_axis = attrs["kernel_layout"].index("O")
    shape = [-1 if a == out_axis else 1 for a in range(weight.ndim)]
    dtype = storage_dtype(out_type.element)
    folded_weight = (weight.astype(np.float64) * factor.reshape(shape)).astype(dtype)
    folded_bias = ((bias.astype(np.float64) - mean) * factor + beta).astype(dtype)
    w_type, b_type = conv.operands[1].type, TensorType(folded_bias.shape, out_type.element)
    assert isinstance(w_type, TensorType)
    new_w = rewriter.create_before(bn, "graph.constant", [], {"value": DenseAttr(folded_weight, w_type)}).result
    new_b = rewriter.create_before(bn, "graph.constant", [], {"value": DenseAttr(folded_bias, b_type)}).result
    folded = rewriter.create_before(bn, "graph.conv2d", [conv.operands[0], new_w, new_b], dict(conv.attributes))
    rewriter.replace_op(bn, folded.results)
    rewriter.erase_op(conv)
    return True


# --- fuse-siblings, fuse-attention, pack-weights -----------------------------------------------------------
def _sibling_key_without_transpose_b(op: Operation) -> tuple[object, ...] | None:
    if op.name != "graph.matmul":
        return None
    lhs, rhs = op.operands
    if canonical.constant_array(rhs) is None or not isinstance(rhs.type, TensorType) or rhs.type.rank != 2:
        return None
    if not isinstance(lhs.type, TensorType) or lhs.type.rank < 2 or not op.result.type.is_static:  # type: ignore[attr-defined]
        return None
    return (id(lhs), bool(op.attr("transpose_a", False)), rhs.type)  # the bug: transpose_b is not compared


def _attention_scale_not_inverted(op: Operation) -> tuple[float | None, Value | None]:
    a, b = op.operands
    if op.name == "graph.div":
        c = fuse_attention._scalar(b)
        return (c if c else None), a  # the bug: scores / c taken as scale c, not 1 / c
    if fuse_attention._scalar(b) is not None and fuse_attention._tensor(b).rank == 0:
        return fuse_attention._scalar(b), a
    if fuse_attention._scalar(a) is not None and fuse_attention._tensor(a).rank == 0:
        return fuse_attention._scalar(a), b
    return None, None


def _pack_panels_untransposed(b: np.ndarray, width: int) -> np.ndarray:
    depth, cols = b.shape
    panels = -(-cols // width)
    padded = np.zeros((depth, panels * width), b.dtype)
    padded[:, :cols] = b
    return np.ascontiguousarray(padded.reshape(panels, depth, width))  # the bug: rows of panels interleaved


# --- fuse --------------------------------------------------------------------------------------------------
def _may_merge_shared_value(
    self: fuse.Fuse,
    op: Operation,
    value: Value,
    producer: fuse.Group,
    consumer: fuse.Group,
    graph: nx.DiGraph,
    theirs: int,
    mine: int,
) -> bool:
    if not fuse._fusable(producer.ops[-1]) or value is not producer.output:
        return False
    if not fuse._sizable(value.type):  # the bug: a value with other uses is fused away from them
        return False
    if len(producer.ops) + len(consumer.ops) > self.max_ops:
        return False
    if producer.anchor is not None and consumer.anchor is not None:
        return False
    if producer.anchor is not None:
        if (
            not self.epilogues
            or not fuse.is_elementwise(op)
            or fuse._elements(value.type) != fuse._elements(op.result.type)
        ):
            return False
    elif consumer.anchor is op:
        if not self.producers or op.name not in fuse.READS_FEW_TIMES or op.operands[0] is not value:
            return False
    elif fuse._elements(value.type) != fuse._elements(op.result.type):
        return False
    others = [s for s in graph.successors(theirs) if s != mine]
    return not any(nx.has_path(graph, s, mine) for s in others)


# --- lowering and the CPU backend --------------------------------------------------------------------------
def _broadcast_left_aligned(
    self: fused_lowering.FusedKernel, value: Value, shape: tuple[Any, ...], indices: list[Value]
) -> list[Value]:
    own = fused_lowering._tensor(value).shape
    offset = len(shape) - len(own)
    out: list[Value] = []
    for a, d in enumerate(own):
        if d == 1:
            out.append(self.k.index(0))
        elif dims_equal(d, shape[a + offset]):
            out.append(indices[a])  # the bug: numpy aligns shapes at the right, so this is indices[a + offset]
        else:
            raise fused_lowering.lowering_error(
                self.op, f"cannot broadcast {value.type} to {shape} inside a fused group"
            )
    return out


def _lower_reduction_from_zero(op: Operation, k: Kernel) -> None:
    x, out = k.inputs[0], k.outputs[0]
    rank = len(shape_of(x))
    attrs = op.opdef.attr_kwargs(op)
    axes = normalize_axes(attrs["axes"], rank)
    if not axes:
        reduce_lowering._copy(k)
        return
    keepdims = attrs["keepdims"]
    t = element_of(x)
    acc_t = reduce_lowering._accumulator_type(op.name, t)
    kept = [a for a in range(rank) if a not in axes]
    sizes = k.sizes(x)
    with k.loops([sizes[a] for a in kept], [f"i{n}" for n in range(len(kept))]) as outer:
        position = dict(zip(kept, outer))

        def term(inner: list[Value]) -> Value:
            position.update(zip(axes, inner))
            return convert(loop.load(x, [position[a] for a in range(rank)]), acc_t)

        init = k.const(reduce_lowering._identity(op.name), acc_t)  # the bug: max and min start from 0
        total = reduce_lowering.accumulate(
            k,
            acc_t,
            init,
            [sizes[a] for a in axes],
            [f"r{n}" for n in range(len(axes))],
            term,
            reduce_lowering._combine(op.name, acc_t),
            reduce_lowering.vector_width(k, "reduce", acc_t) if axes[-1] == rank - 1 else 0,
        )
        if op.name == "graph.reduce_mean":
            count = k.product([sizes[a] for a in axes])
            total = loop.div(total, convert(count, acc_t))
        where = [outer[kept.index(a)] if a in kept else k.index(0) for a in range(rank)] if keepdims else outer
        loop.store(convert(total, element_of(out)), out, where)


def _vector_loop_without_remainder(
    self: llvm_vectorize.VectorEmitter,
    body: Block,
    lower: llvm_ir.Value,
    upper: llvm_ir.Value,
    width: int,
    plan: llvm_vectorize.VectorPlan,
) -> None:
    bl = self.builder
    fn, before = bl.function, bl.block
    header, inner, done = (fn.append_basic_block(n) for n in ("vloop", "vbody", "vdone"))
    bl.branch(header)
    bl.position_at_end(header)
    iv = bl.phi(llvm_vectorize.I64)
    iv.add_incoming(lower, before)
    bl.cbranch(bl.icmp_signed("<=", bl.add(iv, llvm_vectorize.I64(width)), upper), inner, done)
    bl.position_at_end(inner)
    self.lanes, self.plan = width, plan  # type: ignore[attr-defined]
    self.env[id(body.args[0])] = iv
    self.emit_block_vectorized(body)
    iv.add_incoming(bl.add(iv, llvm_vectorize.I64(width)), bl.block)
    bl.branch(header)
    bl.position_at_end(done)  # the bug: no scalar loop for the last (upper - lower) % width iterations


def _reads_before_anywhere(load: Operation, store: Operation) -> bool:
    block = store.parent
    if block is None or load.parent is not block:
        return False
    return block.index_of(load) < block.index_of(store)  # the bug: the indices read are not compared


# --- the registry ------------------------------------------------------------------------------------------
def _lowering(names: tuple[str, ...], fn: Callable[[Operation, Kernel], None]) -> Patch:
    return lambda: _items(LOWERINGS, dict.fromkeys(names, fn))


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "cse-ignores-attributes",
        "cse",
        "CSE leaves attributes out of an op's key, so softmax along axis 0 and along axis 1 of one value merge.",
        _patch(cse, "_key", _cse_key_without_attributes),
        _case(
            "cse",
            "interp",
            """
module {
  func.func @main(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
    %0 = graph.softmax %x {axis = 0} : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %1 = graph.softmax %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = graph.sub %0, %1 : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    func.return %2 : tensor<3x3xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "cse-commutes-everything",
        "cse",
        "CSE sorts the operands of every op, not only of commutative ones, so x - y and y - x merge.",
        _patch(cse, "_key", _cse_key_always_sorted),
        _case(
            "cse",
            "interp",
            """
module {
  func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = graph.sub %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.sub %y, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = graph.mul %0, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %2 : tensor<2x3xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "zero-minus-x-folds-to-x",
        "canonicalize",
        "The add_zero canonicalization drops a zero on either side of graph.sub too, rewriting 0 - x to x.",
        _canonical("add_zero", _add_zero_both_sides),
        _case(
            "canonicalize",
            "interp",
            """
module {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %zero = graph.constant {value = dense<0.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %0 = graph.sub %zero, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %0 : tensor<2x3xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "transpose-chain-composes-backwards",
        "canonicalize",
        "transpose(transpose(x, p), q) is rewritten to transpose(x, q[p]) instead of transpose(x, p[q]), which "
        "differs when the permutations do not commute (visible when the dims they move are equal).",
        _canonical("transpose_chain", _transpose_chain_backwards),
        _case(
            "canonicalize",
            "interp",
            """
module {
  func.func @main(%x: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
    %0 = graph.transpose %x {perm = [1, 0, 2]} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %1 = graph.transpose %0 {perm = [0, 2, 1]} : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    func.return %1 : tensor<2x2x2xf32>
  }
}
""",
            "Equal dims: the wrong permutation gives the same type, so the rewrite is not refused.",
        ),
    ),
    Mutant(
        "slice-full-accepts-reversal",
        "canonicalize",
        "slice_full accepts step -1 as well as 1, so a slice that reverses an axis (same type) is replaced by its "
        "input.",
        _canonical("slice_full", _slice_full_any_direction),
        _case(
            "canonicalize",
            "interp",
            """
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = graph.slice %x {starts = [-1], ends = [-9223372036854775807], steps = [-1]} : (tensor<4xf32>) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "cast-chain-ignores-sign",
        "canonicalize",
        "is_lossless_cast calls a signed-to-unsigned widening (i8 to u16) lossless, so cast(cast(x, u16), i32) "
        "becomes cast(x, i32) and negative values no longer wrap.",
        _patch(canonical, "is_lossless_cast", _is_lossless_cast_ignoring_sign),
        _case(
            "canonicalize",
            "interp",
            """
module {
  func.func @main(%x: tensor<8xi8>) -> tensor<8xi32> {
    %0 = graph.cast %x {dtype = u16} : (tensor<8xi8>) -> tensor<8xu16>
    %1 = graph.cast %0 {dtype = i32} : (tensor<8xu16>) -> tensor<8xi32>
    func.return %1 : tensor<8xi32>
  }
}
""",
        ),
    ),
    Mutant(
        "fold-repeats-first-result",
        "fold",
        "Constant folding of an op with several results gives every result the value of the first (a split of a "
        "constant folds to two copies of its first part).",
        _patch(fold, "_fold", _fold_first_result_everywhere),
        _case(
            "fold",
            "interp",
            """
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %c = graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %0:2 = graph.split %c {axis = 0, sizes = [2, 2]} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    %1 = graph.add %x, %0#1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %1 : tensor<2xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "dce-looks-at-first-result",
        "dce",
        "DCE takes an op to be dead when its first result is unused, erasing a split whose second result is "
        "still returned.",
        _patch(dce, "is_trivially_dead", _dead_when_first_result_unused),
        _case(
            "dce",
            "interp",
            """
module {
  func.func @main(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
    %0:2 = graph.split %x {axis = 0, sizes = [2, 2]} : (tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
    func.return %0#1 : tensor<2x3xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "batch-norm-fold-drops-eps",
        "fold-batch-norm",
        "fold-batch-norm scales the convolution by scale / sqrt(var) instead of scale / sqrt(var + eps).",
        _patch(fold_batch_norm, "_fold", _fold_batch_norm_without_eps),
        _case(
            "fold-batch-norm",
            "interp",
            """
module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
    %w = graph.constant {value = dense<[[[[2.0]], [[1.0]]], [[[0.5]], [[-1.0]]]]> : tensor<2x2x1x1xf32>}
      : () -> tensor<2x2x1x1xf32>
    %scale = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %beta = graph.constant {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %mean = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %var = graph.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %1 = graph.batch_norm %0, %scale, %beta, %mean, %var {eps = 1.0}
      : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    func.return %1 : tensor<1x2x4x4xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "layout-weight-swaps-height-width",
        "layout",
        "The layout pass transposes constant OIHW weights with (3, 2, 1, 0), giving WHIO rather than HWIO, so "
        "square kernels are applied mirrored along their diagonal.",
        _patch(layout, "OIHW_TO_HWIO", (3, 2, 1, 0)),
        _case(
            "layout",
            "interp",
            """
module {
  func.func @main(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x3x3xf32> {
    %w = graph.constant {value = dense<[[[[1.0, 2.0], [3.0, 4.0]]], [[[-1.0, 0.5], [0.0, 2.0]]]]> : tensor<2x1x2x2xf32>}
      : () -> tensor<2x1x2x2xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x1x4x4xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x3x3xf32>
    func.return %0 : tensor<1x2x3x3xf32>
  }
}
""",
            "A square kernel: mirrored weights have the same type, so the convolution still verifies.",
        ),
    ),
    Mutant(
        "sibling-key-ignores-transpose-b",
        "fuse-siblings",
        "fuse-siblings leaves transpose_b out of the siblings' key, so x @ W1 and x @ W2^T are stacked with the "
        "first one's flag and the second weight is read untransposed.",
        _patch(fuse_siblings, "_sibling_key", _sibling_key_without_transpose_b),
        _case(
            "fuse-siblings",
            "interp",
            """
module {
  func.func @main(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
    %w1 = graph.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
    %w2 = graph.constant {value = dense<[[0.5, -1.0], [2.0, 0.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
    %0 = graph.matmul %x, %w1 : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    %1 = graph.matmul %x, %w2 {transpose_b = true} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
    func.return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
  }
}
""",
            "Square weights: the weight read untransposed has the same type, so nothing refuses it.",
        ),
    ),
    Mutant(
        "attention-division-scale-not-inverted",
        "fuse-attention",
        "fuse-attention takes scores / c as a scale of c instead of 1 / c.",
        _patch(fuse_attention, "_scale", _attention_scale_not_inverted),
        _case(
            "fuse-attention",
            "interp",
            """
module {
  func.func @main(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x2xf32>) -> tensor<3x2xf32> {
    %d = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.matmul %q, %k {transpose_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
    %1 = graph.div %0, %d : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
    %2 = graph.softmax %1 : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %3 = graph.matmul %2, %v : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
    func.return %3 : tensor<3x2xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "pack-weights-panels-interleaved",
        "pack-weights",
        "pack_panels reshapes the padded [K, P * W] weight straight to [P, K, W] without moving the panel axis "
        "first, which is right only for a single panel.",
        _patch(pack_weights, "pack_panels", _pack_panels_untransposed),
        _case(
            "pack-weights{width=4}",
            "interp",
            """
module {
  func.func @main(%x: tensor<3x2xf32>) -> tensor<3x8xf32> {
    %w = graph.constant {value = dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                                        [-1.0, 0.5, 0.0, 2.0, -3.0, 1.5, 4.0, -2.0]]> : tensor<2x8xf32>}
      : () -> tensor<2x8xf32>
    %0 = graph.matmul %x, %w : (tensor<3x2xf32>, tensor<2x8xf32>) -> tensor<3x8xf32>
    func.return %0 : tensor<3x8xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "fuse-ignores-other-uses",
        "fuse",
        "fuse takes a producer into its consumer's group without checking that the value has no other use, so "
        "a value also returned is erased with the group's inner ops.",
        _patch(fuse.Fuse, "_may_merge", _may_merge_shared_value),
        _case(
            "fuse",
            "interp",
            """
module {
  func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    %0 = graph.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.neg %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
""",
        ),
    ),
    Mutant(
        "fused-broadcast-left-aligned",
        "fused-lowering",
        "The lowering of a fused group broadcasts an operand of lower rank from the left, so a bias [N] added to a "
        "matmul's [M, N] epilogue is read at the row index.",
        _patch(fused_lowering.FusedKernel, "_broadcast", _broadcast_left_aligned),
        _case(
            "fuse",
            "interp,cpu",
            """
module {
  func.func @main(%x: tensor<3x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
    %0 = graph.matmul %x, %w : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
    %1 = graph.add %0, %b : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
    func.return %1 : tensor<3x3xf32>
  }
}
""",
            "A square result: the row index stays within the bias, so the kernel reads wrong values, not past it.",
        ),
    ),
    Mutant(
        "reduce-max-starts-at-zero",
        "cpu-lowering",
        "The loop lowering of reduce_max and reduce_min starts the accumulator at 0 rather than at the first "
        "element, so the maximum of negative numbers is 0.",
        _lowering(("graph.reduce_max", "graph.reduce_min"), _lower_reduction_from_zero),
        _case(
            "canonicalize",
            "interp,cpu",
            """
module {
  func.func @main(%x: tensor<4x20xf32>) -> tensor<4xf32> {
    %c = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.sub %x, %c : (tensor<4x20xf32>, tensor<f32>) -> tensor<4x20xf32>
    %1 = graph.reduce_max %0 {axes = [1]} : (tensor<4x20xf32>) -> tensor<4xf32>
    func.return %1 : tensor<4xf32>
  }
}
""",
            "x - 2 is negative everywhere, so a maximum started at 0 stays 0.",
        ),
    ),
    Mutant(
        "vector-loop-drops-remainder",
        "llvm-vectorize",
        "The LLVM emitter's explicit vectorization runs the W-lane main loop but no scalar loop after it, so the "
        "last (n mod W) iterations of a vectorized loop never run.",
        _patch(llvm_vectorize.VectorEmitter, "emit_vector_loop", _vector_loop_without_remainder),
        _case(
            "canonicalize",
            "interp,cpu",
            """
module {
  func.func @main(%x: tensor<3x20xf32>) -> tensor<3xf32> {
    %0 = graph.cumsum %x {axis = 1} : (tensor<3x20xf32>) -> tensor<3x20xf32>
    %1 = graph.sin %0 : (tensor<3x20xf32>) -> tensor<3x20xf32>
    %2 = graph.reduce_sum %1 {axes = [1]} : (tensor<3x20xf32>) -> tensor<3xf32>
    func.return %2 : tensor<3xf32>
  }
}
""",
            "sin (vectorized: 16 lanes, then 4 iterations) runs in place on the cumsum (a scalar loop), so the\n"
            "iterations it skips leave the cumsum's values rather than memory of an earlier run, and the sum\n"
            "of each row reads them.",
        ),
    ),
    Mutant(
        "inplace-ignores-indices",
        "memory-plan",
        "The in-place analysis accepts a load of the input anywhere before the store, not only at the stored "
        "indices, so a transpose may overwrite its input while still reading it.",
        _patch(inplace, "_reads_before", _reads_before_anywhere),
        _case(
            "canonicalize",
            "interp,cpu",
            """
module {
  func.func @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = graph.exp %x : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = graph.transpose %0 {perm = [1, 0]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = graph.neg %1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
    func.return %2 : tensor<8x8xf32>
  }
}
""",
            "The transpose is the last reader of exp's result, so its output may take that memory in place;\n"
            "both are intermediates (program inputs and outputs are never shared).",
        ),
    ),
)
"""Every mutant of the study, in pipeline order (graph passes, then lowering and the CPU backend)."""
