"""The host side of a lowered program: which kernels run, in which order, on which buffers.

:func:`lower_function` turns ``@main`` of a graph module into a module of kernels (one per graph op)
whose attributes hold the :class:`LaunchPlan`, so the plan prints, parses and travels with the kernels:

    module attributes {plan_buffers = [tensor<4xf32>, ...], plan_inputs = [0, 1], plan_outputs = [3],
                       plan_constants = [[2, dense<...> : tensor<4xf32>]],
                       plan_steps = [["add_0", [0, 1], [3]], ...]} { func.func @add_0(...) ... }

A step of a target that launches kernels over a grid carries it last: ``["add_0", [0, 1], [3], [64, 1]]``.

Buffers are numbered; each has a tensor type (symbolic dims are named dims of the inputs, resolved when
the inputs are bound). A step runs one kernel with its input buffers then its output buffers. Ops that
only reinterpret row-major memory (reshape, squeeze, unsqueeze, a slice that keeps one contiguous run of
elements) get no kernel: their result is a :class:`View` of the operand's memory (``plan_views``).
A :class:`RuntimeDim` (``plan_dims``) is a named dim that a step computes (``graph.compress``): the host
allocates that step's results at the dim's bound and binds the dim after the step (:func:`run_steps`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TensoriumError
from ..ir.attributes import DenseAttr
from ..ir.core import Operation, Value
from ..ir.dialects.builtin import func_body, func_return, lookup_func, make_module
from ..ir.dialects.graph.dynamic import runtime_dim
from ..ir.dialects.graph.shape import view_offset
from ..ir.types import Sym, TensorType, dim_size
from ..targets import Target, host_target
from .kernel import LOWERINGS, lower_op, lowering_error
from .space import Config, kernel_key


@dataclass(frozen=True)
class Step:
    """One kernel launch: ``kernel(*inputs buffers, *outputs buffers)``.

    ``grid`` is the launch grid of targets that launch kernels over one (GPU blocks or workgroups per
    dimension, x first); None where the kernel runs once per step, as on the CPU, which ignores it.
    """

    kernel: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    grid: tuple[int, ...] | None = None

    def attribute(self) -> tuple[object, ...]:
        """The step as one ``plan_steps`` entry: ``[kernel, [inputs], [outputs]]``, then ``[grid]`` when set."""
        entry = (self.kernel, self.inputs, self.outputs)
        return entry if self.grid is None else (*entry, self.grid)

    @staticmethod
    def from_attribute(entry: Any) -> Step:
        """The step of a ``plan_steps`` entry (:meth:`attribute`)."""
        kernel, inputs, outputs, *grid = entry
        if len(grid) > 1:
            raise TensoriumError(f"malformed plan step {entry!r}: expected [kernel, inputs, outputs] and a grid")
        return Step(
            str(kernel),
            tuple(int(b) for b in inputs),
            tuple(int(b) for b in outputs),
            tuple(int(n) for n in grid[0]) if grid else None,
        )


@dataclass(frozen=True)
class View:
    """Buffer ``buffer`` is the memory of buffer ``source`` from element ``offset`` on, read with its own shape.

    ``source`` is never itself a view (chains are resolved when the plan is built); a view is never a
    program output, and no kernel writes it.
    """

    buffer: int
    source: int
    offset: int


@dataclass(frozen=True)
class RuntimeDim:
    """Named dim ``name``, known once the step writing buffer ``size`` (a 0-d integer) has run.

    That step's results ``buffers`` have ``name`` as their leading dim: the host allocates them with
    ``bound`` rows (a static size or a named dim bound earlier), then binds ``name`` to the value of
    ``size`` and keeps their first that many rows (a row-major prefix, so no copy).
    """

    name: str
    size: int
    bound: int | str
    buffers: tuple[int, ...]

    def attribute(self) -> tuple[object, ...]:
        """The dim as one ``plan_dims`` entry: ``[name, size, bound, [buffers]]``."""
        return (self.name, self.size, self.bound, self.buffers)

    @staticmethod
    def from_attribute(entry: Any) -> RuntimeDim:
        """The dim of a ``plan_dims`` entry (:meth:`attribute`)."""
        name, size, bound, buffers = entry
        return RuntimeDim(str(name), int(size), bound if isinstance(bound, str) else int(bound), tuple(buffers))

    def rows(self, bindings: Mapping[str, int]) -> int:
        """The bound: how many rows the host allocates before the size is known."""
        return self.bound if isinstance(self.bound, int) else bindings[self.bound]

    def bind(self, values: dict[int, np.ndarray], bindings: dict[str, int]) -> None:
        """Bind the dim to the computed size and cut its buffers in ``values`` to that many rows."""
        n = int(values[self.size])
        if not 0 <= n <= self.rows(bindings):
            raise TensoriumError(f"run-time dim [{self.name}] has size {n}, outside 0..{self.rows(bindings)}")
        bindings[self.name] = n
        for b in self.buffers:
            values[b] = values[b][:n]


@dataclass(frozen=True)
class LaunchPlan:
    """Buffers by number (their tensor types), which are the program's inputs, outputs and constants, the
    steps, the buffers that are views of others, and the dims the steps compute."""

    buffers: tuple[TensorType, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    constants: tuple[tuple[int, DenseAttr], ...]
    steps: tuple[Step, ...]
    views: tuple[View, ...] = ()
    dims: tuple[RuntimeDim, ...] = ()

    def attributes(self) -> dict[str, object]:
        """The plan as module attributes (``plan_buffers``, ``plan_inputs``, ...)."""
        return {
            "plan_buffers": self.buffers,
            "plan_inputs": self.inputs,
            "plan_outputs": self.outputs,
            "plan_constants": self.constants,
            "plan_steps": tuple(s.attribute() for s in self.steps),
            "plan_views": tuple((v.buffer, v.source, v.offset) for v in self.views),
            "plan_dims": tuple(d.attribute() for d in self.dims),
        }


def plan_of(module: Operation) -> LaunchPlan:
    """The launch plan held in the attributes of a lowered module; TensoriumError when there is none."""
    attrs: dict[str, Any] = module.attributes
    if "plan_steps" not in attrs:
        raise TensoriumError("the module has no launch plan (lower it with lower_function or lower-to-loops)")
    return LaunchPlan(
        buffers=tuple(attrs["plan_buffers"]),
        inputs=tuple(attrs["plan_inputs"]),
        outputs=tuple(attrs["plan_outputs"]),
        constants=tuple((int(i), c) for i, c in attrs["plan_constants"]),
        steps=tuple(Step.from_attribute(entry) for entry in attrs["plan_steps"]),
        views=tuple(View(int(b), int(s), int(o)) for b, s, o in attrs.get("plan_views", ())),
        dims=tuple(RuntimeDim.from_attribute(entry) for entry in attrs.get("plan_dims", ())),
    )


Allocate = Callable[[int, Mapping[str, int]], np.ndarray]
Launch = Callable[[Step, list[np.ndarray]], None]


def run_steps(
    plan: LaunchPlan, values: dict[int, np.ndarray], bindings: dict[str, int], allocate: Allocate, launch: Launch
) -> None:
    """Run the steps of ``plan`` over ``values`` (holding the inputs and constants), the host side shared by
    every runner: before each step, ``allocate(buffer, dims)`` its outputs (a dim the step computes at its
    bound) and make the views it reads; ``launch`` it; then bind the dims it computed (:class:`RuntimeDim`).
    """
    views = {v.buffer: v for v in plan.views}
    for step in plan.steps:
        computed = [d for d in plan.dims if d.size in step.outputs]
        dims = {**bindings, **{d.name: d.rows(bindings) for d in computed}}
        values.update((b, allocate(b, dims)) for b in step.outputs)
        for b in step.inputs:
            if b not in values:
                view = views[b]
                values[b] = view_of(values[view.source], view.offset, plan.buffers[b], bindings)
        launch(step, [values[b] for b in (*step.inputs, *step.outputs)])
        for d in computed:
            d.bind(values, bindings)


def view_of(source: np.ndarray, offset: int, t: TensorType, bindings: Mapping[str, int]) -> np.ndarray:
    """The elements of ``source`` (row-major) from ``offset`` on, shaped as ``t`` with the named dims ``bindings``."""
    shape = [dim_size(d, bindings) for d in t.shape]
    size = int(np.prod(shape, dtype=np.int64))
    return source.reshape(-1)[offset : offset + size].reshape(shape)


def source_ops(op: Operation) -> tuple[str, ...]:
    """The graph ops a kernel computes: ``op``'s name, or for a fused group the names of its body's ops."""
    if op.name != "graph.fused":
        return (op.name,)
    return tuple(o.name for o in op.regions[0].block.ops if not o.has_trait("terminator"))


def kernel_name(op: Operation) -> str:
    """A kernel's name without its number: the op's short name; for a fused group, its ops' names joined
    (``matmul_add_relu``), the first three and a count past five."""
    names = [name.split(".", 1)[1] for name in source_ops(op)]
    return "_".join(names if len(names) <= 5 else [*names[:3], f"and{len(names) - 3}more"])


def _sizable_by_host(t: object) -> bool:
    """True when the host can size a tensor of type ``t`` from the inputs (no anonymous dims)."""
    return isinstance(t, TensorType) and all(not isinstance(d, Sym) or d.name is not None for d in t.shape)


def lower_function(
    module: Operation,
    func: str = "main",
    target: Target | None = None,
    configs: Mapping[str, Config] | None = None,
) -> Operation:
    """A new module with one kernel per graph op of ``@func`` for ``target`` (default: this machine) and
    the launch plan in its attributes.

    Constants become plan constants (host buffers), not kernels; ops that are views (:func:`view_offset`)
    become plan views, except those whose result is returned (outputs are fresh arrays). Kernels come out as
    the lowering builds them; the ``schedule`` stage of :mod:`tensorium.lowering.codegen` applies the default
    schedules. ``configs``
    maps kernel keys (:func:`~tensorium.lowering.space.kernel_key`) to the search-space points to build
    them at; other kernels take their family's default for the target. Each kernel records its ``key``.
    Raises LoweringError for an op without a lowering.
    """
    target = target if target is not None else host_target()
    configs = configs or {}
    function = lookup_func(module, func)
    if function is None:
        raise TensoriumError(f"no function @{func} to lower")
    ids: dict[int, int] = {}
    buffers: list[TensorType] = []

    def number(value: Value) -> int:
        t = value.type
        if not isinstance(t, TensorType):
            raise TensoriumError(f"@{func} has a value of type {t}; only tensors can be lowered")
        ids[id(value)] = len(buffers)
        buffers.append(t)
        return len(buffers) - 1

    inputs = tuple(number(a) for a in func_body(function).args)
    constants: list[tuple[int, DenseAttr]] = []
    steps: list[Step] = []
    views: dict[int, View] = {}
    dims: list[RuntimeDim] = []
    kernels: list[Operation] = []
    returned = {id(v) for v in func_return(function).operands}
    for op in func_body(function).ops:
        if op.name == "func.return":
            continue
        if op.regions and op.name not in LOWERINGS:
            raise lowering_error(op, "ops with regions have no loop lowering")
        if op.name == "graph.constant":
            constants.append((number(op.result), op.attributes["value"]))  # type: ignore[arg-type]
            continue
        offset = view_offset(op)
        if offset is not None and id(op.result) not in returned and _sizable_by_host(op.result.type):
            source = ids[id(op.operands[0])]
            outer = views.get(source)
            if outer is not None:
                source, offset = outer.source, outer.offset + offset
            buffer = number(op.result)
            views[buffer] = View(buffer, source, offset)
            continue
        key = kernel_key(op)
        kernel = lower_op(op, f"{kernel_name(op)}_{len(kernels)}", target, configs.get(key))
        kernel.attributes["source_ops"] = source_ops(op)
        kernel.attributes["key"] = key
        kernels.append(kernel)
        ins = tuple(ids[id(v)] for v in op.operands)
        outs = tuple(number(r) for r in op.results)
        steps.append(Step(kernel.attributes["sym_name"], ins, outs))  # type: ignore[arg-type]
        computed = runtime_dim(op)
        if computed is not None:
            dims.append(_runtime_dim(op, computed, outs))
    outputs = tuple(ids[id(v)] for v in func_return(function).operands)
    plan = LaunchPlan(
        tuple(buffers), inputs, outputs, tuple(constants), tuple(steps), tuple(views.values()), tuple(dims)
    )
    lowered = make_module(kernels, loc=module.loc)
    lowered.attributes.update(plan.attributes())  # type: ignore[arg-type]
    return lowered


def _runtime_dim(op: Operation, dim: Sym, outs: tuple[int, ...]) -> RuntimeDim:
    """The plan entry of the dim ``op`` computes: its last result is the size, its first operand's leading
    dim the bound."""
    bound = op.operands[0].type.shape[0]  # type: ignore[attr-defined]
    if isinstance(bound, Sym) and bound.name is None:
        raise lowering_error(op, f"the bound of run-time dim {dim} is an anonymous dim")
    assert dim.name is not None
    return RuntimeDim(dim.name, outs[-1], bound if isinstance(bound, int) else str(bound.name), outs[:-1])
