"""Tensorium's benchmarks: fixed float32 workloads timed against numpy, PyTorch eager, torch.compile and onnxruntime.

``python -m benchmarks`` (or ``tensorium bench``) runs them; docs/benchmarks.md explains the method. The
submodules (harness, runners, workloads) need torch and are imported when used; ``benchmarks.fuzzing``
holds the fuzzer's evaluation (docs/fuzzing.md) and needs only Tensorium.
"""
