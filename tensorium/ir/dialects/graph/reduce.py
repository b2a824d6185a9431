"""Graph ops: reduce (declarations are added here)."""

from __future__ import annotations
