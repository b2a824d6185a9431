"""Search spaces of kernels: the knobs a kernel family declares, points in them, and structural keys.

A kernel family (GEMM, matrix-vector, convolution, reduction, ...) declares for a graph op and a
:class:`~tensorium.targets.Target` a :class:`Space`: knobs with their legal values. A :class:`Config`
is one point of it; the lowering builds the kernel at that point, and every legal point computes the
same result. The family's default point comes from a rule over the target (registers, lanes, caches).
Configs print and parse (``gemm{mr=6,nv=4,kc=256}``) and a kernel's :func:`kernel_key` is the same for
the same kernel in any model or process, so tuning records can store ``key -> config``.

    space = kernel_space(op, target)        # None for ops without knobs
    for config in space.points(): ...       # every legal point
    kernel = lower_op(op, "k", target=target, config=config)
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.core import Operation, Value
from ..ir.printer import format_attr
from ..targets import Target

Setting = int | bool | str


@dataclass(frozen=True)
class Knob:
    """One parameter of a kernel family and its legal values (the first is not necessarily the default)."""

    name: str
    values: tuple[Setting, ...]
    doc: str = ""

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"knob '{self.name}' has no legal value")


def _format(value: Setting) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read(text: str) -> Setting:
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


@dataclass(frozen=True)
class Config:
    """A point of a kernel family's space: ``family{knob=value,...}`` in text."""

    family: str
    values: tuple[tuple[str, Setting], ...]

    def __str__(self) -> str:
        return f"{self.family}{{{','.join(f'{k}={_format(v)}' for k, v in self.values)}}}"

    def __getitem__(self, name: str) -> Setting:
        for key, value in self.values:
            if key == name:
                return value
        raise KeyError(f"config {self} has no knob '{name}'")

    def int(self, name: str) -> int:
        """Knob ``name`` as an int."""
        value = self[name]
        assert isinstance(value, int)
        return int(value)

    def as_dict(self) -> dict[str, Setting]:
        return dict(self.values)

    def replace(self, **changes: Setting) -> Config:
        """The same point with some knobs changed (not checked: see :meth:`Space.check`)."""
        unknown = set(changes) - {k for k, _ in self.values}
        if unknown:
            raise ScheduleError(f"config {self} has no knob {', '.join(sorted(unknown))}")
        return Config(self.family, tuple((k, changes.get(k, v)) for k, v in self.values))

    @staticmethod
    def parse(text: str) -> Config:
        """The config written as ``family{knob=value,...}``; ScheduleError on bad text."""
        m = re.fullmatch(r"\s*([a-z][\w-]*)\s*\{(.*)\}\s*", text)
        if m is None:
            raise ScheduleError(f"bad kernel config '{text}' (expected like 'gemm{{mr=6,nv=4}}')")
        values: list[tuple[str, Setting]] = []
        for part in filter(None, (p.strip() for p in m.group(2).split(","))):
            key, eq, value = (s.strip() for s in part.partition("="))
            if not eq or not key or not value:
                raise ScheduleError(f"bad knob '{part}' in kernel config '{text}' (expected name=value)")
            values.append((key, _read(value)))
        return Config(m.group(1), tuple(values))


@dataclass(frozen=True)
class Space:
    """The legal points of one kernel: the product of its knobs' values, minus what ``valid`` rejects."""

    family: str
    knobs: tuple[Knob, ...]
    valid: Callable[[Mapping[str, Setting]], bool] | None = None

    def __str__(self) -> str:
        return f"{self.family}: " + "; ".join(f"{k.name} in {list(map(_format, k.values))}" for k in self.knobs)

    def _legal(self, values: Mapping[str, Setting]) -> bool:
        return self.valid is None or self.valid(values)

    def points(self) -> Iterator[Config]:
        """Every legal point, in knob order."""
        names = [k.name for k in self.knobs]
        for combo in itertools.product(*(k.values for k in self.knobs)):
            values = dict(zip(names, combo))
            if self._legal(values):
                yield Config(self.family, tuple(values.items()))

    def size(self) -> int:
        """How many legal points there are."""
        return sum(1 for _ in self.points())

    def sample(self, rng: random.Random, tries: int = 1000) -> Config:
        """A random legal point."""
        for _ in range(tries):
            values = {k.name: rng.choice(k.values) for k in self.knobs}
            if self._legal(values):
                return Config(self.family, tuple(values.items()))
        return rng.choice(list(self.points()))

    def check(self, config: Config) -> Config:
        """``config`` when it is a legal point of this space (in knob order); ScheduleError naming the knob."""
        if config.family != self.family:
            raise ScheduleError(f"config {config} is for a '{config.family}' kernel, not '{self.family}'")
        given = config.as_dict()
        for knob in self.knobs:
            if knob.name not in given:
                raise ScheduleError(f"config {config} lacks knob '{knob.name}' (legal: {list(knob.values)})")
            if given[knob.name] not in knob.values or type(given[knob.name]) is not type(knob.values[0]):
                legal = ", ".join(map(_format, knob.values))
                raise ScheduleError(f"config {config}: {knob.name}={_format(given[knob.name])} is not one of {legal}")
        extra = set(given) - {k.name for k in self.knobs}
        if extra:
            raise ScheduleError(f"config {config}: unknown knob {', '.join(sorted(extra))} for '{self.family}'")
        if not self._legal(given):
            raise ScheduleError(f"config {config} combines knobs in a way '{self.family}' kernels cannot build")
        return Config(self.family, tuple((k.name, given[k.name]) for k in self.knobs))


SpaceRule = Callable[[Operation, Target], Space | None]
DefaultRule = Callable[[Operation, Target, Space], Config]


@dataclass(frozen=True)
class Family:
    """A kernel family: the graph ops it lowers, its space for an op and target, and its default rule."""

    name: str
    ops: tuple[str, ...]
    space: SpaceRule
    default: DefaultRule
    epilogues: bool = False
    """Whether a target family's lowering also builds fused groups whose anchor reads the group's inputs directly
    and whose other ops come after it (its stores of C become the epilogue's: :mod:`.fused`)."""
    fallback: bool = False
    """Whether a fused group takes this family only when none of its ops has another (elementwise ops: a group of
    a GEMM and its epilogue is a GEMM kernel)."""


FAMILIES: dict[str, Family] = {}
"""Kernel families by the graph op names they lower."""


TARGET_FAMILIES: dict[tuple[str, str], Family] = {}
"""Families one target kind builds some ops with instead of the general one: (kind, op name) -> family."""


def register_target_family(kind: str, family: Family) -> Family:
    """Declare ``family`` for its ops on targets of ``kind``; where its space rule gives None for an op, the op
    keeps its general family."""
    for name in family.ops:
        TARGET_FAMILIES[(kind, name)] = family
    return family


def register_family(family: Family) -> Family:
    """Declare ``family`` for each of its ops."""
    for name in family.ops:
        FAMILIES[name] = family
    return family


def anchor_of(op: Operation) -> Operation | None:
    """The op whose family gives a kernel its space: ``op`` itself, or for a fused group the first op of its
    region that has a family (the GEMM, convolution or reduction the others are fused into); the first op of a
    group whose ops are all of :attr:`Family.fallback` families (elementwise ones)."""
    if op.name in FAMILIES:
        return op
    if op.name == "graph.fused":
        body = [inner for inner in op.regions[0].block.ops if not inner.has_trait("terminator")]
        found = [inner for inner in body if inner.name in FAMILIES]
        anchor = next((inner for inner in found if not FAMILIES[inner.name].fallback), None)
        if anchor is None and found and len(found) == len(body):  # a group of fallback ops only
            anchor = found[0]
        return anchor
    return None


def epilogue_only(group: Operation, anchor: Operation) -> bool:
    """Whether fused ``group``'s ``anchor`` reads only the group's inputs (nothing is computed into its operands), so
    that the group is the anchor followed by an epilogue."""
    inputs = set(group.regions[0].block.args)
    return all(v in inputs for v in anchor.operands)


GPU_SPACE_KINDS = ("cuda", "webgpu")
"""Target kinds whose kernel spaces carry the GPU knobs below (the CUDA and WebGPU schedules read them)."""
GPU_THREADS = (32, 64, 128, 256, 512, 1024)
"""Legal threads per block on GPU targets: whole warps, up to the most a block holds."""
GPU_DEFAULT_THREADS = 256
GPU_PREFERRED: dict[str, tuple[Setting, ...]] = {"pack_b": ("none", "panel")}
"""Knobs whose default a GPU target overrides, with the values it prefers in order: a GEMM packing all of B
into one buffer of run-time size cannot allocate it inside a kernel."""


def _gpu_threads(target: Target) -> tuple[int, ...]:
    """:data:`GPU_THREADS` within the target's ``max_compute_invocations_per_workgroup`` where it has that limit
    (WebGPU: 256 by default, fewer where tests set it lower)."""
    cap = dict(target.limits).get("max_compute_invocations_per_workgroup")
    return GPU_THREADS if cap is None else tuple(t for t in GPU_THREADS if t <= cap)


def _for_target(space: Space | None, target: Target) -> Space | None:
    """``space`` on ``target``: on GPU targets, with the ``threads`` knob (threads per block) added, unless the
    target's workgroups hold fewer threads than a warp."""
    threads = _gpu_threads(target)
    if space is None or target.kind not in GPU_SPACE_KINDS or not threads:
        return space
    return Space(space.family, (*space.knobs, Knob("threads", threads, "GPU threads per block")), space.valid)


def _gpu_default(config: Config, space: Space) -> Config:
    """The family's default point adjusted for a GPU target: preferred values (:data:`GPU_PREFERRED`), threads
    (:data:`GPU_DEFAULT_THREADS`, or the most the target allows when that is fewer)."""
    threads = next(k.values for k in space.knobs if k.name == "threads")
    values = {**config.as_dict(), "threads": GPU_DEFAULT_THREADS if GPU_DEFAULT_THREADS in threads else max(threads)}
    for knob in space.knobs:
        for value in GPU_PREFERRED.get(knob.name, ()):
            trial = values | {knob.name: value}
            if value in knob.values and (space.valid is None or space.valid(trial)):
                values = trial
                break
    return Config(config.family, tuple(values.items()))


def _family_and_space(op: Operation, target: Target) -> tuple[Family, Space | None, Space | None] | None:
    """The family of ``op``'s kernel on ``target``, its own space and the space on ``target`` (None: no knobs)."""
    anchor = anchor_of(op)
    if anchor is None:
        return None
    special = TARGET_FAMILIES.get((target.kind, anchor.name))
    if special is not None and anchor is not op and not (special.epilogues and epilogue_only(op, anchor)):
        special = None
    if special is not None:
        space = special.space(anchor, target)
        if space is not None:
            return special, space, space
    family = FAMILIES[anchor.name]
    own = family.space(anchor, target)
    return family, own, _for_target(own, target)


def kernel_space(op: Operation, target: Target) -> Space | None:
    """The search space of the kernel for graph op ``op`` (or fused group) on ``target``; None without knobs."""
    found = _family_and_space(op, target)
    return None if found is None else found[2]


def default_config(op: Operation, target: Target) -> Config | None:
    """The point of ``op``'s space the target's rule picks; None without knobs."""
    found = _family_and_space(op, target)
    if found is None:
        return None
    family, own, space = found
    if own is None or space is None:
        return None
    anchor = anchor_of(op)
    assert anchor is not None
    config = family.default(anchor, target, own)
    if target.kind in GPU_SPACE_KINDS and own is not space:
        config = _gpu_default(config, space)
    return space.check(config)


@dataclass(frozen=True)
class TunableKernel:
    """A kernel of a module with knobs: its key, the graph op (or fused group), its space and default point."""

    key: str
    op: Operation
    space: Space
    default: Config

    def __str__(self) -> str:
        return f"{self.key} {self.op.name}: {self.default} of {self.space.size()} points"


def tunable_kernels(module: Operation, target: Target, func: str = "main") -> list[TunableKernel]:
    """The kernels of ``@func`` that have a search space on ``target``, once per key, in program order: what
    an autotuner searches (``tensorium.compile(..., schedules={kernel.key: config})`` applies its choices)."""
    from ..ir.dialects.builtin import func_body, lookup_func

    main = lookup_func(module, func)
    if main is None:
        raise ScheduleError(f"no function @{func} in the module")
    found: dict[str, TunableKernel] = {}
    for op in func_body(main).ops:
        space = kernel_space(op, target)
        if space is None:
            continue
        key = kernel_key(op)
        if key not in found:
            config = default_config(op, target)
            assert config is not None
            found[key] = TunableKernel(key, op, space, config)
    return list(found.values())


def kernel_key(op: Operation) -> str:
    """A structural key of the kernel for ``op``: equal for equal ops (names, types, attributes, fused
    region) in any model or process, whatever the surrounding program and SSA names."""
    return hashlib.sha256(structure(op).encode()).hexdigest()[:20]


def structure(op: Operation) -> str:
    """The text :func:`kernel_key` hashes: ``op`` with its values numbered by first appearance."""
    numbers: dict[int, int] = {}

    def ref(v: Value) -> str:
        return f"%{numbers.setdefault(id(v), len(numbers))}"

    def describe(o: Operation) -> list[str]:
        attrs = ",".join(f"{k}={format_attr(v, digest=True)}" for k, v in sorted(o.attributes.items()))
        operands = ",".join(f"{ref(v)}:{v.type}" for v in o.operands)
        results = ",".join(f"{ref(r)}:{r.type}" for r in o.results)
        lines = [f"{results}={o.name}({operands}){{{attrs}}}"]
        for region in o.regions:
            for block in region.blocks:
                lines.append("^(" + ",".join(f"{ref(a)}:{a.type}" for a in block.args) + ")")
                for inner in block.ops:
                    lines += describe(inner)
        return lines

    return "\n".join(describe(op))
