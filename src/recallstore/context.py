"""Which conversation and run a store call belongs to, carried in a context variable.

The toolbox and ``assemble_recall`` enter :func:`call_context` around their store
calls; observers (events, tracing) read :func:`current_call_context` so every event
names its conversation without the store protocol having to carry it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

__all__ = ["DUPLICATE_CHECK", "CallContext", "call_context", "current_call_context"]


@dataclass(frozen=True, slots=True)
class CallContext:
    """The conversation and run on whose behalf memory is being used, and why, when the
    call is one nobody asked for by name (``purpose``, e.g. :data:`DUPLICATE_CHECK`)."""

    conversation_id: str | None = None
    run_id: str | None = None
    purpose: str | None = None


DUPLICATE_CHECK: Final = "duplicate_check"
"""The purpose of the search a save makes first, for an equal valid memory."""

_EMPTY = CallContext()
_current: ContextVar[CallContext | None] = ContextVar("recallstore_call_context", default=None)


def current_call_context() -> CallContext:
    """The innermost active :class:`CallContext` (empty when none is active)."""
    return _current.get() or _EMPTY


@contextmanager
def call_context(
    *, conversation_id: str | None = None, run_id: str | None = None, purpose: str | None = None
) -> Iterator[CallContext]:
    """Attribute the store calls made inside the block to this conversation and run
    (and ``purpose``: search events carry it)."""
    context = CallContext(conversation_id=conversation_id, run_id=run_id, purpose=purpose)
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)
