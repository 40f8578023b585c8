"""Query vectors asked for ahead of their search (``HybridSearch.prepare_query``).

A vector asked for ahead is not begun at once: it is begun when the query embedding
in flight next ends (a recall with a time phrase embeds the window's text first), or
by its own search if nothing began it before. Begun at once, the two embeddings and
the search between them shared a 2-core machine's cores, and the first search slowed
by as much as the second saved (docs/benchmarks.md, "A time phrase's second
embedding"). A search takes a vector by its exact text; a few wait at most, the
oldest given up first.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final

__all__ = ["PREPARED_QUERIES", "PreparedVectors"]

PREPARED_QUERIES: Final = 4
"""Query vectors asked for ahead that wait for their search."""


class _Prepared:
    """One vector asked for ahead: ``future`` holds what ``begin()`` makes, once begun."""

    def __init__(self, make: Callable[[], Future[Any]]) -> None:
        self.future: Future[Any] = Future()
        self._make = make
        self._begun = False
        self._lock = threading.Lock()

    def begin(self) -> None:
        """Make the vector now, unless it was begun already or given up (any thread)."""
        with self._lock:
            if self._begun:
                return
            self._begun = True
            if not self.future.set_running_or_notify_cancel():
                return
        try:
            made = self._make()
        except Exception as exc:  # e.g. an interpreter shutting down its threads
            self.future.set_exception(exc)
            return
        made.add_done_callback(self._copy)

    def _copy(self, made: Future[Any]) -> None:
        if made.cancelled():
            self.future.set_exception(RuntimeError("the query's embedding was cancelled"))
        elif (error := made.exception()) is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(made.result())


class PreparedVectors:
    """A store's query vectors asked for ahead, by text (used on its event loop's thread)."""

    def __init__(self) -> None:
        self._waiting: OrderedDict[str, _Prepared] = OrderedDict()

    def __contains__(self, text: object) -> bool:
        return text in self._waiting

    def add(self, text: str, make: Callable[[], Future[Any]]) -> None:
        """Ask for ``text``'s vector, made by ``make()`` when it is begun."""
        self._waiting[text] = _Prepared(make)
        while len(self._waiting) > PREPARED_QUERIES:
            _, unused = self._waiting.popitem(last=False)
            unused.future.cancel()

    def begin_after(self, embedding: Future[Any] | asyncio.Future[Any]) -> None:
        """Begin the vectors asked for so far once ``embedding`` (a search's) ends."""
        waiting = list(self._waiting.values())

        def begin(_: object) -> None:
            for prepared in waiting:
                prepared.begin()

        if waiting:
            embedding.add_done_callback(begin)

    def take(self, text: str) -> Future[Any] | None:
        """``text``'s vector if it was asked for (begun now if it was not yet), else None."""
        prepared = self._waiting.pop(text, None)
        if prepared is None or prepared.future.cancelled():
            return None
        prepared.begin()
        return prepared.future

    def clear(self) -> None:
        """Give up every vector asked for (the store's model changed)."""
        while self._waiting:
            _, unused = self._waiting.popitem()
            unused.future.cancel()
