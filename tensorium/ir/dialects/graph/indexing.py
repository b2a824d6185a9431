"""Graph ops: indexing (declarations are added here)."""

from __future__ import annotations
