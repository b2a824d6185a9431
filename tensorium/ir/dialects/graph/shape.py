"""Graph ops: shape (declarations are added here)."""

from __future__ import annotations
