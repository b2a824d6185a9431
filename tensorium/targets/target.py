"""The Target record: what a kernel is compiled for, and the strings that name one."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from ..errors import TensoriumError
from . import cuda, webgpu, x86

KINDS = ("interp", "cpu", "cuda", "webgpu")
"""Every kind of target: the reference interpreter, the CPU (LLVM) and the GPUs (CUDA, WebGPU)."""
GPU_KINDS = ("cuda", "webgpu")
NUM_THREADS_ENV = "TENSORIUM_NUM_THREADS"


class TargetError(TensoriumError):
    """A target string or description that cannot be used (unknown kind or CPU, foreign host)."""


@dataclass(frozen=True)
class Target:
    """One machine to compile for; frozen and hashable, ``str`` gives the string that names it.

    For the CPU: LLVM's ``triple``, ``cpu`` name and enabled ``features``; derived from those, the
    ``vector_bits`` of the widest vector registers and how many there are, whether they have ``fma``,
    the integer dot-product instructions (``dot_product``: ``avx512vnni``, ``avxvnni``) and the data
    cache sizes in bytes; ``threads`` for parallel loops. ``host`` marks the machine this process runs
    on (its features and caches were read from it, not from a table).
    """

    kind: str
    cpu: str = ""
    triple: str = ""
    features: tuple[str, ...] = ()
    vector_bits: int = 0
    vector_registers: int = 0
    fma: bool = False
    dot_product: tuple[str, ...] = ()
    l1d: int = 0
    l2: int = 0
    l3: int = 0
    threads: int = 1
    limits: tuple[tuple[str, int], ...] = ()
    """A GPU's limits by name, sorted (``webgpu``: the WebGPU spec's names in snake case); see :meth:`limit`."""
    host: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        if self.kind == "cuda":
            return f"cuda:{self.cpu}"
        if self.kind == "webgpu":
            options = webgpu.options_text(self.features, self.limits)
            return f"webgpu:{options}" if options else "webgpu"
        if self.kind != "cpu":
            return self.kind
        return "cpu" if self.host else f"cpu:{self.cpu}"

    def limit(self, name: str) -> int:
        """The GPU limit ``name``; TargetError naming the target when it has none of that name."""
        for key, value in self.limits:
            if key == name:
                return value
        raise TargetError(f"target '{self}' has no limit '{name}'")

    def describe(self) -> str:
        """One line for people: the CPU, its vectors and caches (the GPU architecture and its limits)."""
        if self.kind == "cuda":
            return f"{self} ({self.triple}, {'+'.join(self.features)}): {self.l1d >> 10} KiB shared memory per block"
        if self.kind != "cpu":
            return self.kind
        dots = f", {'+'.join(self.dot_product)}" if self.dot_product else ""
        return (
            f"{self} ({self.cpu}, {self.triple}): {self.vector_registers} x {self.vector_bits}-bit vectors"
            f"{', FMA' if self.fma else ''}{dots}; L1d {self.l1d >> 10} KiB, L2 {self.l2 >> 10} KiB, "
            f"L3 {self.l3 >> 20} MiB; {self.threads} threads"
        )

    def lanes(self, bits: int = 32) -> int:
        """Elements of ``bits`` bits in one vector register (at least 1)."""
        return max(1, self.vector_bits // bits)

    @property
    def llvm_features(self) -> str:
        """The feature string LLVM's target machine is created with.

        AVX-512 CPUs whose LLVM tuning prefers 256-bit vectors (Intel's) would split every 512-bit vector
        the emitter writes; ``-prefer-256-bit`` keeps them whole.
        """
        wide = ["-prefer-256-bit"] if self.vector_bits >= 512 else []
        return ",".join([*(f"+{f}" for f in self.features), *wide])

    def key(self) -> str:
        """A stable digest of everything code generation reads (for caches and tuning records)."""
        text = repr(sorted((k, v) for k, v in asdict(self).items() if k not in ("host", "threads")))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, object]:
        """The target as JSON-able data (artifacts record it)."""
        data = asdict(self)
        data["features"] = list(self.features)
        data["dot_product"] = list(self.dot_product)
        data["limits"] = [list(pair) for pair in self.limits]
        return data

    @staticmethod
    def from_json(data: object) -> Target:
        """The target :meth:`to_json` wrote; TargetError when it is malformed (unknown kind or field, a field
        of the wrong type)."""
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            raise TargetError(f"malformed target record {data!r}")
        fields = Target.__dataclass_fields__
        values: dict[str, object] = {}
        for name, value in data.items():
            if name not in fields:
                raise TargetError(f"malformed target record: unknown field '{name}'")
            if name in ("features", "dot_product"):
                if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                    raise TargetError(f"malformed target record: '{name}' must be a list of strings")
                value = tuple(value)
            elif name == "limits":
                if not isinstance(value, list) or not all(
                    isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int for p in value
                ):
                    raise TargetError("malformed target record: 'limits' must be a list of [name, int] pairs")
                value = tuple((str(k), int(v)) for k, v in value)
            elif type(value) is not (str if name == "kind" else type(fields[name].default)):
                raise TargetError(f"malformed target record: '{name}' is {value!r}")
            values[name] = value
        return Target(**values)  # type: ignore[arg-type]

    def with_threads(self, threads: int) -> Target:
        """The same target with another thread count."""
        return replace(self, threads=threads)

    def missing_on(self, other: Target) -> list[str]:
        """The features this target's code needs that ``other`` (a host) lacks, sorted."""
        have = set(other.features)
        return sorted(f for f in self.features if f not in have)

    def runs_here(self) -> bool:
        """True when code compiled for this target can run on this machine."""
        try:
            self.check_runs_here()
        except TargetError:
            return False
        return True

    def check_runs_here(self, what: str = "the code") -> None:
        """TargetError unless code compiled for this target runs on this machine (naming what is missing)."""
        if self.kind != "cpu":
            return
        here = host_target()
        if self.triple.split("-")[0] != here.triple.split("-")[0]:
            raise TargetError(f"{what} was compiled for {self.triple}, but this host is {here.triple}")
        missing = self.missing_on(here)
        if missing:
            raise TargetError(
                f"{what} was compiled for CPU '{self.cpu}' with features this host ('{here.cpu}') lacks: "
                f"{', '.join(missing)}; compile the model again for this machine (target 'cpu')"
            )


@functools.cache
def _cores() -> int:
    """The machine's cores (asked once: every kernel launch reads the thread count)."""
    return os.cpu_count() or 1


def default_threads() -> int:
    """``TENSORIUM_NUM_THREADS`` when set, else the machine's cores: the threads parallel loops run on."""
    text = os.environ.get(NUM_THREADS_ENV, "").strip()
    if not text:
        return _cores()
    if not text.isdigit() or int(text) < 1:
        raise TargetError(f"{NUM_THREADS_ENV} must be a positive integer, got '{text}'")
    return int(text)


def _cpu_target(triple: str, cpu: str, features: tuple[str, ...], caches: tuple[int, int, int], host: bool) -> Target:
    have = set(features)
    bits = 512 if "avx512f" in have else 256 if "avx" in have else 128
    return Target(
        kind="cpu",
        cpu=cpu,
        triple=triple,
        features=tuple(sorted(have)),
        vector_bits=bits,
        vector_registers=32 if bits == 512 else 16,
        fma="fma" in have,
        dot_product=tuple(f for f in ("avx512vnni", "avxvnni") if f in have),
        l1d=caches[0],
        l2=caches[1],
        l3=caches[2],
        threads=default_threads(),
        host=host,
    )


@functools.cache
def _host() -> Target:
    from llvmlite import binding as llvm

    llvm.initialize_native_target()
    try:
        flags = llvm.get_host_cpu_features().flatten().split(",")
    except RuntimeError:
        flags = []
    features = tuple(f[1:] for f in flags if f.startswith("+"))
    caches = x86.host_caches() or x86.DEFAULT_CACHES["default"]
    return _cpu_target(llvm.get_process_triple(), llvm.get_host_cpu_name(), features, caches, host=True)


def host_target() -> Target:
    """This machine as LLVM sees it (CPU name and features), with caches from the OS and the thread count."""
    host = _host()
    threads = default_threads()
    return host if host.threads == threads else host.with_threads(threads)


@functools.cache
def _named_cpu(name: str) -> Target:
    triple = _host().triple if _host().triple.startswith("x86_64") else "x86_64-unknown-linux-gnu"
    features = x86.CPUS.get(name)
    if features is None:
        features = x86.probe_features(triple, name)
    if features is None:
        known = ", ".join(sorted(x86.CPUS))
        raise TargetError(f"unknown CPU '{name}': LLVM does not know it (known here: {known})")
    caches = x86.DEFAULT_CACHES["x86-64-v4" if "avx512f" in features else "default"]
    return _cpu_target(triple, name, tuple(features), caches, host=False)


def cuda_target(arch: str = "") -> Target:
    """The CUDA target for GPU architecture ``arch`` (``sm_90``); without one, the device's when a driver and
    GPU answer, else :data:`cuda.DEFAULT_ARCH`. TargetError for an architecture not supported, naming those that are."""
    asked = "" if arch else cuda.device_arch() or ""
    found = arch or asked or cuda.DEFAULT_ARCH
    spec = cuda.ARCHS.get(found)
    if spec is None:
        where = f"target 'cuda:{arch}'" if arch else f"the GPU of this machine ({found})"
        raise TargetError(f"{where}: unsupported CUDA architecture; supported: {', '.join(cuda.ARCHS)}")
    return Target(
        kind="cuda",
        cpu=found,
        triple=cuda.TRIPLE,
        features=(spec.ptx,),
        l1d=spec.shared_bytes,
        host=bool(asked),
    )


def webgpu_target(options: str = "") -> Target:
    """The WebGPU target: the spec's minimum limits, changed by ``options`` (``shader-f16,NAME=VALUE,...``;
    see :mod:`tensorium.targets.webgpu`); TargetError for an unknown option."""
    try:
        features, limits = webgpu.parse_options(options)
    except webgpu.WebGPUOptionError as e:
        raise TargetError(f"target 'webgpu:{options}': {e}") from None
    return Target(kind="webgpu", features=features, limits=limits)


GPU_TARGETS: dict[str, Callable[[str], Target]] = {"cuda": cuda_target, "webgpu": webgpu_target}
"""How each GPU kind's string argument (after ``kind:``) becomes a Target."""


def parse_target(spec: str | Target) -> Target:
    """The target named by ``spec``: ``interp``, ``cpu`` (this machine), ``cpu:NAME`` (an x86 CPU LLVM
    knows), a GPU kind of :data:`GPU_TARGETS` (``cuda:sm_90``, ``webgpu``), or a Target as it is; TargetError
    for anything else, naming what is accepted."""
    if isinstance(spec, Target):
        return spec
    if not isinstance(spec, str):
        raise TargetError(f"target must be a string or a Target, got {type(spec).__name__}")
    kind, _, arg = spec.strip().partition(":")
    if kind == "interp" and not arg:
        return Target("interp")
    if kind == "cpu":
        if not arg or arg == "host":
            return host_target()
        target = _named_cpu(arg)
        threads = default_threads()
        return target if target.threads == threads else target.with_threads(threads)
    if kind in GPU_TARGETS:
        return GPU_TARGETS[kind](arg)
    raise TargetError(
        f"unknown target '{spec}'; use 'cpu' (this machine), 'cpu:NAME' (e.g. cpu:x86-64-v3, cpu:znver4), "
        "'cuda[:sm_XX]', 'webgpu' or 'interp'"
    )
