"""Whole-number options (``--limit``, ``--batch-size``...): refused by the parser when
out of range, so a command never runs on a value that silently does nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["at_least"]


def at_least(low: int, most: int | None = None) -> Callable[[str], int]:
    """An argparse ``type=`` taking a whole number ``>= low`` (and ``<= most``); anything
    else is a usage error naming the value
    (``argument --limit: must be a whole number from 1 to 1000, got '0'``)."""
    wanted = f">= {low}" if most is None else f"from {low} to {most}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (most is not None and value > most):
            raise argparse.ArgumentTypeError(f"must be a whole number {wanted}, got {text!r}")
        return value

    parse.__name__ = f"whole number {wanted}"  # what argparse names in its own messages
    return parse
