"""The IR commands of ``tensorium``: ``opt`` (parse, verify, run a pass pipeline, print), ``run-ir`` (run a
function in the reference interpreter) and ``ops`` (list the registered ops)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.interp import check_value, coerce, run
from ..errors import InterpreterError, TensoriumError
from ..fuzz.generator import random_array
from ..ir import parse_module, print_module, verify
from ..ir.core import BlockArgument, Operation
from ..ir.dialects.builtin import func_body, func_name, func_type, pick_function
from ..ir.opdef import registered_ops
from ..ir.reference import signature
from ..ir.types import Dim, Sym, TensorType, Type, dim_known, dim_size, storage_dtype

__all__ = ["CommandError", "add_ir_commands", "add_ops_command", "cmd_ops", "cmd_opt", "cmd_run_ir"]


class CommandError(TensoriumError):
    """A request the command line cannot carry out: an unreadable input file, an unknown dialect."""


# --- helpers ------------------------------------------------------------------------------------
def _read_source(path: str) -> tuple[str, str]:
    """The text of ``path`` (``-`` reads stdin) and the file name to show in messages."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not UTF-8 text") from None


def _write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, so readers never see half."""
    target = Path(path)
    if target.is_dir():
        raise CommandError(f"{path}: is a directory")
    if target.exists():
        mode = target.stat().st_mode & 0o777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _key_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got '{text}'")
    return name, value


def _dim_size(text: str) -> tuple[str, int]:
    name, value = _key_value(text)
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"dimension size must be a non-negative integer, got '{text}'")
    return name, int(value)


# --- opt ----------------------------------------------------------------------------------------
def cmd_opt(args: argparse.Namespace) -> int:
    """Parse and verify a module, run a pass pipeline on it and print the result."""
    text, filename = _read_source(args.file)
    module = parse_module(text, filename, verify=not args.no_verify)
    if args.passes is not None:
        from ..passes import PassManager

        pm = PassManager.parse(
            args.passes,
            verify_each=args.verify_each,
            timing=args.timing,
            print_ir_after_all=args.print_ir_after_all,
            ir_stream=sys.stderr,
        )
        pm.run(module)
        if not args.no_verify:
            verify(module)
        if args.timing:
            sys.stderr.write(pm.timing_report())
    output = print_module(module)
    if args.output is None or args.output == "-":
        sys.stdout.write(output)
    else:
        _write_atomically(args.output, output)
    return 0


# --- run-ir -------------------------------------------------------------------------------------
def _arg_names(args: Sequence[BlockArgument]) -> list[str]:
    return [a.name_hint or f"arg{i}" for i, a in enumerate(args)]


def _load_array(path: str) -> np.ndarray:
    try:
        return np.asarray(np.load(path, allow_pickle=False))
    except ValueError as e:
        raise CommandError(f"{path}: not a .npy array file ({e})") from None


def _random_input(arg: BlockArgument, label: str, dims: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    t = arg.type
    if not isinstance(t, TensorType):
        raise CommandError(f"input {label} has type {t}; only tensor inputs can be generated")
    shape: list[Dim] = []
    for axis, d in enumerate(t.shape):
        if isinstance(d, Sym):
            if d.name is None:
                raise CommandError(f"input {label} ({t}) has a '?' dimension (axis {axis}); give it with --input")
            if not dim_known(d, dims):
                missing = next((n for n in d.factors[1] if n not in dims), d.name)
                raise CommandError(f"input {label} ({t}) needs the size of {d}: pass --dim {missing}=SIZE")
            shape.append(dim_size(d, dims))
        else:
            shape.append(d)
    static = TensorType(tuple(shape), t.element)
    return coerce(random_array(static, rng), t.element)


def _collect_inputs(func: Operation, args: argparse.Namespace) -> list[np.ndarray]:
    params = func_body(func).args
    names = _arg_names(params)
    index = {n: i for i, n in enumerate(names)} | {f"arg{i}": i for i in range(len(params))}
    given: dict[int, tuple[str, np.ndarray]] = {}
    for name, path in args.input or []:
        if name not in index:
            raise CommandError(f"@{func_name(func)} has no input '{name}'; its inputs are {', '.join(names)}")
        i = index[name]
        if i in given:
            raise CommandError(f"input '{names[i]}' is given twice")
        given[i] = (path, _load_array(path))
    dims = dict(args.dim or [])
    for i, (path, array) in sorted(given.items()):
        t = params[i].type
        label = f"input '{names[i]}' ({path})"
        if isinstance(t, TensorType) and array.dtype != storage_dtype(t.element):
            raise CommandError(f"{label}: expected dtype {storage_dtype(t.element)} for {t}, got {array.dtype}")
        try:
            check_value(array, t, label, dims)
        except InterpreterError as e:
            raise CommandError(str(e)) from None
    missing = [names[i] for i in range(len(params)) if i not in given]
    if missing and not args.random_inputs:
        raise CommandError(
            f"@{func_name(func)}: missing input{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            "(give --input NAME=FILE.npy or --random-inputs)"
        )
    rng = np.random.default_rng(args.seed)
    out = []
    for i, param in enumerate(params):
        if i in given:
            out.append(given[i][1])
        else:
            out.append(_random_input(param, f"'{names[i]}'", dims, rng))
    return out


def _summary(name: str, array: np.ndarray, t: Type, count: int = 6) -> str:
    """``output0: shape [2, 3], dtype f32, values [0.5, 1.0, ...]`` (the IR element type, numpy's shortest floats)."""
    flat = array.reshape(-1)
    if array.dtype == np.bool_:
        shown = ["true" if v else "false" for v in flat[:count]]
    elif array.dtype.kind == "f":
        shown = [str(v) for v in flat[:count]]
    else:
        shown = [str(int(v)) for v in flat[:count]]
    more = ", ..." if flat.size > count else ""
    dtype = t.element if isinstance(t, TensorType) else array.dtype
    return f"{name}: shape {list(array.shape)}, dtype {dtype}, values [{', '.join(shown)}{more}]"


def cmd_run_ir(args: argparse.Namespace) -> int:
    """Run a function in the reference interpreter, print a summary of each output and save them."""
    text, filename = _read_source(args.file)
    module = parse_module(text, filename)
    func = pick_function(module, args.func, "pick one with --func")
    inputs = _collect_inputs(func, args)
    results = run(module, inputs, func=func_name(func))
    out_dir = Path(args.output_dir) if args.output_dir is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    for i, (array, t) in enumerate(zip(results, func_type(func).results)):
        name = f"output{i}"
        if out_dir is not None:
            np.save(out_dir / f"{name}.npy", array)
        print(_summary(name, array, t))
    return 0


# --- ops ----------------------------------------------------------------------------------------
def cmd_ops(args: argparse.Namespace) -> int:
    """List the registered ops: signature (operands, attributes with defaults), traits and doc."""
    ops = registered_ops(args.dialect)
    if not ops:
        dialects = sorted({d.dialect for d in registered_ops()})
        raise CommandError(f"no dialect '{args.dialect}'; dialects are {', '.join(dialects)}")
    for opdef in ops:
        print(signature(opdef))
        if opdef.traits:
            print(f"    traits: {', '.join(sorted(opdef.traits))}")
        if opdef.doc:
            print(f"    {' '.join(opdef.doc.split())}")
    return 0


def add_ir_commands(sub: Any) -> None:
    """Add ``opt`` and ``run-ir`` to an argparse subparsers object."""
    opt = sub.add_parser("opt", help="parse, verify, run a pass pipeline and print the IR")
    opt.add_argument("file", metavar="FILE", help="input IR file ('-' reads stdin)")
    opt.add_argument("--passes", metavar="PIPELINE", help="pass pipeline, e.g. 'cse,fuse{max-ops=32}'")
    opt.add_argument("-o", "--output", metavar="OUT", help="write the IR to OUT instead of stdout")
    opt.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
    opt.add_argument("--timing", action="store_true", help="print a table of pass times (stderr)")
    opt.add_argument("--verify-each", action="store_true", help="verify the IR after every pass")
    opt.add_argument("--no-verify", action="store_true", help="skip verifying the input and the result")
    opt.set_defaults(handler=cmd_opt)

    run_ir = sub.add_parser("run-ir", help="run a function in the reference interpreter")
    run_ir.add_argument("file", metavar="FILE", help="input IR file ('-' reads stdin)")
    run_ir.add_argument("--func", metavar="NAME", help="function to run (default: main, or the only one)")
    run_ir.add_argument(
        "--input",
        metavar="NAME=FILE.npy",
        action="append",
        type=_key_value,
        help="an input by argument name (%%name) or position (arg0); repeatable",
    )
    run_ir.add_argument("--random-inputs", action="store_true", help="fill inputs not given with random data")
    run_ir.add_argument("--seed", type=int, default=0, help="seed of --random-inputs (default 0)")
    run_ir.add_argument(
        "--dim",
        metavar="NAME=SIZE",
        action="append",
        type=_dim_size,
        help="size of a named dimension [NAME] for --random-inputs; repeatable",
    )
    run_ir.add_argument("--output-dir", metavar="DIR", help="save each output as DIR/output<i>.npy")
    run_ir.set_defaults(handler=cmd_run_ir)


def add_ops_command(sub: Any) -> None:
    """Add ``ops`` to an argparse subparsers object."""
    ops = sub.add_parser("ops", help="list the registered ops")
    ops.add_argument("--dialect", metavar="NAME", help="only the ops of this dialect (e.g. graph)")
    ops.set_defaults(handler=cmd_ops)
