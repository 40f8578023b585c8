"""Scopes as text: the ``tenant=acme, user=u_42`` form people type and read.

One formatter and one lenient parser, shared by the command line and the memory
lens, so a scope printed anywhere can be pasted back into a scope field. Strict
pair lists (``--scope`` options, MCP arguments, SSE query values) go through
:func:`recallstore.records.parse_scope_pairs`, which this module builds on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from recallstore.records import parse_scope_pairs

__all__ = ["SCOPE_PAIR_SEPARATOR", "format_scope", "parse_scope_text"]

SCOPE_PAIR_SEPARATOR = ", "
"""What :func:`format_scope` puts between two pairs."""

# A comma separates two pairs only when what follows looks like another ``key=``, so a
# value such as ``note=a,b`` survives intact.
_PAIR_SEPARATOR = re.compile(r",\s*(?=[^=,]+=)")


def format_scope(scope: Mapping[str, str]) -> str:
    """``{"tenant": "acme", "user": "u_42"}`` → ``tenant=acme, user=u_42`` (``""`` when empty).

    Pairs keep ``scope``'s order (canonical scopes are sorted by key). The text reads
    back through :func:`parse_scope_text` unless a value itself holds ``", key="``.
    """
    return SCOPE_PAIR_SEPARATOR.join(f"{key}={value}" for key, value in scope.items())


def parse_scope_text(values: Iterable[str]) -> dict[str, str]:
    """The canonical scope named by typed ``values``.

    Each value is ``key=value``; one value may hold several pairs separated by commas
    (``tenant=acme, user=u_42``), as a text field sends them. Blank values are
    ignored, and spaces around keys and values dropped. A pair without ``=`` or with
    an empty key raises :class:`~recallstore.errors.MemoryValidationError` on field
    ``scope``.
    """
    pairs = [
        pair.strip()
        for value in values
        for pair in _PAIR_SEPARATOR.split(value.strip())
        if pair.strip()
    ]
    # The text field is typed by a person: spaces around keys and values are not meant.
    return parse_scope_pairs(
        f"{key.strip()}{separator}{part.strip()}"
        for key, separator, part in (pair.partition("=") for pair in pairs)
    )
