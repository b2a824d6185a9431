"""Argument types shared by the command-line parsers (``tensorium bench``, ``fuzz``, ``run``, ``tune``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..errors import TensoriumError


def positive(kind: type) -> Callable[[str], Any]:
    """An argparse ``type`` that reads a number of ``kind`` (int or float) and refuses zero and below."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
        return value

    return parse


def dim_sizes(items: list[str] | None) -> dict[str, int]:
    """The sizes ``--dim NAME=SIZE`` options give, by name; TensoriumError naming a malformed one."""
    dims = {}
    for item in items or []:
        name, _, size = item.partition("=")
        if not name or not size.isdigit():
            raise TensoriumError(f"--dim expects NAME=SIZE with a non-negative size, got '{item}'")
        dims[name] = int(size)
    return dims
