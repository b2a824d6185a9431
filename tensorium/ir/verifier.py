"""Checks that IR follows every rule its op declarations state.

Generic checks come from the declaration (operand count, attribute kinds, inferred result types);
structural checks (SSA dominance, terminators) are the same for every op; ``extra_verify`` hooks add
op-specific rules. Errors name the op, its location and the broken rule.
"""

from __future__ import annotations

from ..errors import VerifyError
from .core import Operation, Value
from .opdef import InferError, OpDef
from .types import Sym, TensorType, Type


def types_compatible(declared: Type, inferred: Type) -> bool:
    """True when ``declared`` may stand where ``inferred`` is computed (symbolic dims match any size)."""
    if isinstance(declared, TensorType) and isinstance(inferred, TensorType):
        if declared.element != inferred.element or declared.rank != inferred.rank:
            return False
        for d, i in zip(declared.shape, inferred.shape):
            if isinstance(d, int) and isinstance(i, int) and d != i:
                return False
            if isinstance(d, Sym) and isinstance(i, Sym) and d.name and i.name and d != i:
                return False
        return True
    return declared == inferred


def _fail(op: Operation, message: str) -> VerifyError:
    return VerifyError(message, op.name, op.loc)


def verify_op_locally(op: Operation, opdef: OpDef) -> None:
    """The checks one op can pass or fail on its own (no dominance)."""
    err = opdef.operand_count_error(len(op.operands))
    if err:
        raise _fail(op, err)
    for key, value in op.attributes.items():
        spec = opdef.attrs.get(key)
        if spec is None and opdef.has_trait("open_attributes"):
            continue
        if spec is None:
            from .opdef import _suggest

            raise _fail(op, f"has unknown attribute '{key}'{_suggest(key, opdef.attrs)}")
        problem = spec.validate(value)
        if problem:
            from .printer import format_attr

            raise _fail(op, f"attribute '{key}': {problem}, got {format_attr(value)}")
    for key, spec in opdef.attrs.items():
        if spec.required and key not in op.attributes:
            raise _fail(op, f"requires attribute '{key}' ({spec.kind})")
    if opdef.infer is not None:
        try:
            inferred = opdef.infer_types([v.type for v in op.operands], op.attributes)
        except InferError as e:
            raise _fail(op, str(e)) from None
        if len(inferred) != len(op.results):
            raise _fail(op, f"has {len(op.results)} results, expected {len(inferred)}")
        for r, t in zip(op.results, inferred):
            if not types_compatible(r.type, t):
                raise _fail(op, f"result #{r.index} has type {r.type}, but the operands give {t}")
    elif opdef.num_results is not None and len(op.results) != opdef.num_results:
        raise _fail(op, f"has {len(op.results)} results, expected {opdef.num_results}")
    if opdef.extra_verify is not None:
        problem = opdef.extra_verify(op)
        if problem:
            raise _fail(op, problem)


def verify(root: Operation) -> None:
    """Verify ``root`` and everything nested in it; raises VerifyError at the first broken rule."""
    _verify_nested(root, visible=set())


def _verify_nested(op: Operation, visible: set[int]) -> None:
    opdef = op.opdef
    if opdef is None:
        raise _fail(op, "is not a registered operation")
    for i, v in enumerate(op.operands):
        if id(v) not in visible:
            raise _fail(op, f"operand #{i} ({_describe(v)}) is not defined before this use")
    isolated = opdef.has_trait("isolated_from_above")
    for region in op.regions:
        for block in region.blocks:
            scope = set() if isolated else set(visible)
            scope.update(id(a) for a in block.args)
            for inner in block.ops:
                if inner.parent is not block:
                    raise _fail(inner, "has a stale parent link")
                _verify_nested(inner, scope)
                scope.update(id(r) for r in inner.results)
                if inner.has_trait("terminator") and inner is not block.ops[-1]:
                    raise _fail(inner, "is a terminator but is not the last op of its block")
    verify_op_locally(op, opdef)


def _describe(v: Value) -> str:
    owner = v.defining_op()
    if owner is None:
        return f"block argument of type {v.type}"
    return f"result of '{owner.name}'"
