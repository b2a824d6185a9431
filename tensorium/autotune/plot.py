"""An SVG plot of a tuning run: best speed-up over the default against time, one line per kernel and one
for the whole model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .search import KernelResult

WIDTH, HEIGHT, MARGIN = 640, 400, 50
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def speedup_curves(results: Sequence[KernelResult]) -> list[tuple[str, list[tuple[float, float]]]]:
    """Each kernel's (seconds since tuning began, best speed-up so far over the default) points."""
    curves = []
    for r in results:
        if not r.default_seconds:
            continue
        points = [(r.started + t, r.default_seconds / best) for t, best in r.history]
        curves.append((f"{r.family} {r.key[:8]}", points or [(0.0, 1.0)]))
    return curves


def model_curve(results: Sequence[KernelResult]) -> list[tuple[float, float]]:
    """The whole model's (seconds since tuning began, speed-up so far): the sum of the kernels' default
    times over the sum of their best times at each moment (one call of each kernel)."""
    timed = [r for r in results if r.default_seconds and r.history]
    if not timed:
        return []
    default = sum(r.default_seconds or 0.0 for r in timed)
    events = sorted((r.started + t, i, best) for i, r in enumerate(timed) for t, best in r.history)
    best = [r.default_seconds or 0.0 for r in timed]
    curve = []
    for moment, i, seconds in events:
        best[i] = min(best[i], seconds)
        curve.append((moment, default / sum(best)))
    return curve


def write_svg(results: Sequence[KernelResult], path: str | Path) -> Path:
    """Write the plot to ``path`` (SVG) and return it."""
    curves = speedup_curves(results)
    whole = model_curve(results)
    if len(curves) > 1 and whole:
        curves.append(("the model", whole))
    t_max = max((t for _, pts in curves for t, _ in pts), default=1.0) or 1.0
    s_max = max((s for _, pts in curves for _, s in pts), default=1.0) * 1.1 or 1.0

    def xy(t: float, s: float) -> str:
        x = MARGIN + (WIDTH - 2 * MARGIN) * t / t_max
        y = HEIGHT - MARGIN - (HEIGHT - 2 * MARGIN) * s / s_max
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<polyline points="{xy(0, 0)} {xy(t_max, 0)}" stroke="black" fill="none"/>',
        f'<polyline points="{xy(0, 0)} {xy(0, s_max)}" stroke="black" fill="none"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" text-anchor="middle">seconds of tuning ({t_max:.1f} s)</text>',
        f'<text x="12" y="{MARGIN - 20}">best speed-up over the default (top: {s_max:.2f}x)</text>',
    ]
    for i, (name, points) in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        steps = []
        for j, (t, s) in enumerate(points):
            if j:
                steps.append(xy(t, points[j - 1][1]))
            steps.append(xy(t, s))
        steps.append(xy(t_max, points[-1][1]))
        parts.append(f'<polyline points="{" ".join(steps)}" stroke="{color}" fill="none" stroke-width="2"/>')
        parts.append(f'<text x="{WIDTH - MARGIN - 150}" y="{MARGIN + 15 * i}" fill="{color}">{name}</text>')
    parts.append("</svg>")
    out = Path(path)
    out.write_text("\n".join(parts) + "\n")
    return out
