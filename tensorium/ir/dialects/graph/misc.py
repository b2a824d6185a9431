"""Graph ops: less common tensor ops (declarations are added here)."""

from __future__ import annotations

from ...semantics import ELEMENTWISE
from .common import unary

asin = unary("asin", ELEMENTWISE["asin"], doc="arcsine in [-pi/2, pi/2]; NaN outside [-1, 1]")
acos = unary("acos", ELEMENTWISE["acos"], doc="arccosine in [0, pi]; NaN outside [-1, 1]")
atan = unary("atan", ELEMENTWISE["atan"], doc="arctangent in (-pi/2, pi/2)")
