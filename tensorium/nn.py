"""``tensorium.nn``: the tracer's functional ops (:mod:`tensorium.frontend.tracer.nn`) under their public name.

This module makes ``import tensorium.nn`` name the very module ``tensorium.frontend.tracer.nn`` (one module
object, not a copy), so ``from tensorium import nn`` and ``tensorium.nn.gelu`` keep working.
"""

from __future__ import annotations

import sys

from .frontend.tracer import nn as _nn

sys.modules[__name__] = _nn
