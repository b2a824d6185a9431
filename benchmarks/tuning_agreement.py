"""How far recordings of one kernel space agree, and the shipped cost model's recall against each (a benchmark).

    python benchmarks/tuning.py --exhaust 110 --clock cpu --kernel 7220fa9e --db a.jsonl   # twice or more
    python benchmarks/tuning_agreement.py benchmarks/tuning/zen4/*.jsonl

Recordings (``--exhaust`` files) are grouped by the kernel they measured. For each pair of recordings of a
kernel: Kendall tau of their times, the overlap of their 10 fastest points, the 5th-95th percentile of the
ratio of their times, and each one's best point timed in the other over the other's best. For each recording:
the shipped model's (``tensorium/autotune/warm_start.json``) Kendall tau, top-10 recall and top-1 choice against
it, and its top-10 recall against the median of the recordings. No model can recall a recording's 10 fastest
points better than another recording of the same space does: the pairs' top-10 overlap is the ceiling that
the issue's top-10 recall target is judged against.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

from tensorium.autotune.model import kendall_tau, load_warm_start
from tensorium.autotune.records import TuningDB


def load(path: Path) -> tuple[str, dict[str, tuple[float, tuple[float, ...]]]]:
    """A recording (a records file of one kernel): its kernel key and each measured point's (seconds, features)
    by config text."""
    points: dict[str, tuple[float, tuple[float, ...]]] = {}
    kernel = ""
    for record in TuningDB(path).records:
        kernel = record.kernel
        if record.seconds is not None:
            points[record.config] = (record.seconds, record.features)
    return kernel, points


def _top(times: np.ndarray, k: int = 10) -> set[int]:
    return set(np.argsort(times)[:k].tolist())


def report(paths: list[Path]) -> None:
    """Print the agreement of the recordings in ``paths`` and the shipped model's recall (see the module docstring)."""
    groups: dict[str, list[dict[str, tuple[float, tuple[float, ...]]]]] = {}
    for path in paths:
        kernel, points = load(path)
        groups.setdefault(kernel, []).append(points)
    overlaps, recalls = [], []
    for kernel, recordings in groups.items():
        common = sorted(set.intersection(*(set(r) for r in recordings)))
        times = [np.array([r[c][0] for c in common]) for r in recordings]
        features = np.array([recordings[0][c][1] for c in common])
        model = load_warm_start(features.shape[1])
        if model is None:
            raise SystemExit("the shipped model does not load here (missing, or features of another width)")
        scores = model.predict(features)
        print(f"{kernel[:8]}: {len(common)} points, {len(recordings)} recordings")
        for (i, a), (j, b) in itertools.combinations(enumerate(times, 1), 2):
            overlap = len(_top(a) & _top(b)) / 10
            overlaps.append(overlap)
            low, high = np.percentile(b / a, [5, 95])
            print(
                f"  recordings {i} and {j}: tau {kendall_tau(-a, -b):.2f}, top-10 overlap {overlap:.1f}, ratio 5-95% "
                f"{low:.2f}-{high:.2f}, {i}'s best in {j} {b[np.argmin(a)] / b.min():.3f}, "
                f"{j}'s best in {i} {a[np.argmin(b)] / a.min():.3f}"
            )
        picked = set(np.argsort(-scores)[:10].tolist())
        for i, t in enumerate(times, 1):
            recall = len(picked & _top(t)) / 10
            recalls.append(recall)
            print(
                f"  shipped model against recording {i}: tau {kendall_tau(scores, -t):.2f}, top-10 recall "
                f"{recall:.1f}, its first choice {t[np.argmax(scores)] / t.min():.3f}x the best"
            )
        median = np.median(np.array(times), axis=0)
        print(f"  shipped model against the median recording: top-10 recall {len(picked & _top(median)) / 10:.1f}")
    if overlaps and recalls:
        print(
            f"mean top-10 overlap of two recordings {np.mean(overlaps):.2f} ({len(overlaps)} pairs); "
            f"mean top-10 recall of the shipped model {np.mean(recalls):.2f} ({len(recalls)} recordings)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recordings", nargs="+", type=Path, help="--exhaust files (two or more per kernel)")
    args = parser.parse_args(argv)
    report(args.recordings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
