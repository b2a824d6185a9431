"""Graph ops: nn (declarations are added here)."""

from __future__ import annotations
