"""The model subcommands of the ``tensorium`` command line: ``compile``, ``run`` and ``inspect``.

    tensorium compile examples/tiny_cnn.onnx -o cnn.tsm             # -t cpu, the default
    tensorium compile examples/torch_mlp.py:factory -t interp -o mlp.tsm --passes canonicalize,cse
    tensorium compile examples/torch_mlp.py:factory -t webgpu -o site/  # plus index.html, a WebGPU demo page
    tensorium run mlp.tsm --input x=x.npy --output-dir out/
    tensorium inspect mlp.tsm

``compile`` writes an artifact folder (:mod:`tensorium.runtime.artifact`) and reports each stage (import,
passes, codegen for ``-t cpu``, write) with its time on stderr. Every user error raises a
TensoriumError, which the entry point prints as one message before exiting with status 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from ..api import artifact_of, check_pipeline, check_target, disabled_stages, json_tree
from ..errors import TensoriumError
from ..frontend.common import ImportedGraph
from ..ir.attributes import DenseAttr
from ..ir.printer import print_module
from ..ir.storage import random_array
from ..ir.types import TensorType, storage_dtype
from ..runtime.artifact import Artifact, build_executable, read_artifact, write_artifact
from .args import dim_sizes

if TYPE_CHECKING:
    from ..backends.cpu import CpuExecutable
    from ..runtime.executable import Executable

__all__ = ["ModelCommandError", "add_model_commands", "cmd_compile", "cmd_export_mlir", "cmd_inspect", "cmd_run"]


class ModelCommandError(TensoriumError):
    """A model command that cannot be carried out: a bad MODEL spec, a failing factory, missing inputs."""


# --- progress --------------------------------------------------------------------------------------
class Progress:
    """Numbered stage lines with timings, on ``stream`` (stderr by default)."""

    def __init__(self, stages: int, stream: TextIO | None = None):
        self.stages = stages
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr

    @contextmanager
    def stage(self, name: str, detail: str) -> Iterator[dict[str, str]]:
        """Announce stage ``name``, run the body, then report its time and any note the body left."""
        self.done += 1
        label = f"[{self.done}/{self.stages}] {name}"
        self.stream.write(f"{label}: {detail} ...\n")
        self.stream.flush()
        note: dict[str, str] = {}
        start = time.perf_counter()
        yield note
        seconds = time.perf_counter() - start
        extra = f" ({note['text']})" if "text" in note else ""
        self.stream.write(f"{label}: done in {seconds:.2f} s{extra}\n")
        self.stream.flush()


# --- compile ---------------------------------------------------------------------------------------
def _load_factory(spec: str) -> tuple[Any, tuple[Any, ...]]:
    """Run ``path.py:factory`` and return its (model, example inputs)."""
    path_text, _, name = spec.rpartition(":")
    path = Path(path_text)
    if not path_text.endswith(".py") or not name.isidentifier():
        raise ModelCommandError(f"MODEL must be an .onnx file or path.py:factory, got '{spec}'")
    if not path.is_file():
        raise ModelCommandError(f"{path}: no such file")
    module_name = f"_tensorium_factory_{abs(hash(path.resolve()))}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    assert loader_spec is not None and loader_spec.loader is not None
    module = importlib.util.module_from_spec(loader_spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        loader_spec.loader.exec_module(module)
        factory = getattr(module, name, None)
        if not callable(factory):
            raise ModelCommandError(f"{path} has no function '{name}'")
        result = factory()
    except TensoriumError:
        raise
    except Exception as e:
        raise ModelCommandError(f"{spec}: the factory failed: {type(e).__name__}: {e}") from e
    finally:
        sys.path.remove(str(path.resolve().parent))
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ModelCommandError(f"{spec} must return (model, example_inputs), got {type(result).__name__}")
    model, examples = result
    return model, tuple(examples) if isinstance(examples, (tuple, list)) else (examples,)


def _import(spec: str) -> tuple[ImportedGraph, str]:
    """The imported graph of MODEL and the name of the frontend that made it."""
    if spec.endswith(".mlir"):
        if not Path(spec).is_file():
            raise ModelCommandError(f"{spec}: no such file")
        from ..interop import imported_graph

        return imported_graph(spec), "upstream MLIR"
    if spec.endswith(".onnx"):
        if not Path(spec).is_file():
            raise ModelCommandError(f"{spec}: no such file")
        try:
            from ..frontend.onnx_import import import_onnx
        except ImportError as e:
            raise ModelCommandError(f"importing ONNX models needs the onnx extra ({e})") from None
        return import_onnx(spec), "onnx"
    model, examples = _load_factory(spec)
    torch = sys.modules.get("torch")
    if torch is not None and (isinstance(model, torch.nn.Module) or any(isinstance(e, torch.Tensor) for e in examples)):
        from ..frontend.pytorch import import_module

        return import_module(model, examples), "torch.export"
    if not callable(model):
        raise ModelCommandError(f"{spec} returned a {type(model).__name__}, not a torch module or a function")
    from ..frontend.tracer.tensor import trace_function

    return trace_function(model, examples), "tensorium.trace"


def cmd_compile(args: argparse.Namespace) -> int:
    """Import MODEL, run the pass pipeline and write an artifact folder."""
    target = check_target(args.target)
    disable = [n.strip() for n in (args.disable or "").split(",") if n.strip()]
    pipeline = check_pipeline(args.passes, target, disable, args.quantize)
    dump = IRDump(Path(args.dump_ir)) if args.dump_ir else None
    progress = Progress(4 if target.kind in ("cpu", "webgpu") else 3)
    with progress.stage("import", args.model) as note:
        imported, frontend = _import(args.model)
        note["text"] = f"{frontend}, {_op_count(imported)} ops"
    if dump is not None:
        dump.write("imported.mlir", print_module(imported.module))
    with progress.stage("passes", pipeline) as note:
        from ..ir.verifier import verify
        from ..passes import PassManager

        verify(imported.module)
        after = None if dump is None else lambda name, module: dump.write(f"{name}.mlir", print_module(module))
        PassManager.parse(pipeline, after_pass=after).run(imported.module)
        verify(imported.module)
        note["text"] = f"{_op_count(imported)} ops"
    artifact = artifact_of(imported, target, pipeline, json_tree(imported), disabled_stages(disable))
    if target.kind == "cpu":
        stages = "lower, schedule, decompose, emit"
        with progress.stage("codegen", f"{stages} with LLVM for {target.describe()}") as note:
            build_executable(artifact, None if dump is None else dump.codegen_stage)
            executable = _cpu_executable(artifact)
            code = executable.kernels.object_code
            note["text"] = f"{len(executable.steps)} kernels, {_bytes(len(code))} of object code"
    if target.kind == "webgpu":
        with progress.stage("codegen", f"lower, decompose, emit WGSL for {target}") as note:
            build_executable(artifact)
            note["text"] = f"{len(getattr(artifact.executable, 'shaders', ()))} WGSL kernels"
    with progress.stage("write", args.output) as note:
        write_artifact(artifact, args.output)
        note["text"] = f"{len(artifact.inputs)} inputs, {len(artifact.outputs)} outputs"
        if target.kind == "webgpu":
            from ..backends.webgpu.site import write_site

            page = write_site(args.output, (artifact.module, artifact.configs))
            note["text"] += f"; the demo page {page}, with shaders to tune"
    if dump is not None:
        print(f"IR after each stage: {dump.folder} ({dump.count} files)", file=sys.stderr)
    return 0


def cmd_export_mlir(args: argparse.Namespace) -> int:
    """Import MODEL and write it as upstream MLIR, verified by MLIR's own bindings."""
    from ..interop import export_mlir

    imported, frontend = _import(args.model)
    text = export_mlir(imported)
    Path(args.output).write_text(text, encoding="utf-8")
    print(f"{args.output}: {_op_count(imported)} graph ops from {frontend}, verified by MLIR", file=sys.stderr)
    return 0


class IRDump:
    """Numbered files of IR, one per compilation stage, in a folder (``tensorium compile --dump-ir``)."""

    def __init__(self, folder: Path):
        if folder.exists() and not folder.is_dir():
            raise ModelCommandError(f"{folder}: exists and is not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.count = 0

    def codegen_stage(self, name: str, state: Any) -> None:
        """Write the loop IR after a codegen stage (``loops-lower.mlir``, ...), and the LLVM IR before and
        after optimization once ``emit`` has run."""
        if name != "emit":
            self.write(f"loops-{name}.mlir", print_module(state.lowered))
            return
        self.write("llvm.ll", state.compiled.llvm_ir)
        self.write("llvm-optimized.ll", state.compiled.optimized_ir)

    def write(self, name: str, text: str) -> None:
        """Write ``text`` as the next stage's file, ``NN-name`` (pass options are left out of the name)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", re.sub(r"\{[^}]*\}", "", name))
        (self.folder / f"{self.count:02d}-{safe}").write_text(text, encoding="utf-8")
        self.count += 1


def _op_count(imported: ImportedGraph) -> int:
    return sum(1 for op in imported.module.walk() if op.name.startswith("graph."))


# --- run -------------------------------------------------------------------------------------------
def _load_npy(path: str) -> np.ndarray:
    try:
        return np.asarray(np.load(path, allow_pickle=False))
    except OSError as e:
        raise ModelCommandError(f"{path}: cannot read ({e.strerror or e})") from None
    except ValueError as e:
        raise ModelCommandError(f"{path}: not a .npy array file ({e})") from None


def _collect_inputs(artifact: Artifact, args: argparse.Namespace) -> list[np.ndarray]:
    names = artifact.input_names
    index = {n: i for i, n in enumerate(names)} | {f"arg{i}": i for i in range(len(names))}
    given: dict[int, np.ndarray] = {}
    for item in args.input or []:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ModelCommandError(f"--input expects NAME=FILE.npy, got '{item}'")
        if name not in index:
            raise ModelCommandError(f"the model has no input '{name}'; its inputs are {', '.join(names)}")
        if index[name] in given:
            raise ModelCommandError(f"input '{names[index[name]]}' is given twice")
        array = _load_npy(path)
        t = artifact.inputs[index[name]][1]
        if isinstance(t, TensorType) and array.dtype != storage_dtype(t.element):
            raise ModelCommandError(f"input '{name}' ({path}): expected dtype {storage_dtype(t.element)} for {t}")
        given[index[name]] = array
    missing = [n for i, n in enumerate(names) if i not in given]
    if missing and not args.random_inputs:
        raise ModelCommandError(
            f"missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            "(give --input NAME=FILE.npy or --random-inputs)"
        )
    dims = dim_sizes(args.dim)
    rng = np.random.default_rng(args.seed)
    return [
        given[i] if i in given else random_array(t, f"'{n}'", dims, rng) for i, (n, t) in enumerate(artifact.inputs)
    ]


def _file_names(names: list[str]) -> list[str]:
    """Output names made safe and distinct as file names."""
    out: list[str] = []
    for i, name in enumerate(names):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".") or f"output{i}"
        while safe in out:
            safe += f"_{i}"
        out.append(safe)
    return out


def _summary(name: str, array: np.ndarray, count: int = 6) -> str:
    flat = array.reshape(-1)
    shown = ", ".join(str(v) for v in flat[:count]) + (", ..." if flat.size > count else "")
    return f"{name}: shape {list(array.shape)}, dtype {array.dtype}, values [{shown}]"


def cmd_run(args: argparse.Namespace) -> int:
    """Run an artifact on .npy inputs (or random ones), print a summary of each output and save them."""
    artifact = read_artifact(args.artifact)
    check_target(artifact.target).check_runs_here(args.artifact)
    inputs = _collect_inputs(artifact, args)
    from ..api import check_inputs

    check_inputs(artifact, inputs)
    outputs = artifact.run(inputs)
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    for name, file, array in zip(artifact.output_names, _file_names(artifact.output_names), outputs):
        if out_dir is not None:
            np.save(out_dir / f"{file}.npy", array, allow_pickle=False)
        print(_summary(name, array))
    return 0


# --- inspect ---------------------------------------------------------------------------------------
def cmd_inspect(args: argparse.Namespace) -> int:
    """Print an artifact's inputs, outputs, op histogram and constants."""
    artifact = read_artifact(args.artifact)
    meta = artifact.source
    print(f"artifact: {args.artifact}")
    print(f"  target: {artifact.target.describe()}")
    print(f"  pipeline: {artifact.pipeline}")
    if meta.get("framework"):
        print(f"  source: {meta['framework']}")
    print("inputs:")
    for name, t in artifact.inputs:
        print(f"  {name}: {t}")
    print("outputs:")
    for name, t in artifact.outputs:
        print(f"  {name}: {t}")
    ops = Counter(
        op.name for op in artifact.module.walk() if op.name not in ("builtin.module", "func.func", "func.return")
    )
    print(f"ops: {sum(ops.values())}")
    width = max((len(n) for n in ops), default=0)
    for name, count in sorted(ops.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {name:<{width}}  {count}")
    inline = [op.attributes["value"] for op in artifact.module.walk() if op.name == "graph.constant"]
    inline_bytes = sum(v.array.nbytes for v in inline if isinstance(v, DenseAttr))
    external_bytes = sum(a.nbytes for _, a in artifact.params)
    print(
        f"constants: {len(inline) + len(artifact.params)} ({_bytes(inline_bytes + external_bytes)}): "
        f"{len(inline)} inline ({_bytes(inline_bytes)}), {len(artifact.params)} in files ({_bytes(external_bytes)})"
    )
    if artifact.executable is not None:
        _print_executable(artifact.executable)
    if args.ir:
        print(print_module(artifact.module), end="")
    return 0


def _cpu_executable(artifact: Artifact) -> CpuExecutable:
    """The artifact's executable, a CPU one: the only kind that compiles today (its kernels, object code and
    loop IR are what ``compile --dump-ir`` writes and ``inspect`` shows)."""
    from ..backends.cpu import CpuExecutable

    executable = artifact.executable
    if not isinstance(executable, CpuExecutable):
        raise ModelCommandError(f"no CPU executable in the artifact (target {artifact.target})")
    return executable


def _print_executable(executable: Executable) -> None:
    """The kernels of an executable in launch order (with their object code and fused ops on the CPU), its views
    and its intermediate memory."""
    from ..backends.cpu import CpuExecutable

    target = executable.target
    cpu = executable if isinstance(executable, CpuExecutable) else None
    where = f"{_bytes(len(cpu.kernels.object_code))} of object code for {target.cpu}, {target.triple}" if cpu else ""
    print(f"kernels: {len(executable.steps)} ({where or f'for {target}'})")
    width = max((len(s.kernel) for s in executable.steps), default=0)
    for step in executable.steps:
        ins = ", ".join(f"#{b}" for b in step.inputs)
        outs = ", ".join(f"#{b}" for b in step.outputs)
        ops = cpu.kernels.kernels[step.kernel].ops if cpu else []
        fused = f"  [{len(ops)} fused ops: {', '.join(ops)}]" if len(ops) > 1 else ""
        print(f"  {step.kernel:<{width}}  ({ins}) -> ({outs}){fused}")
    if executable.views:
        print(f"views (no kernel, no copy): {len(executable.views)}")
        for view in executable.views:
            print(f"  #{view.buffer} = #{view.source} from element {view.offset} as {executable.buffers[view.buffer]}")
    pooled = sum(slot is not None for slot in executable.memory.slots)
    peak = executable.memory.describe(executable.buffers)
    if peak.removesuffix(" bytes").isdigit():
        peak = _bytes(int(peak.removesuffix(" bytes")))
    print(f"peak intermediate memory: {peak} ({pooled} intermediate buffers in {executable.memory.count} slots)")


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


# --- registration ----------------------------------------------------------------------------------
def add_model_commands(subparsers: Any) -> None:
    """Add ``compile``, ``run`` and ``inspect`` to an argparse subparsers object."""
    compile_p = subparsers.add_parser("compile", help="compile a model (.onnx or path.py:factory) to an artifact")
    compile_p.add_argument(
        "model",
        metavar="MODEL",
        help="an .onnx or upstream-MLIR .mlir file, or path.py:factory returning (model, inputs)",
    )
    compile_p.add_argument(
        "-t",
        "--target",
        default="cpu",
        help="backend target: cpu (this machine), cpu:NAME (an x86 CPU LLVM knows, e.g. cpu:x86-64-v3, "
        "cpu:znver4), webgpu (WGSL; with a demo page: see docs/webgpu_backend.md), cuda:sm_XX (PTX) or interp "
        "(default: cpu)",
    )
    compile_p.add_argument("-o", "--output", required=True, metavar="OUT", help="artifact folder to write")
    compile_p.add_argument(
        "--passes",
        metavar="PIPELINE",
        help="pass pipeline (default: canonicalize,fold-batch-norm,cse,fold,dce; the target appends its own "
        "passes, for cpu: pack-weights,fuse)",
    )
    compile_p.add_argument(
        "--disable",
        metavar="NAMES",
        help="passes or codegen stages to leave out, comma-separated (e.g. fuse,memory-plan)",
    )
    compile_p.add_argument(
        "--quantize",
        metavar="SPEC",
        help="quantize constant matmul weights after the default passes: w4g128 (4 bits, groups of 128), w3 (per "
        "channel), w8g32s (signed); see docs/quantization.md",
    )
    compile_p.add_argument(
        "--dump-ir", metavar="DIR", help="write the IR after each stage (imported, each pass, loops, LLVM) to DIR"
    )
    _handle(compile_p, cmd_compile)

    export_p = subparsers.add_parser("export-mlir", help="export a model to upstream MLIR (func, linalg, tensor, ...)")
    export_p.add_argument("model", metavar="MODEL", help="an .onnx file, or path.py:factory returning (model, inputs)")
    export_p.add_argument("-o", "--output", required=True, metavar="FILE", help="the .mlir file to write")
    _handle(export_p, cmd_export_mlir)

    run_p = subparsers.add_parser("run", help="run a compiled artifact on .npy inputs")
    run_p.add_argument("artifact", metavar="OUT", help="artifact folder written by 'tensorium compile'")
    run_p.add_argument("--input", action="append", metavar="NAME=FILE.npy", help="an input by name or argN")
    run_p.add_argument("--random-inputs", action="store_true", help="fill inputs not given with random data")
    run_p.add_argument("--seed", type=int, default=0, help="seed of --random-inputs (default 0)")
    run_p.add_argument("--dim", action="append", metavar="NAME=SIZE", help="size of a named dim for --random-inputs")
    run_p.add_argument("--output-dir", metavar="DIR", help="save each output as DIR/<output name>.npy")
    _handle(run_p, cmd_run)

    inspect_p = subparsers.add_parser("inspect", help="show an artifact's inputs, outputs, ops and constants")
    inspect_p.add_argument("artifact", metavar="OUT", help="artifact folder")
    inspect_p.add_argument("--ir", action="store_true", help="also print the IR")
    _handle(inspect_p, cmd_inspect)


def _handle(parser: argparse.ArgumentParser, handler: Any) -> None:
    # tensorium.cli dispatches on ``handler``; ``func`` is the same callable under argparse's usual name.
    parser.set_defaults(handler=handler, func=handler)
