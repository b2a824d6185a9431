"""The ``tensorium`` command line, one module per group of subcommands.

- :mod:`~tensorium.cli.app`: the parser of every subcommand and ``main()``;
- :mod:`~tensorium.cli.ir`: the IR commands ``opt``, ``run-ir`` and ``ops``;
- :mod:`~tensorium.cli.model`: ``compile``, ``run`` and ``inspect`` for models and artifacts;
- :mod:`~tensorium.cli.bench`: ``bench`` (the harness is :mod:`tensorium.bench`);
- :mod:`~tensorium.cli.fuzz`: ``fuzz`` (the fuzzer is :mod:`tensorium.fuzz`);
- :mod:`~tensorium.cli.args`: argument types the parsers share.

The console script ``tensorium`` is :func:`main`.
"""

from __future__ import annotations

from .app import build_parser, main

__all__ = ["build_parser", "main"]
