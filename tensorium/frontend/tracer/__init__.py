"""Tensorium's own frontend: a numpy-like :class:`~tensorium.frontend.tracer.tensor.Tensor` whose
operations, and the functions of :mod:`~tensorium.frontend.tracer.nn`, record graph ops through one
``bind()``; :func:`~tensorium.frontend.tracer.tensor.trace` turns a Python function into a graph module.

The public names are ``tensorium.Tensor``, ``tensorium.trace`` and ``tensorium.nn``.
"""

from __future__ import annotations

from . import nn
from .tensor import Tensor, TracerError, trace

__all__ = ["Tensor", "TracerError", "nn", "trace"]
