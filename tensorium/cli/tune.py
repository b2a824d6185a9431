"""``tensorium tune``: search a model's kernels within a time budget and keep the records; move records
between machines with ``--export`` / ``--import``."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, TextIO

from ..api import check_pipeline, check_target
from ..autotune.records import TuningDB, TuningRecordsWarning, default_db_path
from ..errors import TensoriumError
from .args import dim_sizes


def cmd_tune(args: argparse.Namespace) -> int:
    """Tune MODEL's kernels (and/or import or export records); records-file warnings print as one line each."""
    with warnings.catch_warnings():  # restores showwarning on the way out
        warnings.simplefilter("always", TuningRecordsWarning)
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, TuningRecordsWarning):
                print(f"tensorium: warning: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        return _tune(args)


def _tune(args: argparse.Namespace) -> int:
    db = TuningDB(args.db or default_db_path())
    if args.import_file:
        added = db.merge(TuningDB(args.import_file))
        print(f"imported {added} records from {args.import_file} into {db.path}", file=sys.stderr)
    if args.model:
        _tune_model(args, db)
    elif not (args.import_file or args.export_file):
        raise TensoriumError("give a MODEL to tune, or --import / --export FILE")
    if args.export_file:
        out = TuningDB(args.export_file)
        added = out.merge(db)
        print(f"exported {added} records to {out.path}", file=sys.stderr)
    return 0


def _tune_model(args: argparse.Namespace, db: TuningDB) -> None:
    from ..autotune.search import SearchOptions
    from ..autotune.tuning import tune_kernels
    from ..ir.verifier import verify
    from ..lowering.space import tunable_kernels
    from ..passes import PassManager
    from .model import _import

    if args.budget <= 0:
        raise TensoriumError(f"--budget must be positive seconds, got {args.budget:g}")
    dims = dim_sizes(args.dim)  # a bad option is reported before the budget is spent
    target = check_target(args.target)
    imported, frontend = _import(args.model)
    PassManager.parse(check_pipeline(None, target, ())).run(imported.module)
    verify(imported.module)
    kernels = tunable_kernels(imported.module, target)
    print(
        f"{args.model} ({frontend}): {len(kernels)} tunable kernels on {target}; budget {args.budget:g} s; "
        f"records in {db.path}",
        file=sys.stderr,
    )
    before = len(db)
    options = SearchOptions(seed=args.seed, model=args.model_kind)
    measurer = None
    if args.ray:
        from ..autotune.distributed import RayMeasurer

        measurer = RayMeasurer(address=args.ray)
    try:
        results = tune_kernels(kernels, target, args.budget, db, options, _progress, measurer)
    except KeyboardInterrupt:
        print(f"\ninterrupted: the {len(db) - before} records measured so far are kept in {db.path}", file=sys.stderr)
        raise SystemExit(130) from None
    for r in results:
        best = f"{r.best_seconds * 1e6:.1f} us" if r.best_seconds else "-"
        print(
            f"{r.key} {r.family}: {r.best} {best}, {r.speedup:.2f}x the default ({r.trials} trials, "
            f"{r.failures} failed){'; ' + r.verdict if r.verdict else ''}"
        )
    if args.plot:
        from ..autotune.plot import write_svg

        print(f"plot: {write_svg(results, args.plot)}", file=sys.stderr)
    if args.check:
        _check_model(args, imported, target, db, dims)


def _check_model(args: argparse.Namespace, imported: Any, target: Any, db: TuningDB, dims: dict[str, int]) -> None:
    """The whole-model check (:mod:`tensorium.autotune.model_check`) on seeded random inputs."""
    from ..api import artifact_of, json_tree
    from ..autotune.model_check import check_model, random_inputs

    artifact = artifact_of(imported, target, check_pipeline(None, target, ()), json_tree(imported))
    try:
        inputs = random_inputs(artifact, dims, seed=args.seed)
    except TensoriumError as e:
        print(f"whole-model check skipped ({e}); the records are kept unchecked", file=sys.stderr)
        return
    try:
        check = check_model(artifact, db, inputs, progress=_progress)
    except KeyboardInterrupt:
        print("\ninterrupted: the whole-model check did not finish; every record is kept", file=sys.stderr)
        raise SystemExit(130) from None
    print(check.describe())


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def add_tune_command(subparsers: Any) -> None:
    """Register ``tensorium tune``."""
    p = subparsers.add_parser("tune", help="tune a model's kernels and record the best points")
    p.add_argument("model", nargs="?", help="an .onnx file or path.py:factory returning (model, example inputs)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of tuning for the whole model (default 60)")
    p.add_argument("--db", help="the records file (default $TENSORIUM_TUNING_DB, else tuning.jsonl in the cache)")
    p.add_argument("-t", "--target", default="cpu", help="target (default cpu: this machine)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    p.add_argument("--model-kind", default="auto", choices=("auto", "lightgbm", "mlp"), help="the cost model")
    p.add_argument("--ray", metavar="ADDRESS", help="measure on this Ray cluster ('auto', ray://host:10001)")
    p.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="skip the whole-model check (the tuned model timed against the default one on random inputs; "
        "its points are set aside unless it is as fast)",
    )
    p.add_argument("--dim", action="append", metavar="NAME=SIZE", help="size of a dynamic dim for the check's inputs")
    p.add_argument("--plot", help="write best speed-up against time per kernel to this SVG file")
    p.add_argument("--export", dest="export_file", metavar="FILE", help="write the records to FILE (JSON lines)")
    p.add_argument("--import", dest="import_file", metavar="FILE", help="merge the records of FILE first")
    p.set_defaults(handler=cmd_tune)
