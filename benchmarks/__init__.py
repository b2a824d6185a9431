"""Tensorium's benchmark results and the fuzzer's evaluation, beside the package.

The benchmark harness, its runners and workloads live in the package (:mod:`tensorium.bench`), so
``tensorium bench`` works from an installed wheel; ``python -m benchmarks`` is the same program run from a
checkout, and RESULTS.md / RESULTS.json are what it measured here. ``benchmarks.fuzzing`` holds the
fuzzer's evaluation (docs/fuzzing.md) and needs only Tensorium; the scripts beside it measure parts of the
compiler (``cold_compile.py``: compile time by stage; ``decompose_math.py``: native against decomposed math).
"""
