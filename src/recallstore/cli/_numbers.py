"""Whole-number options (``--limit``, ``--batch-size``...): refused by the parser when
out of range, so a command never runs on a value that silently does nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["at_least"]


def at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type=`` taking a whole number ``>= low``; anything else is a usage
    error naming the value (``argument --limit: must be a whole number >= 1, got '0'``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}, got {text!r}")
        return value

    parse.__name__ = f"whole number >= {low}"  # what argparse names in its own messages
    return parse
