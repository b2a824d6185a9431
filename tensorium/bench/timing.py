"""What every timing loop in the benchmarks shares: letting the last runner's worker threads go to sleep.

Libraries keep their worker threads spinning for a while after a call returns, so that the next call starts
without a wake-up: OpenBLAS (numpy's BLAS) for about 2**28 cycles (a tenth of a second), onnxruntime's and
OpenMP's pools for less, Tensorium's for 400,000 cycles. On a machine with as many cores as threads, a runner
timed right after another shares the cores with those spinning threads: on the project's 2-core hosts a k-bit
GEMV timed right after numpy's f32 GEMV ran 1.8x slower (median over five rounds) than the same kernel timed
second, and 0.3 s between runners made the two equal (stop 31). Interleaved rounds call :func:`let_threads_park`
before each runner's turn.
"""

from __future__ import annotations

import time

PARK_SECONDS = 0.3
"""Seconds to wait before a runner's turn: longer than OpenBLAS's spin (0.02 s left the penalty, 0.1 s most of
it gone, 0.3 s all of it, in the measurement of the module docstring)."""


def let_threads_park(seconds: float | None = None) -> None:
    """Sleep ``seconds`` (default :data:`PARK_SECONDS`) so that the worker threads of whatever ran last stop
    spinning and sleep."""
    time.sleep(PARK_SECONDS if seconds is None else seconds)
