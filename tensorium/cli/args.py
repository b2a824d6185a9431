"""Argument types shared by the command-line parsers (``tensorium bench``, ``tensorium fuzz``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


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
