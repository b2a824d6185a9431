"""The ``tensorium`` command line: the parser of every subcommand and :func:`main`. The subcommands live
beside it: ``opt``, ``run-ir`` and ``ops`` in :mod:`.ir`, ``compile``, ``run`` and ``inspect`` in
:mod:`.model`, ``bench`` in :mod:`.bench`, ``fuzz`` in :mod:`.fuzz` and ``tune`` in :mod:`.tune`.

Every user error (bad IR, a bad pipeline, bad inputs, an unreadable file) prints one message on stderr
and exits with status 1; argparse usage errors exit with status 2. Anything else is a bug and raises.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ParseError, TensoriumError, VerifyError
from ..version import __version__
from .bench import add_bench_command
from .fuzz import add_fuzz_command
from .ir import add_ir_commands, add_ops_command
from .model import add_model_commands
from .tune import add_tune_command

PROG = "tensorium"


def format_error(error: TensoriumError | OSError) -> str:
    """The one message printed for a user error: located errors as ``file:line:col: error: ...``."""
    if isinstance(error, OSError):
        if error.filename is not None and error.strerror:
            return f"{PROG}: error: {error.filename}: {error.strerror}"
        return f"{PROG}: error: {error}"
    text = str(error)
    if isinstance(error, (ParseError, VerifyError)) and error.loc is not None:
        return text
    return f"{PROG}: {text}" if text.startswith("error: ") else f"{PROG}: error: {text}"


# --- entry point --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog=PROG, description="Tensorium: an MLIR-style tensor compiler.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_ir_commands(sub)
    add_model_commands(sub)
    add_bench_command(sub)
    add_fuzz_command(sub)
    add_tune_command(sub)
    add_ops_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 1 user error; usage errors exit 2)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (TensoriumError, OSError) as e:
        print(format_error(e), file=sys.stderr)
        return 1
