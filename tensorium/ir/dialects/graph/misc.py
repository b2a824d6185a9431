"""Graph ops: less common tensor ops (declarations are added here)."""

from __future__ import annotations
