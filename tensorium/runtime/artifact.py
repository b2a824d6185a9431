"""Compiled-model artifacts: an executable module plus everything needed to call it, on disk as a folder.

An artifact folder holds:

- ``model.mlir``: the compiled IR. Constants above 64 elements are not inline: each became an extra
  trailing argument of ``@main`` (a *bound parameter*), whose value is ``constants/NAME.npy``.
- ``constants/NAME.npy``: one plain .npy per bound parameter, read with ``allow_pickle=False``.
- ``KIND/`` (targets that compile, named by the target kind: ``cpu/``): the executable's files (for the
  CPU the kernels' object code, the launch plan and the loop IR; see
  :mod:`tensorium.runtime.executable`), loaded without recompiling.
- ``metadata.json``: format version, Tensorium version, target, pipeline, creation time, the user inputs
  and outputs (names and IR types), the output tree (how flat outputs rebuild tuples/lists/dicts), the
  constants index and what the frontend recorded.

Nothing is pickled. Reading checks every piece and raises :class:`ArtifactError` naming the file at fault.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.interp import run
from ..errors import TensoriumError
from ..ir.attributes import DenseAttr
from ..ir.core import Operation
from ..ir.dialects.builtin import func_body, func_type, lookup_func
from ..ir.parser import parse_module, parse_type_text
from ..ir.printer import DENSE_HEX_THRESHOLD, print_module
from ..ir.storage import aligned
from ..ir.types import FunctionType, Sym, TensorType, Type, dim_known, dim_size, storage_dtype
from ..lowering.space import Config
from ..targets import Target, parse_target
from ..version import __version__
from .executable import Executable, ExecutableError
from .kinds import executable_kind

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Artifact",
    "ArtifactError",
    "build_executable",
    "flatten_tree",
    "is_artifact_dir",
    "read_artifact",
    "unflatten_tree",
    "write_artifact",
]

FORMAT = "tensorium-artifact"
FORMAT_VERSION = 2
MODEL_FILE = "model.mlir"
METADATA_FILE = "metadata.json"
CONSTANTS_DIR = "constants"


class ArtifactError(TensoriumError):
    """An artifact folder that cannot be read or written: names the file and what is wrong with it."""


# --- output trees ----------------------------------------------------------------------------------
Tree = dict[str, Any]
"""JSON description of nested outputs: ``{"type": "leaf"}``, ``{"type": "none"}``,
``{"type": "tuple" | "list", "children": [...]}`` or ``{"type": "dict", "keys": [...], "children": [...]}``."""

LEAF: Tree = {"type": "leaf"}


def flatten_tree(value: Any) -> tuple[list[Any], Tree]:
    """The leaves of nested tuples/lists/dicts (anything else is a leaf) and the tree that rebuilds them."""
    leaves: list[Any] = []

    def walk(v: Any) -> Tree:
        if v is None:
            return {"type": "none"}
        if isinstance(v, (tuple, list)):
            return {"type": type(v).__name__, "children": [walk(x) for x in v]}
        if isinstance(v, dict):
            keys = list(v)
            if not all(isinstance(k, (str, int)) for k in keys):
                raise TensoriumError("output dicts must have str or int keys")
            return {"type": "dict", "keys": keys, "children": [walk(v[k]) for k in keys]}
        leaves.append(v)
        return dict(LEAF)

    return leaves, walk(value)


def unflatten_tree(tree: Tree | None, leaves: Sequence[Any]) -> Any:
    """Rebuild what :func:`flatten_tree` took apart; a None tree gives one leaf alone or a tuple."""
    if tree is None:
        return leaves[0] if len(leaves) == 1 else tuple(leaves)
    it = iter(leaves)

    def build(t: Tree) -> Any:
        kind = t["type"]
        if kind == "leaf":
            return next(it)
        if kind == "number":  # a Python number the model returned (x.item(), a size), not an array
            return next(it).item()
        if kind == "none":
            return None
        children = [build(c) for c in t["children"]]
        if kind == "dict":
            return dict(zip(t["keys"], children))
        return tuple(children) if kind == "tuple" else children

    return build(tree)


def tree_leaf_count(tree: Tree) -> int:
    """How many leaves ``tree`` rebuilds from."""
    if tree["type"] in ("leaf", "number"):
        return 1
    return sum(tree_leaf_count(c) for c in tree.get("children", []))


def check_tree(tree: Any, what: str) -> Tree | None:
    """``tree`` when it is a well-formed output tree (or None), else ArtifactError naming ``what``."""
    if tree is None:
        return None

    def ok(t: Any) -> bool:
        if not isinstance(t, dict) or t.get("type") not in ("leaf", "number", "none", "tuple", "list", "dict"):
            return False
        if t["type"] in ("leaf", "number", "none"):
            return True
        children = t.get("children")
        if not isinstance(children, list) or not all(ok(c) for c in children):
            return False
        return t["type"] != "dict" or (isinstance(t.get("keys"), list) and len(t["keys"]) == len(children))

    if not ok(tree):
        raise ArtifactError(f"{what}: malformed output tree")
    return tree  # type: ignore[no-any-return]


# --- the artifact ----------------------------------------------------------------------------------
@dataclass
class Artifact:
    """A compiled model: ``module``'s @main takes the user ``inputs``, then the bound ``params``.

    With a target that compiles (``cpu``), ``executable`` is the module's
    :class:`~tensorium.runtime.executable.Executable` (built by :func:`build_executable`, or on the first
    run); other targets run ``module`` in the reference interpreter.
    """

    module: Operation
    inputs: list[tuple[str, Type]]
    outputs: list[tuple[str, Type]]
    target: Target
    pipeline: str
    output_tree: Tree | None = None
    params: list[tuple[str, np.ndarray]] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)
    executable: Executable | None = None
    disabled: tuple[str, ...] = ()
    """Codegen stages left out (``memory-plan``), as ``tensorium.compile(disable=...)`` asked."""
    configs: dict[str, Config] = field(default_factory=dict)
    """Search-space points of kernels by kernel key (``tensorium.compile(schedules=...)``)."""

    def run(self, arrays: Sequence[np.ndarray], params: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
        """Execute on numpy arrays given in input order; ``params`` replace the first bound parameters.

        A model with random ops has a generator key among its bound parameters (``source["generator"]``
        names it: a seed and a call counter); the counter advances after every run, so each call draws
        fresh numbers."""
        bound = [a for _, a in self.params]
        bound[: len(params)] = params
        if self.executable is None:
            build_executable(self)
        if self.executable is not None:
            outs = self.executable.run([*arrays, *bound])
        else:
            outs = run(self.module, [*arrays, *bound])
        key = self._generator_key()
        if key is not None:
            key[1] += 1
        return outs

    def manual_seed(self, seed: int) -> None:
        """Restart the random ops' draws: the next call draws what the first call after ``manual_seed(seed)``
        always draws (a model without random ops has nothing to restart)."""
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise TensoriumError(f"manual_seed takes an int in [0, 2**63), got {seed!r}")
        key = self._generator_key()
        if key is not None:
            key[:] = (seed, 0)

    def with_own_generator(self) -> Artifact:
        """This artifact with its own generator key at (0, 0), sharing the module and executable: what the
        compile cache hands each compiled model, so models compiled alike draw alike and never advance each
        other's counter (the artifact itself when it draws no random numbers)."""
        if self._generator_key() is None:
            return self
        name = self.source["generator"]
        params = [(n, np.zeros(2, np.int64) if n == name else a) for n, a in self.params]
        return dataclasses.replace(self, params=params)

    def _generator_key(self) -> np.ndarray | None:
        """The bound generator key (int64 [seed, counter]), or None when the model draws no random numbers."""
        name = self.source.get("generator")
        for param, value in self.params:
            if param == name:
                return value
        return None

    @property
    def input_names(self) -> list[str]:
        return [n for n, _ in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [n for n, _ in self.outputs]


def _main(module: Operation, what: str) -> Operation:
    main = lookup_func(module, "main")
    if main is None:
        raise ArtifactError(f"{what}: the module has no @main")
    return main


def externalize(artifact: Artifact) -> tuple[str, list[tuple[str, np.ndarray]]]:
    """The IR text with large constants turned into trailing @main arguments, and all bound parameters."""
    module, params = externalized_module(artifact)
    return print_module(module), params


def externalized_module(artifact: Artifact) -> tuple[Operation, list[tuple[str, np.ndarray]]]:
    """A copy of the module with large constants turned into trailing @main arguments, and all bound
    parameters; the artifact's own module is left as it is.
    """
    module = artifact.module.clone()
    main = _main(module, "<artifact>")
    block = func_body(main)
    params = list(artifact.params)
    taken = {n for n, _ in artifact.inputs} | {n for n, _ in params}
    for op in list(block.ops):
        value = op.attributes.get("value")
        if op.name != "graph.constant" or not isinstance(value, DenseAttr):
            continue
        if value.array.size <= DENSE_HEX_THRESHOLD or value.is_splat:
            continue
        index = len(params)
        while f"const{index}" in taken:
            index += 1
        name = f"const{index}"
        taken.add(name)
        arg = block.add_arg(value.type, name)
        op.result.replace_all_uses_with(arg)
        op.erase()
        params.append((name, aligned(np.asarray(value.array))))  # whole cache lines for the kernels' vector loads
    ftype = func_type(main)
    main.attributes["function_type"] = FunctionType(tuple(a.type for a in block.args), ftype.results)
    return module, params


def build_executable(artifact: Artifact, after_stage: Callable[[str, Any], None] | None = None) -> None:
    """Compile ``artifact`` for its target, in place, when the target compiles (others are left alone).

    Large constants become bound parameters first, as on disk, so kernels never embed weights; then the
    codegen stages run (``after_stage(name, state)`` sees each). Raises LoweringError naming an op the
    lowering refuses.
    """
    kind = executable_kind(artifact.target.kind)
    if kind is None:
        return
    from ..lowering import LoweringError, lower_function

    original = artifact.module
    module, params = externalized_module(artifact)
    try:
        executable = kind.build(
            module,
            memory_plan="memory-plan" not in artifact.disabled,
            target=artifact.target,
            configs=artifact.configs,
            disable=artifact.disabled,
            after_stage=after_stage,
        )
    except LoweringError:
        lower_function(original)  # the same refusal, naming the op's location in the user's source
        raise
    artifact.module, artifact.params, artifact.executable = module, params, executable


def artifact_stats(artifact: Artifact, bindings: dict[str, int] | None = None) -> dict[str, Any]:
    """What running ``artifact`` costs in kernels and memory, for the named dims ``bindings``.

    ``kernels``: kernel launches per call (CPU), or graph ops run one by one (interpreter);
    ``peak_intermediate_bytes``: the most memory intermediate results take at once (CPU: the memory plan's
    slots; interpreter: the live results at the worst point); ``graph_ops`` and ``fused_ops``: ops in
    ``@main`` and ops inside fused groups; CPU only: ``views`` (reshapes run as views) and ``memory_slots``.
    Named dims without a binding count as 1 in the bytes.
    """
    body = func_body(_main(artifact.module, "<artifact>"))
    top = [op for op in body.ops if op.name not in ("graph.constant", "func.return")]
    fused = [op for op in top if op.name == "graph.fused"]
    stats: dict[str, Any] = {
        "graph_ops": len(top),
        "fused_groups": len(fused),
        "fused_ops": sum(len(op.regions[0].block.ops) - 1 for op in fused),
    }
    executable = artifact.executable
    if executable is not None:
        bindings = bindings if bindings is not None else executable.last_bindings or {}
        stats["kernels"] = len(executable.steps)
        stats["views"] = len(executable.views)
        stats["memory_slots"] = executable.memory.count
        stats["peak_intermediate_bytes"] = executable.peak_bytes(_complete(bindings, executable.buffers))
    else:
        stats["kernels"] = len(top)
        stats["peak_intermediate_bytes"] = _peak_live_bytes(body, bindings or {})
    return stats


def _complete(bindings: dict[str, int], types: Any) -> dict[str, int]:
    """``bindings`` with every other named dim of ``types`` bound to 1."""
    out = dict(bindings)
    for t in types:
        for d in getattr(t, "shape", ()):
            if isinstance(d, Sym) and d.name is not None:
                for name in d.factors[1]:
                    out.setdefault(name, 1)
    return out


def _peak_live_bytes(body: Any, bindings: dict[str, int]) -> int:
    """The largest total size of op results alive at once while the interpreter runs ``body`` in order
    (a result lives from its op to its last use; returned results and constants are not counted)."""
    returned = {id(v) for v in body.ops[-1].operands}
    last: dict[int, int] = {}
    for n, op in enumerate(body.ops):
        for v in op.operands:
            last[id(v)] = n
    live: dict[int, int] = {}
    peak = 0
    for n, op in enumerate(body.ops):
        if op.name != "graph.constant":
            for r in op.results:
                if id(r) not in returned and isinstance(r.type, TensorType):
                    live[id(r)] = _bytes_of(r.type, bindings)
        peak = max(peak, sum(live.values()))
        for v in op.operands:
            if last.get(id(v)) == n:
                live.pop(id(v), None)
    return peak


def _bytes_of(t: TensorType, bindings: dict[str, int]) -> int:
    size = storage_dtype(t.element).itemsize
    for d in t.shape:
        size *= dim_size(d, bindings) if dim_known(d, bindings) else 1
    return size


def is_artifact_dir(path: Path) -> bool:
    """True when ``path`` is a folder whose metadata.json says it is a Tensorium artifact."""
    try:
        meta = json.loads((path / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``value`` that JSON can hold (frontend objects such as pytree specs are left out)."""
    out = {}
    for key, item in value.items():
        try:
            out[str(key)] = json.loads(json.dumps(item))
        except (TypeError, ValueError):
            continue
    return out


def write_artifact(artifact: Artifact, path: str | os.PathLike[str]) -> Path:
    """Write ``artifact`` as a folder at ``path``, atomically: a reader sees the old or the new one, never half.

    An existing artifact at ``path`` is replaced; any other existing file or folder is left alone
    (ArtifactError).
    """
    target = Path(path)
    if target.exists() and not (target.is_dir() and is_artifact_dir(target)):
        kind = "folder" if target.is_dir() else "file"
        raise ArtifactError(f"{target}: refusing to overwrite an existing {kind} that is not a Tensorium artifact")
    target.parent.mkdir(parents=True, exist_ok=True)
    if artifact.executable is None:
        build_executable(artifact)
    text, params = externalize(artifact)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        (tmp / CONSTANTS_DIR).mkdir()
        index = []
        for name, array in params:
            file = f"{CONSTANTS_DIR}/{name}.npy"
            np.save(tmp / file, np.asarray(array, order="C"), allow_pickle=False)
            index.append({"name": name, "file": file, "shape": list(array.shape), "dtype": str(array.dtype)})
        (tmp / MODEL_FILE).write_text(text, encoding="utf-8")
        if artifact.executable is not None:
            artifact.executable.to_files(tmp / artifact.target.kind)
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "tensorium_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "target": str(artifact.target),
            "target_record": artifact.target.to_json(),
            "pipeline": artifact.pipeline,
            "schedules": {k: str(v) for k, v in sorted(artifact.configs.items())},
            "disabled": list(artifact.disabled),
            "inputs": [{"name": n, "type": str(t)} for n, t in artifact.inputs],
            "outputs": [{"name": n, "type": str(t)} for n, t in artifact.outputs],
            "output_tree": artifact.output_tree,
            "constants": index,
            "source": _json_safe(artifact.source),
        }
        (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _replace_dir(new: Path, target: Path) -> None:
    """Move the finished folder ``new`` to ``target``, swapping out an old artifact there."""
    try:
        os.rename(new, target)
        return
    except OSError:
        if not target.exists():
            raise
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    os.rename(target, old / "artifact")
    os.rename(new, target)
    shutil.rmtree(old, ignore_errors=True)


# --- reading ---------------------------------------------------------------------------------------
def _field(meta: dict[str, Any], key: str, kind: type | tuple[type, ...], file: Path) -> Any:
    value = meta.get(key)
    if not isinstance(value, kind):
        raise ArtifactError(f"{file}: field '{key}' is missing or malformed")
    return value


def _typed_list(meta: dict[str, Any], key: str, file: Path) -> list[tuple[str, Type]]:
    out = []
    for entry in _field(meta, key, list, file):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("name"), str)
            or not isinstance(entry.get("type"), str)
        ):
            raise ArtifactError(f"{file}: malformed entry in '{key}': {entry!r}")
        try:
            out.append((entry["name"], parse_type_text(entry["type"])))
        except TensoriumError as e:
            raise ArtifactError(f"{file}: bad type in '{key}' entry '{entry['name']}': {e}") from None
    return out


def read_artifact(path: str | os.PathLike[str]) -> Artifact:
    """Read an artifact folder; ArtifactError names the missing, malformed or mismatched file."""
    root = Path(path)
    if not root.is_dir():
        raise ArtifactError(f"{root}: no such artifact folder")
    meta_file = root / METADATA_FILE
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactError(f"{meta_file}: missing (not a Tensorium artifact?)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ArtifactError(f"{meta_file}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ArtifactError(f"{meta_file}: not a Tensorium artifact (format is not '{FORMAT}')")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ArtifactError(
            f"{meta_file}: artifact format version {version!r} is not supported (this Tensorium reads {FORMAT_VERSION})"
        )
    inputs = _typed_list(meta, "inputs", meta_file)
    outputs = _typed_list(meta, "outputs", meta_file)
    tree = check_tree(meta.get("output_tree"), str(meta_file))
    name = _field(meta, "target", str, meta_file)
    try:
        target = Target.from_json(meta.get("target_record")) if name.startswith("cpu") else parse_target(name)
        configs = {str(k): Config.parse(str(v)) for k, v in dict(meta.get("schedules") or {}).items()}
    except (TensoriumError, TypeError, ValueError) as e:
        raise ArtifactError(f"{meta_file}: bad target or schedules ({e})") from None
    pipeline = _field(meta, "pipeline", str, meta_file)
    model_file = root / MODEL_FILE
    try:
        text = model_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtifactError(f"{model_file}: missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{model_file}: unreadable ({e})") from None
    try:
        module = parse_module(text, str(model_file))
    except TensoriumError as e:
        raise ArtifactError(f"{model_file}: invalid IR:\n{e}") from None
    args = func_body(_main(module, str(model_file))).args
    params = _read_constants(root, meta, meta_file, [a.type for a in args[len(inputs) :]])
    if len(args) != len(inputs) + len(params):
        raise ArtifactError(
            f"{model_file}: @main takes {len(args)} arguments but {meta_file.name} lists "
            f"{len(inputs)} inputs and {len(params)} constants"
        )
    for (name, t), arg in zip(inputs, args):
        if arg.type != t:
            raise ArtifactError(f"{model_file}: input '{name}' is {arg.type} but {meta_file.name} says {t}")
    results = func_type(_main(module, str(model_file))).results
    if [t for _, t in outputs] != list(results):
        raise ArtifactError(f"{model_file}: @main results do not match the outputs in {meta_file.name}")
    if tree is not None and tree_leaf_count(tree) != len(outputs):
        raise ArtifactError(
            f"{meta_file}: the output tree has {tree_leaf_count(tree)} leaves for {len(outputs)} outputs"
        )
    source = meta.get("source")
    return Artifact(
        module=module,
        inputs=inputs,
        outputs=outputs,
        target=target,
        pipeline=pipeline,
        output_tree=tree,
        params=params,
        source=source if isinstance(source, dict) else {},
        disabled=tuple(str(n) for n in meta.get("disabled", ())),
        configs=configs,
        executable=_read_executable(root / target.kind, model_file, [a.type for a in args], list(results)),
    )


def _read_executable(folder: Path, model_file: Path, args: list[Type], results: list[Type]) -> Executable | None:
    """The executable in ``folder`` (named by the target kind; None for a kind that does not compile), loaded
    without recompiling and checked against @main's signature."""
    kind = executable_kind(folder.name)
    if kind is None:
        return None
    try:
        executable = kind.from_files(folder)
    except ExecutableError as e:
        raise ArtifactError(str(e)) from None
    plan_file = folder / "plan.json"
    if executable.input_types != args or [executable.buffers[b] for b in executable.outputs] != results:
        raise ArtifactError(f"{plan_file}: the plan's inputs or outputs do not match @main in {model_file.name}")
    return executable


def _read_constants(
    root: Path, meta: dict[str, Any], meta_file: Path, types: list[Type]
) -> list[tuple[str, np.ndarray]]:
    """The bound parameters listed in metadata.json, checked against the @main arguments ``types``."""
    entries = _field(meta, "constants", list, meta_file)
    if len(entries) != len(types):
        raise ArtifactError(
            f"{meta_file}: lists {len(entries)} constants but @main takes {len(types)} arguments beyond its inputs"
        )
    out = []
    for entry, t in zip(entries, types):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("name"), str)
            or not isinstance(entry.get("file"), str)
        ):
            raise ArtifactError(f"{meta_file}: malformed constants entry {entry!r}")
        file = (root / entry["file"]).resolve()
        if root.resolve() not in file.parents:
            raise ArtifactError(f"{meta_file}: constant '{entry['name']}' points outside the artifact")
        try:
            array = np.load(file, allow_pickle=False)
        except FileNotFoundError:
            raise ArtifactError(f"{file}: missing constant '{entry['name']}'") from None
        except (OSError, ValueError, EOFError) as e:
            raise ArtifactError(f"{file}: not a readable .npy file ({e})") from None
        if not isinstance(t, TensorType):
            raise ArtifactError(f"{meta_file}: constant '{entry['name']}' binds a non-tensor argument of type {t}")
        if tuple(array.shape) != t.shape or array.dtype != storage_dtype(t.element):
            raise ArtifactError(
                f"{file}: constant '{entry['name']}' has shape {list(array.shape)} and dtype {array.dtype}, "
                f"but the model expects {t}"
            )
        out.append((entry["name"], aligned(array)))
    return out
