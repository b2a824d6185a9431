"""``python -m tensorium``: the command line (see :mod:`tensorium.cli`)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
