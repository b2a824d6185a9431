"""``tensorium.compile`` and ``tensorium.load``: models in, callables out.

``compile`` takes a torch ``nn.Module``, a Python function or an ``.onnx`` path and returns a
:class:`CompiledModel`. Each call checks a guard (the shapes and dtypes of the array arguments, the
values of static ones); a new guard imports the model for those shapes (torch.export, the ONNX
importer or Tensorium's tracer), runs the pass pipeline, compiles for the target (``cpu``: loop
kernels through LLVM, :mod:`tensorium.backends.cpu`; ``interp``: nothing) and keeps the result, so
later calls with the same guard only execute. Dims named in ``dynamic=`` stay symbolic and are left
out of the guard.
Compiled artifacts are cached in memory and on disk (:mod:`tensorium.runtime.cache`).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .autotune.records import TuningDB, open_db
from .errors import TensoriumError
from .frontend.common import ImportedGraph
from .frontend.tracer.tensor import DynamicSpec, bind_arguments, is_static, trace_function
from .gc_pause import old_objects_frozen
from .ir.core import Operation
from .ir.dialects.builtin import func_body, func_type, lookup_func
from .ir.dialects.quant.config import QuantConfig
from .ir.printer import fingerprint
from .ir.types import FloatType, Sym, TensorType, Type, storage_dtype
from .ir.verifier import verify
from .lowering.space import Config, TunableKernel, tunable_kernels
from .runtime import cache as _cache
from .runtime.artifact import (
    Artifact,
    Tree,
    artifact_stats,
    build_executable,
    read_artifact,
    unflatten_tree,
    write_artifact,
)
from .targets import Target, TargetError, parse_target

__all__ = [
    "DEFAULT_PIPELINE",
    "TARGETS",
    "CacheInfo",
    "CompiledModel",
    "LoadedModel",
    "compile",
    "dynamo_backend",
    "load",
]

DEFAULT_PIPELINE = "canonicalize,fold-batch-norm,cse,fold,dce"
TARGETS = ("interp", "cpu", "webgpu", "cuda")
"""Target kinds that can execute today (``cpu`` takes a CPU name too: ``cpu:x86-64-v3``)."""
TARGET_PASSES = {
    "interp": "",
    "cpu": "layout,fuse-siblings,fuse-attention,pack-quant,pack-weights,fuse",
    "webgpu": "fuse",
    "cuda": "fuse,pack-quant-gpu",
}
"""Passes each target kind appends to every pipeline, what its code generator relies on: for the CPU, constant
matmul weights packed into the GEMM micro-kernel's panel layout at compile time instead of at every run, and
ops grouped into fused kernels; for CUDA, constant k-bit matmul weights left unfused packed for a warp's 32 lanes
(fused ones keep the simple dequantizing kernel). Passes that read the target get it as their ``target`` option."""
TARGET_AWARE_PASSES = ("pack-quant", "pack-weights")
CODEGEN_STAGES = ("schedule", "decompose", "memory-plan")
"""Stages of code generation that ``disable=`` can turn off besides passes: ``schedule`` (default schedules
of kernels the lowering leaves unscheduled), ``decompose`` (math the emitter lacks rewritten into basic loop
ops; the LLVM emitter then uses its own fallbacks) and ``memory-plan`` (intermediate buffers share memory
when their lifetimes do not overlap, and elementwise kernels write in place)."""


def check_target(target: str | Target) -> Target:
    """The Target ``target`` names (:func:`~tensorium.targets.parse_target`), when it can execute today;
    TensoriumError otherwise, naming what is accepted."""
    parsed = parse_target(target)
    if parsed.kind not in TARGETS:
        raise TargetError(f"target '{parsed}': the {parsed.kind.upper()} backend is not available yet")
    return parsed


def check_schedules(schedules: Mapping[str, Config | str] | None) -> dict[str, Config]:
    """``schedules`` (kernel key -> config or its text) as configs; ScheduleError for text that does not parse."""
    if schedules is None:
        return {}
    if not isinstance(schedules, Mapping):
        raise TensoriumError("schedules= must map kernel keys to configs, e.g. {'3f2a...': 'gemm{mr=6,nv=4,...}'}")
    return {str(k): v if isinstance(v, Config) else Config.parse(str(v)) for k, v in schedules.items()}


def check_pipeline(
    passes: str | None,
    target: str | Target = "interp",
    disable: Sequence[str] = (),
    quantize: QuantConfig | str | None = None,
) -> str:
    """The pipeline text to run: ``passes`` (the default when None), the ``quantize`` pass of ``quantize``
    when given, then the target's own passes (:data:`TARGET_PASSES`), without the passes named in
    ``disable``; PassError when it names an unknown pass or a bad quantize option, TensoriumError when
    ``disable`` names something that is neither a pass nor a codegen stage."""
    from .passes import parse_pipeline, pass_names

    known = [*pass_names(), *CODEGEN_STAGES]
    for name in disable:
        if name not in known:
            raise TensoriumError(f"disable: '{name}' is not a pass or a codegen stage; known: {', '.join(known)}")
    parsed = parse_target(target)
    own = TARGET_PASSES[parsed.kind]
    if own and parsed.kind == "cpu" and not parsed.host:
        names = own.split(",")
        own = ",".join(f'{n}{{target="{parsed}"}}' if n in TARGET_AWARE_PASSES else n for n in names)
    quantized = QuantConfig.of(quantize).pass_text() if quantize is not None else ""
    text = ",".join(p for p in (DEFAULT_PIPELINE if passes is None else passes, quantized, own) if p)
    pipeline = parse_pipeline(text)
    return ",".join(str(p) for p in pipeline if p.name not in disable)


def disabled_stages(disable: Sequence[str]) -> tuple[str, ...]:
    """The codegen stages among the names of ``disable`` (the passes are left out of the pipeline instead)."""
    return tuple(n for n in CODEGEN_STAGES if n in disable)


def _torch() -> Any:
    """The torch module when it is already imported (so plain numpy use never imports torch)."""
    return sys.modules.get("torch")


def _is_torch_tensor(x: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _is_torch_module(x: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.nn.Module)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    return [value]


def _has_torch(args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
    torch = _torch()
    if torch is None:
        return False
    return any(isinstance(leaf, torch.Tensor) for leaf in _leaves([list(args), dict(kwargs)]))


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    """The name of a numpy or torch dtype without torch's prefix, kept per dtype (numpy builds the name in
    Python, a few microseconds, and the guards of a compiled model name every input's dtype on every call)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def to_numpy(x: Any) -> np.ndarray:
    """A torch tensor or array-like as a numpy array (bf16 tensors become float32, as the IR stores bf16)."""
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        t = x.detach() if x.requires_grad else x  # each step below costs a new tensor: only where needed
        if not t.is_cpu:
            t = t.cpu()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return np.asarray(t.numpy())
    return np.asarray(x)


def to_torch(array: np.ndarray, t: Type | None = None) -> Any:
    """A numpy array as a torch tensor (IR bf16 results go back to torch.bfloat16)."""
    torch = _torch()
    assert torch is not None
    data = np.asarray(array, order="C")  # keeps 0-d shapes
    if not data.flags.writeable:  # an output that is a constant of the model: the caller gets a copy
        data = data.copy()
    out = torch.from_numpy(data)
    if isinstance(t, TensorType) and t.element == _BF16:
        out = out.to(torch.bfloat16)
    return out


_BF16 = FloatType("bf16")


def _map_leaves(value: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_map_leaves(v, fn) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_map_leaves(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_leaves(v, fn) for k, v in value.items()}
    return fn(value)


# --- compiling one imported graph ------------------------------------------------------------------
@dataclass
class CacheInfo:
    """What a CompiledModel did so far: guard misses (imports), cache hits and full compiles."""

    imports: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    compiles: int = 0
    specializations: int = 0


def compile_graph(
    imported: ImportedGraph,
    target: Target,
    pipeline: str,
    tree: Tree | None,
    cache: bool = True,
    info: CacheInfo | None = None,
    disabled: tuple[str, ...] = (),
    configs: Mapping[str, Config] | None = None,
    tuning: TuningDB | None = None,
) -> Artifact:
    """The artifact of an imported graph: from the cache when there, else verified, optimized and stored.

    ``disabled`` names codegen stages to leave out (:data:`CODEGEN_STAGES`); ``configs`` gives kernels'
    search-space points by kernel key; ``tuning`` is the records database whose best points apply to the
    kernels ``configs`` leaves open (docs/autotune.md)."""
    configs = dict(configs or {})
    module = imported.module
    key = _artifact_key(imported, target, pipeline, tree, disabled, configs) if cache else ""
    tuned = tuning.fingerprint(target) if cache and tuning is not None else ""
    if tuned:
        key = hashlib.sha256(f"{key} tuned {tuned}".encode()).hexdigest()
    if cache:
        found, where = _cache.lookup(key)
        if found is not None:
            if info is not None:
                if where == "memory":
                    info.memory_hits += 1
                else:
                    info.disk_hits += 1
            return found.with_own_generator()
    from .passes import PassManager

    verify(module)
    PassManager.parse(pipeline).run(module)
    verify(module)
    if tuning is not None:
        configs = tuning.schedules(module, target) | configs
    artifact = artifact_of(imported, target, pipeline, tree, disabled)
    artifact.configs = configs
    build_executable(artifact)
    if info is not None:
        info.compiles += 1
    if cache:
        _cache.store(key, artifact)
        return artifact.with_own_generator()  # the cached one's counter stays at (0, 0)
    return artifact


def _artifact_key(
    imported: ImportedGraph,
    target: Target,
    pipeline: str,
    tree: Tree | None,
    disabled: tuple[str, ...],
    configs: Mapping[str, Config],
) -> str:
    """The cache key of compiling ``imported`` so (hashing every weight: only worth it when caching)."""
    text = fingerprint(imported.module)
    lifted = imported.metadata.get("params") or {}
    if lifted:
        digest = hashlib.sha256()
        for name, array in lifted.items():
            digest.update(name.encode() + np.ascontiguousarray(array).tobytes())
        text += f"\n// bound parameters {digest.hexdigest()}"
    stages = pipeline + "".join(f" -{name}" for name in disabled)
    stages += "".join(f" {k}={v}" for k, v in sorted(configs.items()))
    return _cache.cache_key(text, imported.input_names, imported.output_names, tree, target.key(), stages)


def artifact_of(
    imported: ImportedGraph, target: Target, pipeline: str, tree: Tree | None, disabled: tuple[str, ...] = ()
) -> Artifact:
    """An Artifact for an already optimized imported graph (frontend parameters become bound parameters)."""
    main = lookup_func(imported.module, "main")
    if main is None:
        raise TensoriumError("the imported module has no @main")
    args = func_body(main).args
    lifted = dict(imported.metadata.get("params") or {})
    user = [(n, a.type) for n, a in zip(imported.input_names, args) if n not in lifted]
    return Artifact(
        module=imported.module,
        inputs=user,
        outputs=list(zip(imported.output_names, func_type(main).results)),
        target=target,
        pipeline=pipeline,
        output_tree=tree,
        params=[(n, np.asarray(a)) for n, a in lifted.items()],
        source=dict(imported.metadata),
        disabled=disabled,
    )


def json_tree(imported: ImportedGraph) -> Tree | None:
    """The output tree of an imported graph in the artifact's JSON form (None: a flat tuple)."""
    tree = imported.output_tree
    if tree is None or (isinstance(tree, dict) and "type" in tree):
        return tree
    return _mark_numbers(_treespec_json(tree), set(imported.metadata.get("number_outputs") or ()))


def _mark_numbers(tree: Tree | None, numbers: set[int]) -> Tree | None:
    """``tree`` with the leaves at the flat positions ``numbers`` (outputs the model gave as Python numbers)
    marked ``{"type": "number"}``, so that an artifact returns them as numbers too."""
    if tree is None or not numbers:
        return tree
    count = 0

    def mark(t: Tree) -> Tree:
        nonlocal count
        if t["type"] == "leaf":
            count += 1
            return {"type": "number"} if count - 1 in numbers else t
        if "children" in t:
            return {**t, "children": [mark(c) for c in t["children"]]}
        return t

    return mark(tree)


def _treespec_json(spec: Any) -> Tree | None:
    """A torch.utils._pytree TreeSpec as a JSON tree (None when it holds containers JSON cannot describe)."""
    if not (hasattr(spec, "is_leaf") and hasattr(spec, "children")):
        return None
    if spec.is_leaf():
        return {"type": "leaf"}
    children = [_treespec_json(c) for c in spec.children()]
    if any(c is None for c in children):
        return None
    kind = spec.type
    if kind is type(None):
        return {"type": "none"}
    if kind is list:
        return {"type": "list", "children": children}
    if isinstance(kind, type) and issubclass(kind, tuple):
        return {"type": "tuple", "children": children}
    keys = spec.context
    if isinstance(keys, (list, tuple)) and all(isinstance(k, (str, int)) for k in keys) and len(keys) == len(children):
        return {"type": "dict", "keys": list(keys), "children": children}
    return None


# --- calling an artifact -----------------------------------------------------------------------------
def check_inputs(artifact: Artifact, arrays: Sequence[np.ndarray]) -> None:
    """TensoriumError unless ``arrays`` fit the artifact's inputs in number, dtype and rank."""
    if len(arrays) != len(artifact.inputs):
        raise TensoriumError(f"the model takes {len(artifact.inputs)} inputs, got {len(arrays)}")
    for (name, t), a in zip(artifact.inputs, arrays):
        if not isinstance(t, TensorType):
            continue
        if a.dtype != storage_dtype(t.element):
            raise TensoriumError(f"input '{name}': expected dtype {storage_dtype(t.element)} ({t}), got {a.dtype}")
        if a.ndim != t.rank:
            raise TensoriumError(f"input '{name}': expected rank {t.rank} ({t}), got shape {list(a.shape)}")


def check_dim_ranges(
    artifact: Artifact, arrays: Sequence[np.ndarray], ranges: Mapping[str, tuple[int, int | None]]
) -> None:
    """TensoriumError when a symbolic dim of ``arrays`` lies outside the sizes torch.export proved the graph
    for (``ranges``: name -> (least, most)): the graph's static slices and gathers assume them, so a run
    outside would read past its inputs."""
    if not ranges:
        return
    for (name, t), a in zip(artifact.inputs, arrays):
        if not isinstance(t, TensorType):
            continue
        for axis, d in enumerate(t.shape):
            if not isinstance(d, Sym) or d.name is None or d.name not in ranges:
                continue
            dim, (least, most) = d.name, ranges[d.name]
            size = int(a.shape[axis])
            if size < least or (most is not None and size > most):
                span = f"{least}..{most}" if most is not None else f"at least {least}"
                raise TensoriumError(
                    f"input '{name}': dim {axis} ({dim}) is {size}, but torch.export proved the model for "
                    f"{dim} {span} (its code slices or indexes that dim with fixed bounds); compile with "
                    f"static shapes for this size, or export for a range that includes it"
                )


def order_inputs(names: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
    """Positional and keyword inputs arranged in ``names`` order; TensoriumError when they do not fit."""
    if len(args) > len(names):
        raise TensoriumError(f"the model takes {len(names)} inputs, got {len(args)} positional arguments")
    given = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise TensoriumError(f"the model has no input '{key}'; inputs are {', '.join(names)}")
        if key in given:
            raise TensoriumError(f"input '{key}' given twice")
        given[key] = value
    missing = [n for n in names if n not in given]
    if missing:
        raise TensoriumError(f"missing input{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    return [given[n] for n in names]


class LoadedModel:
    """A callable over an artifact: arrays in (numpy or torch, positional or by input name), same kind out."""

    def __init__(self, artifact: Artifact):
        self.artifact = artifact

    @property
    def module(self) -> Operation:
        return self.artifact.module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        torch_mode = _has_torch(args, kwargs)
        values = order_inputs(self.artifact.input_names, args, kwargs)
        arrays = [to_numpy(v) for v in values]
        check_inputs(self.artifact, arrays)
        outs = self.artifact.run(arrays)
        return rebuild(self.artifact, outs, torch_mode)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the artifact folder to ``path``."""
        return write_artifact(self.artifact, path)

    def manual_seed(self, seed: int) -> None:
        """Restart the random ops' draws at ``seed``: the calls that follow draw the same numbers every time
        this is called with the same seed (see :meth:`Artifact.manual_seed`)."""
        self.artifact.manual_seed(seed)

    def stats(self) -> dict[str, Any]:
        """Kernels per call and peak intermediate memory (see :func:`tensorium.runtime.artifact.artifact_stats`)."""
        return artifact_stats(self.artifact)

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {t}" for n, t in self.artifact.inputs)
        return f"<LoadedModel ({ins}) target={self.artifact.target}>"


def rebuild(artifact: Artifact, outs: list[np.ndarray], torch_mode: bool) -> Any:
    """Flat outputs as the kind of arrays the caller gave, nested as the artifact's output tree says."""
    if torch_mode:
        leaves: list[Any] = [to_torch(a, t) for a, (_, t) in zip(outs, artifact.outputs)]
    else:
        leaves = list(outs)
    return unflatten_tree(artifact.output_tree, leaves)


def load(path: str | os.PathLike[str]) -> LoadedModel:
    """Load an artifact folder written by ``tensorium compile`` or ``CompiledModel.save``."""
    artifact = read_artifact(path)
    check_target(artifact.target)
    artifact.target.check_runs_here(str(path))
    return LoadedModel(artifact)


# --- compile() -------------------------------------------------------------------------------------
@dataclass
class _Specialization:
    """One guard's compiled artifact and the imported graph (whose frontend rebuilds inputs and outputs)."""

    artifact: Artifact
    imported: ImportedGraph


class CompiledModel:
    """The callable ``tensorium.compile`` returns: specializes on input shapes and dtypes at each new guard."""

    def __init__(
        self,
        model: Any,
        target: str | Target = "cpu",
        passes: str | None = None,
        dynamic: DynamicSpec | None = None,
        cache: bool = True,
        params: str = "constants",
        disable: Sequence[str] = (),
        schedules: Mapping[str, Config | str] | None = None,
        quantize: QuantConfig | str | None = None,
        tuning_db: TuningDB | str | os.PathLike[str] | bool | None = None,
    ):
        if params not in ("constants", "inputs"):
            raise TensoriumError(f"params must be 'constants' or 'inputs', got {params!r}")
        self.model = model
        self.target = check_target(target)
        self.schedules = check_schedules(schedules)
        self.tuning = open_db(tuning_db)
        self.pipeline = check_pipeline(passes, self.target, disable, quantize)
        self.disabled = disabled_stages(disable)
        self.dynamic = _check_dynamic(dynamic)
        self.cache = cache
        self.params = params
        self._specs: dict[Any, _Specialization] = {}
        self._info = CacheInfo()
        self._last: _Specialization | None = None
        self._fallback: Any = None
        self._onnx: Any = None
        if isinstance(model, (str, os.PathLike)) or type(model).__name__ == "ModelProto":
            self._kind = "onnx"
        elif _is_torch_module(model):
            self._kind = "torch"
        elif callable(model):
            self._kind = "function"
        else:
            raise TensoriumError(
                f"cannot compile a {type(model).__name__}: give a torch.nn.Module, a function or an .onnx path"
            )
        if self._kind == "onnx" and isinstance(model, (str, os.PathLike)) and not str(model).endswith(".onnx"):
            raise TensoriumError(f"{model}: expected a path to an .onnx file")

    # public ----------------------------------------------------------------------------------------
    @property
    def module(self) -> Operation:
        """The IR of the most recently compiled specialization."""
        if self._last is None:
            raise TensoriumError("nothing is compiled yet: call the model once first")
        return self._last.artifact.module

    @property
    def artifact(self) -> Artifact:
        """The artifact of the most recently compiled specialization."""
        if self._last is None:
            raise TensoriumError("nothing is compiled yet: call the model once first")
        return self._last.artifact

    def tunable_kernels(self) -> list[TunableKernel]:
        """The most recent specialization's kernels that have a search space on the target (key, op, space,
        default point): what ``schedules=`` can set (see :func:`tensorium.lowering.space.tunable_kernels`)."""
        return tunable_kernels(self.artifact.module, self.target)

    def cache_info(self) -> CacheInfo:
        """Counters: imports (guard misses), memory and disk cache hits, full compiles, live specializations."""
        return CacheInfo(
            imports=self._info.imports,
            memory_hits=self._info.memory_hits,
            disk_hits=self._info.disk_hits,
            compiles=self._info.compiles,
            specializations=len(self._specs),
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the most recent specialization as an artifact folder (see :func:`tensorium.load`)."""
        return write_artifact(self.artifact, path)

    def manual_seed(self, seed: int) -> None:
        """Restart the random ops' draws of every specialization at ``seed``: each call draws fresh numbers
        (a call counter feeds Tensorium's generator), and the calls after ``manual_seed(seed)`` draw the same
        numbers every time. Compiled models of the same graph share one artifact and so one counter."""
        for spec in self._specs.values():
            spec.artifact.manual_seed(seed)

    def stats(self) -> dict[str, Any]:
        """The most recent specialization's kernels per call and peak intermediate memory (for the shapes of
        the last call), and its op counts: ``{"kernels": int, "peak_intermediate_bytes": int, ...}`` (see
        :func:`tensorium.runtime.artifact.artifact_stats`)."""
        return artifact_stats(self.artifact)

    def __repr__(self) -> str:
        return f"<CompiledModel of {self._kind} target={self.target} specializations={len(self._specs)}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fallback is not None:
            return self._call_fallback(args, kwargs)
        torch_mode = _has_torch(args, kwargs)
        if self._kind == "onnx":
            return self._call_onnx(args, kwargs, torch_mode)
        use_torch = self._kind == "torch" or torch_mode
        named = bind_arguments(self._signature_target(), args, kwargs)
        key = (use_torch, self._guard(named))
        spec = self._specs.get(key)
        if spec is None:
            self._check_dynamic_names(named)
            self._info.imports += 1
            with old_objects_frozen():
                spec = self._import_torch(args, kwargs, named) if use_torch else self._import_traced(args, kwargs)
            if spec is None:
                return self._call_fallback(args, kwargs)
            self._specs[key] = spec
        self._last = spec
        if use_torch:
            return self._run_torch(spec, args, kwargs, torch_mode)
        arrays = [np.asarray(v) for n, v in named if not is_static(v)]
        return rebuild(spec.artifact, spec.artifact.run(arrays), torch_mode)

    def _check_dynamic_names(self, named: list[tuple[str, Any]]) -> None:
        """TensoriumError for a ``dynamic=`` name that is neither a parameter of the model's signature nor an
        argument of this call: a misspelt name would otherwise be ignored, and every new size recompile."""
        if not self.dynamic:
            return
        try:
            parameters = set(inspect.signature(self._signature_target()).parameters)
        except (TypeError, ValueError):
            return
        known = parameters | {name for name, _ in named}
        unknown = [name for name in self.dynamic if name not in known]
        if unknown:
            inputs = ", ".join(name for name, _ in named) or "none"
            raise TensoriumError(
                f"dynamic= names {', '.join(repr(n) for n in unknown)}, which the model does not take "
                f"(this call's inputs: {inputs})"
            )

    # guards ----------------------------------------------------------------------------------------
    def _signature_target(self) -> Callable[..., Any]:
        return self.model.forward if self._kind == "torch" else self.model  # type: ignore[no-any-return]

    def _guard(self, named: list[tuple[str, Any]]) -> tuple[Any, ...]:
        """Shapes (dynamic dims masked) and dtypes of array arguments, types and values of the others."""
        torch = _torch()
        arrays = (np.ndarray, np.generic) if torch is None else (torch.Tensor, np.ndarray, np.generic)
        dynamic = self.dynamic or {}
        out: list[Any] = []
        for name, value in named:
            if is_static(value):
                out.append((name, type(value).__name__, value))
                continue
            axes = dynamic.get(name)
            sig: list[Any] = []
            for leaf in _leaves(value):
                if isinstance(leaf, arrays):
                    shape = tuple(leaf.shape) if axes is None else _masked(leaf.shape, axes)
                    sig.append((shape, _dtype_name(leaf.dtype)))
                else:
                    sig.append((type(leaf).__name__, repr(leaf)))
            out.append((name, "array" if isinstance(value, arrays) else type(value).__name__, tuple(sig)))
        return tuple(out)

    # the Tensorium tracer ---------------------------------------------------------------------------
    def _import_traced(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> _Specialization:
        imported = trace_function(self.model, args, kwargs, self.dynamic)
        return self._compile(imported, json_tree(imported))

    def _compile(self, imported: ImportedGraph, tree: Tree | None) -> _Specialization:
        artifact = compile_graph(
            imported,
            self.target,
            self.pipeline,
            tree,
            self.cache,
            self._info,
            self.disabled,
            self.schedules,
            self.tuning,
        )
        return _Specialization(artifact, imported)

    # ONNX ------------------------------------------------------------------------------------------
    def _call_onnx(self, args: Sequence[Any], kwargs: Mapping[str, Any], torch_mode: bool) -> Any:
        from .frontend.onnx_import import import_onnx, load_model

        if self._onnx is None:
            self._onnx = load_model(self.model)
        g = self._onnx.graph
        initializers = {i.name for i in g.initializer}
        names = [i.name for i in g.input if i.name not in initializers]
        arrays = [to_numpy(v) for v in order_inputs(names, args, kwargs)]
        key = tuple((a.shape, str(a.dtype)) for a in arrays)
        if self.dynamic:
            key = self._guard(list(zip(names, arrays)))
        spec = self._specs.get(key)
        if spec is None:
            self._info.imports += 1
            shapes: dict[str, list[int | str | None]] = {}
            for name, a in zip(names, arrays):
                dims: list[int | str | None] = [int(d) for d in a.shape]
                for axis, sym in (self.dynamic or {}).get(name, {}).items():
                    dims[axis % max(a.ndim, 1)] = sym
                shapes[name] = dims
            with old_objects_frozen():
                imported = import_onnx(self._onnx, input_shapes=shapes)
                spec = self._compile(imported, json_tree(imported))
            self._specs[key] = spec
        self._last = spec
        check_inputs(spec.artifact, arrays)
        return rebuild(spec.artifact, spec.artifact.run(arrays), torch_mode)

    # PyTorch ---------------------------------------------------------------------------------------
    def _import_torch(
        self, args: Sequence[Any], kwargs: Mapping[str, Any], named: list[tuple[str, Any]]
    ) -> _Specialization | None:
        import torch

        from .frontend import pytorch

        example_args = _map_leaves(tuple(args), _as_torch_input)
        example_kwargs = _map_leaves(dict(kwargs), _as_torch_input)
        try:
            imported = pytorch.import_module(
                self.model,
                example_args,
                example_kwargs or None,
                params=self.params,
                dynamic_shapes=self._torch_dynamic(named, torch),
            )
        except pytorch.DataDependentExportError as e:
            self._enter_fallback(e)
            return None
        return self._compile(imported, json_tree(imported))

    def _torch_dynamic(self, named: list[tuple[str, Any]], torch: Any) -> dict[str, Any] | None:
        if not self.dynamic:
            return None
        dims: dict[str, Any] = {}
        out: dict[str, Any] = {}
        for name, _ in named:
            spec = self.dynamic.get(name)
            if spec is None:
                out[name] = None
                continue
            out[name] = {axis: dims.setdefault(sym, torch.export.Dim(sym)) for axis, sym in spec.items()}
        return out

    def _run_torch(
        self, spec: _Specialization, args: Sequence[Any], kwargs: Mapping[str, Any], torch_mode: bool
    ) -> Any:
        from .frontend import pytorch

        user = [to_numpy(leaf) for leaf in pytorch.flatten_inputs(spec.imported, args, dict(kwargs))]
        check_inputs(spec.artifact, user)
        check_dim_ranges(spec.artifact, user, spec.imported.metadata.get("dim_ranges") or {})
        outs: list[Any] = spec.artifact.run(user, self._live_params(spec))
        if torch_mode:
            outs = [to_torch(a, t) for a, (_, t) in zip(outs, spec.artifact.outputs)]
        return pytorch.unflatten_outputs(spec.imported, outs)

    def _live_params(self, spec: _Specialization) -> list[np.ndarray]:
        """With params="inputs", the module's current parameter and buffer values (so updates need no recompile)."""
        targets: dict[str, str] = spec.imported.metadata.get("param_targets") or {}
        if not targets or not _is_torch_module(self.model):
            return []
        state = dict(self.model.named_parameters()) | dict(self.model.named_buffers())
        return [to_numpy(state[targets[name]]) for name, _ in spec.artifact.params if name in targets]

    def _enter_fallback(self, error: Exception) -> None:
        import torch

        warnings.warn(
            "tensorium.compile: torch.export failed on data-dependent control flow, so the model runs "
            "through torch.compile with the Tensorium backend instead (TorchDynamo compiles each graph "
            f"between the breaks): {str(error).splitlines()[0] if str(error) else type(error).__name__}",
            stacklevel=4,
        )
        backend = target_dynamo_backend(self.target, self.pipeline, self.disabled, self.cache, self._info)
        self._fallback = torch.compile(self.model, backend=backend)

    def _call_fallback(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        torch_mode = _has_torch(args, kwargs)
        out = self._fallback(*_map_leaves(tuple(args), _as_torch_input), **_map_leaves(dict(kwargs), _as_torch_input))
        if torch_mode:
            return out
        return _map_leaves(out, lambda x: to_numpy(x) if _is_torch_tensor(x) else x)


def _masked(shape: Sequence[int], axes: Mapping[int, str]) -> tuple[Any, ...]:
    """``shape`` with the dynamic ``axes`` (axis: symbol name, negative axes from the end) as symbols."""
    dims: list[Any] = list(shape)
    for axis, sym in axes.items():
        if -len(dims) <= axis < len(dims):
            dims[axis] = Sym(sym)
    return tuple(dims)


def _as_torch_input(x: Any) -> Any:
    if isinstance(x, (np.ndarray, np.generic)):
        return to_torch(np.asarray(x))
    return x


def _check_dynamic(dynamic: Any) -> DynamicSpec | None:
    """``dynamic`` as {argument name: {axis: symbol name}}; TensoriumError for any other shape."""
    if dynamic is None:
        return None
    problem = "dynamic= must map argument names to {axis: dim name}, e.g. {'x': {0: 'batch'}}"
    if not isinstance(dynamic, Mapping):
        raise TensoriumError(problem)
    for name, axes in dynamic.items():
        if not isinstance(name, str) or not isinstance(axes, Mapping):
            raise TensoriumError(problem)
        for axis, sym in axes.items():
            if not isinstance(axis, int) or not isinstance(sym, str):
                raise TensoriumError(problem)
            try:
                Sym(sym)
            except ValueError:
                raise TensoriumError(f"dynamic= dim name {sym!r} is not an identifier") from None
    return dynamic


def target_dynamo_backend(
    target: Target, pipeline: str, disabled: tuple[str, ...] = (), cache: bool = True, info: CacheInfo | None = None
) -> Callable[..., Any]:
    """A TorchDynamo backend that compiles each captured graph for ``target`` with ``pipeline``."""
    from .frontend.pytorch import make_dynamo_backend

    def build(imported: ImportedGraph) -> Callable[[list[np.ndarray]], Sequence[np.ndarray]]:
        artifact = compile_graph(imported, target, pipeline, json_tree(imported), cache, info, disabled)
        return artifact.run

    return make_dynamo_backend(build)


def dynamo_backend(
    gm: Any, example_inputs: Sequence[Any], options: Mapping[str, Any] | None = None
) -> Callable[..., Any]:
    """``torch.compile(model, backend="tensorium")``: each graph TorchDynamo captures is compiled for the CPU,
    or for ``options={"target": ...}`` (``"interp"`` runs the reference interpreter); ``options`` may also give
    ``passes`` and ``disable`` as :func:`compile` takes them."""
    options = dict(options or {})
    unknown = sorted(set(options) - {"target", "passes", "disable"})
    if unknown:
        raise TensoriumError(f"unknown option(s) {unknown} of the tensorium backend: target, passes, disable")
    target = check_target(options.get("target", "cpu"))
    disable = tuple(options.get("disable", ()))
    backend = target_dynamo_backend(
        target, check_pipeline(options.get("passes"), target, disable), disabled_stages(disable)
    )
    return backend(gm, example_inputs)


def compile(
    model: Any = None,
    *,
    target: str | Target = "cpu",
    passes: str | None = None,
    dynamic: DynamicSpec | None = None,
    cache: bool = True,
    params: str = "constants",
    disable: Sequence[str] = (),
    schedules: Mapping[str, Config | str] | None = None,
    quantize: QuantConfig | str | None = None,
    tuning_db: TuningDB | str | os.PathLike[str] | bool | None = None,
) -> Any:
    """Compile a torch module, a function or an .onnx path; usable as ``@compile`` or ``@compile(...)``.

    ``target`` is ``"cpu"`` (kernels compiled by LLVM for this machine), ``"cpu:NAME"`` (for any x86 CPU LLVM
    knows, e.g. ``"cpu:x86-64-v3"``; runs here when this machine has its features), a
    :class:`~tensorium.targets.Target`, or ``"interp"`` (the reference interpreter); ``schedules`` maps
    kernel keys to search-space points (:mod:`tensorium.lowering.space`) to build those kernels at;
    ``dynamic={"x": {0: "batch"}}`` keeps axis 0 of argument ``x`` symbolic (no recompiles
    when it changes); ``passes`` overrides the default pipeline; ``params="inputs"`` passes torch
    parameters as inputs instead of constants; ``disable=("fuse", "memory-plan")`` turns passes and codegen
    stages off by name (as TVM's disabled passes do); ``quantize="w4g128"`` or a
    :class:`~tensorium.ir.dialects.quant.config.QuantConfig` quantizes constant matmul weights to k bits after
    the default passes (docs/quantization.md); ``tuning_db`` is the tuning records file whose best points
    apply to kernels ``schedules`` leaves open (default ``$TENSORIUM_TUNING_DB``, else ``tuning.jsonl`` in
    the cache folder; False for none; docs/autotune.md).
    """
    if model is None:

        def decorate(fn: Any) -> CompiledModel:
            return CompiledModel(fn, target, passes, dynamic, cache, params, disable, schedules, quantize, tuning_db)

        return decorate
    return CompiledModel(model, target, passes, dynamic, cache, params, disable, schedules, quantize, tuning_db)
