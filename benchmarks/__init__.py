"""Tensorium's benchmarks: fixed float32 workloads timed against numpy, PyTorch eager, torch.compile and onnxruntime.

``python -m benchmarks`` (or ``tensorium bench``) runs them; docs/benchmarks.md explains the method.
"""

from . import harness, runners, workloads

__all__ = ["harness", "runners", "workloads"]
