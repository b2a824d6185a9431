"""Canonicalization patterns of the graph dialect (declarations are added here)."""

from __future__ import annotations
