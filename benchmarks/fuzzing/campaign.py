"""A long fuzzing campaign over the whole pipeline, and its coverage over time as an SVG plot.

    python -m benchmarks.fuzzing.campaign run --seconds 3600 --jobs 2 --seed 0 --out /tmp/campaign
    python -m benchmarks.fuzzing.campaign plot --out /tmp/campaign --svg docs/fuzzing-campaign.svg

``run`` starts ``python -m tensorium fuzz`` (every default on: all mutators, the default backends and
layers) in a fresh process, keeps its progress lines in ``progress.log`` and its summary in
``summary.txt`` beside the failures the fuzzer writes under ``--out``. Run it from a snapshot of the
source tree (``git worktree add /tmp/snap HEAD; cd /tmp/snap``) when the tree may change meanwhile: the
campaign then fuzzes one fixed version. ``plot`` reads the progress lines (seconds, executions, edges,
percentage of lines; a run with several workers prints the best worker's lines and no edges) and
draws the share of lines covered and the executions against time.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

PROGRESS = re.compile(
    r"\[\s*(?P<seconds>[\d.]+)s\].*?execs (?P<execs>\d+).*?(?:edges (?P<edges>\d+)\s+)?lines (?P<lines>[\d.]+)%"
)


def run(args: argparse.Namespace) -> int:
    """Fuzz for ``--seconds`` with ``--jobs`` workers, logging progress lines to ``OUT/progress.log``."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "tensorium", "fuzz",
        "--time", str(args.seconds), "--jobs", str(args.jobs), "--seed", str(args.seed), "--out", str(out),
    ]  # fmt: skip
    with (out / "progress.log").open("w") as progress, (out / "summary.txt").open("w") as summary:
        done = subprocess.run(command, stdout=summary, stderr=progress, check=False)
    print((out / "summary.txt").read_text())
    return done.returncode


def read_progress(path: Path) -> list[tuple[float, int, int, float]]:
    """(seconds, executions, edges, percent of lines) for each progress line of a fuzzing log."""
    samples = []
    for line in path.read_text().splitlines():
        m = PROGRESS.search(line)
        if m:
            edges = int(m["edges"]) if m["edges"] else 0
            samples.append((float(m["seconds"]), int(m["execs"]), edges, float(m["lines"])))
    return samples


def progress_svg(samples: list[tuple[float, int, int, float]], width: int = 720, height: int = 360) -> str:
    """Percent of Tensorium's lines covered (blue, left axis) and executions (grey, right axis) against time."""
    if not samples:
        raise SystemExit("no progress lines to plot: was the campaign run with progress output?")
    left, right, top, bottom = 70, 70, 20, 50
    xmax = max(s[0] for s in samples) or 1.0
    emax = max(s[3] for s in samples) * 1.05 or 1.0
    nmax = max(s[1] for s in samples) * 1.05 or 1.0

    def x(t: float) -> float:
        return left + (width - left - right) * t / xmax

    def y(v: float, vmax: float) -> float:
        return height - bottom - (height - top - bottom) * v / vmax

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#1f5fbf"/>',
        f'<line x1="{width - right}" y1="{top}" x2="{width - right}" y2="{height - bottom}" stroke="#999"/>',
    ]
    for i in range(6):
        t, e, n = xmax * i / 5, emax * i / 5, nmax * i / 5
        parts.append(f'<text x="{x(t):.0f}" y="{height - bottom + 16}" text-anchor="middle">{t / 60:.0f}</text>')
        parts.append(f'<text x="{left - 6}" y="{y(e, emax) + 4:.0f}" text-anchor="end">{e:.0f}%</text>')
        parts.append(f'<text x="{width - right + 6}" y="{y(n, nmax) + 4:.0f}">{n:.0f}</text>')
        parts.append(
            f'<line x1="{left}" y1="{y(e, emax):.1f}" x2="{width - right}" y2="{y(e, emax):.1f}" stroke="#eee"/>'
        )
    mid = (top + height - bottom) / 2
    parts += [
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 12}" text-anchor="middle">minutes</text>',
        f'<text x="16" y="{mid:.0f}" text-anchor="middle" transform="rotate(-90 16 {mid:.0f})">lines covered</text>',
        f'<text x="{width - 12}" y="{mid:.0f}" text-anchor="middle" '
        f'transform="rotate(90 {width - 12} {mid:.0f})">executions</text>',
    ]
    edges = " ".join(f"{x(s[0]):.1f},{y(s[3], emax):.1f}" for s in samples)
    execs = " ".join(f"{x(s[0]):.1f},{y(s[1], nmax):.1f}" for s in samples)
    parts.append(f'<polyline points="{execs}" fill="none" stroke="#999999" stroke-width="1.5"/>')
    parts.append(f'<polyline points="{edges}" fill="none" stroke="#1f5fbf" stroke-width="2"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line: ``run`` a campaign or ``plot`` one."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzzing.campaign", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fuzz the whole pipeline for a long time")
    r.add_argument("--seconds", type=float, default=3600)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", required=True)
    p = sub.add_parser("plot", help="draw a campaign's coverage over time")
    p.add_argument("--out", required=True)
    p.add_argument("--svg", required=True)
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args)
    Path(args.svg).write_text(progress_svg(read_progress(Path(args.out) / "progress.log")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
