"""Blocking calls over recallstore, for scripts, notebooks and synchronous frameworks.

recallstore is async. :class:`SyncMemoryStore` opens any backend on a
:class:`BackgroundLoop` (an event loop on a daemon thread of its own) and gives the
store's calls as plain methods; :class:`SyncToolbox` and :class:`SyncMemoryCapability`
do the same for the toolbox and the per-conversation recall. Every call is forwarded to
that one loop and waited for, so the store's connections only ever see the loop they
were opened on.

Thread-safety: any number of threads may call one ``SyncMemoryStore`` (or the toolboxes
made from it) at once; the calls interleave on the loop as concurrent coroutines do, with
the store's own guarantees (atomic writes, a chain never forks). A call from a coroutine
running *on* the background loop would wait for itself, and is refused with
:class:`~recallstore.errors.ConfigurationError`. ``close()`` (or leaving the ``with``
block) closes the store, then stops the loop and joins its thread; a call after that,
or one still running then, raises :class:`~recallstore.errors.StoreUnavailableError`.
A store never closed is closed when its loop is garbage-collected (nothing references
the store, its toolboxes or the loop any more). In a process forked after the store was
opened, calls raise :class:`~recallstore.errors.ConfigurationError`: open it after
forking. A call interrupted by ``KeyboardInterrupt`` is cancelled and waited for first:
a write has then landed whole or not at all (see ``recallstore._background_loop``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import tzinfo
from types import TracebackType
from typing import Any, Literal, Self

from recallstore._background_loop import BackgroundLoop
from recallstore.capability import MemoryCapability, MemoryInstance
from recallstore.load import load_memory_store
from recallstore.recall import (
    DEFAULT_BUDGET_CHARS,
    DEFAULT_PROFILE_LIMIT,
    DEFAULT_RECALL_LIMIT,
    Recall,
)
from recallstore.records import (
    MemoryHit,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryWriteInput,
)
from recallstore.store import Clock, MemoryStore, store_clock
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import Tool
from recallstore.toolset import MEMORY_TOOLS, MemoryToolSpec

__all__ = [
    "BackgroundLoop",
    "SyncMemoryCapability",
    "SyncMemoryInstance",
    "SyncMemoryStore",
    "SyncToolbox",
]


class SyncMemoryStore:
    """A :class:`~recallstore.store.MemoryStore` with blocking methods.

    ``store`` is a store that is not open yet, or what
    :func:`~recallstore.load.load_memory_store` takes (a path, ``memory:``, a URL).
    It is opened here, on ``loop`` (default: a :class:`BackgroundLoop` of its own, closed
    with the store). The methods are the protocol's six, with the same semantics and
    errors. ``store`` and ``loop`` stay reachable for async code that shares them.
    """

    def __init__(
        self, store: MemoryStore | str | os.PathLike[str], *, loop: BackgroundLoop | None = None
    ) -> None:
        self.store: MemoryStore = (
            load_memory_store(store) if isinstance(store, (str, os.PathLike)) else store
        )
        """The async store underneath; its coroutines must run on :attr:`loop`."""
        self._owns_loop = loop is None
        self.loop = BackgroundLoop() if loop is None else loop
        """The background loop the store was opened on."""
        try:
            self.loop.run(self.store.__aenter__())
        except BaseException:
            if self._owns_loop:
                self.loop.close()
            raise
        # Closed with the loop if close() is never called: when the loop is collected
        # (a re-run notebook cell), or closed.
        self.loop.adopt(self.store)

    @property
    def clock(self) -> Clock:
        """The async store's clock (:func:`~recallstore.store.store_clock`)."""
        return store_clock(self.store)

    def write(self, inputs: Sequence[MemoryWriteInput]) -> list[MemoryRecord]:
        """Write all ``inputs`` atomically; the records in input order."""
        return self.loop.run(self.store.write(inputs))

    def search(self, query: MemorySearchQuery) -> list[MemoryHit]:
        """Relevance-ordered hits for ``query`` (a recency listing when its text is blank)."""
        return self.loop.run(self.store.search(query))

    def get(self, id: str) -> MemoryRecord | None:
        """The record with ``id`` whatever its validity or expiry, or None."""
        return self.loop.run(self.store.get(id))

    def invalidate(self, id: str, reason: str | None = None) -> None:
        """Mark a record invalid (a no-op when it already is); missing → not found."""
        self.loop.run(self.store.invalidate(id, reason))

    def delete(self, id: str) -> None:
        """Forget a record completely; missing → no error."""
        self.loop.run(self.store.delete(id))

    def capabilities(self) -> MemoryStoreCapabilities:
        """What the backend offers."""
        return self.store.capabilities()

    def close(self) -> None:
        """Close the store, then its loop when it is the store's own (idempotent).

        Calls still running on other threads are cancelled and raise
        :class:`~recallstore.errors.StoreUnavailableError`. In a process forked after
        the store was opened, nothing is closed: the connections are the parent's.
        """
        if self.loop.closed or self.loop.forked:
            if self._owns_loop:
                self.loop.close()
            return
        self.loop.release(self.store)
        try:
            self.loop.run(self.store.__aexit__(None, None, None))
        finally:
            if self._owns_loop:
                self.loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SyncToolbox:
    """A :class:`~recallstore.toolbox.MemoryToolbox` whose :meth:`call` blocks.

    Built on a :class:`SyncMemoryStore` with the toolbox's own arguments (``scope`` must
    be non-empty); the tool definitions and the Manual are the async toolbox's.
    """

    def __init__(
        self,
        store: SyncMemoryStore,
        scope: Mapping[str, str],
        *,
        tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
        conversation_id: str | None = None,
        run_id: str | None = None,
        author: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._loop = store.loop
        self.toolbox = MemoryToolbox(
            store.store,
            scope,
            tools=tools,
            conversation_id=conversation_id,
            run_id=run_id,
            author=author,
            time_zone=time_zone,
            clock=clock,
        )
        """The async toolbox underneath."""

    @classmethod
    def _wrapping(cls, loop: BackgroundLoop, toolbox: MemoryToolbox) -> SyncToolbox:
        wrapped = cls.__new__(cls)
        wrapped._loop = loop
        wrapped.toolbox = toolbox
        return wrapped

    @property
    def scope(self) -> dict[str, str]:
        """The scope every tool call is bound to."""
        return self.toolbox.scope

    @property
    def tools(self) -> tuple[Tool[Any, Any], ...]:
        """The offered tools, bound to this toolbox's scope, in order."""
        return self.toolbox.tools

    @property
    def manual(self) -> str:
        """The standing memory instruction naming these tools."""
        return self.toolbox.manual

    def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Run tool ``name`` with the model's ``arguments``; a result or an error result."""
        return self._loop.run(self.toolbox.call(name, arguments))

    def openai_tools(self, *, api: Literal["chat", "responses"] = "chat") -> list[dict[str, Any]]:
        """The tools as OpenAI strict function tools."""
        return self.toolbox.openai_tools(api=api)

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tools as Anthropic tool definitions."""
        return self.toolbox.anthropic_tools()

    def mcp_tools(self) -> list[dict[str, Any]]:
        """The tools as MCP tool definitions."""
        return self.toolbox.mcp_tools()


class SyncMemoryInstance:
    """One conversation's memory (:class:`~recallstore.capability.MemoryInstance`), whose
    toolbox blocks."""

    def __init__(self, loop: BackgroundLoop, instance: MemoryInstance) -> None:
        self.instance = instance
        """The async instance underneath."""
        self.toolbox = SyncToolbox._wrapping(loop, instance.toolbox)
        """The conversation's toolbox, with a blocking ``call``."""

    @property
    def scope(self) -> dict[str, str]:
        """The conversation's memory scope."""
        return self.instance.scope

    @property
    def conversation_id(self) -> str:
        """The conversation's id."""
        return self.instance.conversation_id

    @property
    def recall(self) -> Recall:
        """What was recalled for turn one."""
        return self.instance.recall

    @property
    def recall_block(self) -> str | None:
        """The recall block for the system prompt; None when nothing was recalled."""
        return self.instance.recall_block

    @property
    def manual(self) -> str:
        """The standing memory instruction for the system prompt."""
        return self.instance.manual

    @property
    def instructions(self) -> str:
        """The Manual followed by the recall block, ready for a prompt."""
        return self.instance.instructions


class SyncMemoryCapability:
    """:class:`~recallstore.capability.MemoryCapability` on a :class:`SyncMemoryStore`:
    the same arguments, a blocking :meth:`instantiate`."""

    def __init__(
        self,
        store: SyncMemoryStore,
        *,
        scope_fields: Sequence[str],
        tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
        budget_chars: int = DEFAULT_BUDGET_CHARS,
        recall_limit: int = DEFAULT_RECALL_LIMIT,
        profile_limit: int = DEFAULT_PROFILE_LIMIT,
        author: str | None = None,
    ) -> None:
        self._loop = store.loop
        self.capability = MemoryCapability(
            store.store,
            scope_fields=scope_fields,
            tools=tools,
            budget_chars=budget_chars,
            recall_limit=recall_limit,
            profile_limit=profile_limit,
            author=author,
        )
        """The async capability underneath."""

    def instantiate(
        self,
        session_scope: Mapping[str, str],
        *,
        conversation_id: str,
        first_user_text: str,
        run_id: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> SyncMemoryInstance:
        """The toolbox and turn-one recall for one conversation of a session;
        ``time_zone`` and ``clock`` (default: the store's) as for
        :meth:`~recallstore.capability.MemoryCapability.instantiate`."""
        instance = self._loop.run(
            self.capability.instantiate(
                session_scope,
                conversation_id=conversation_id,
                first_user_text=first_user_text,
                run_id=run_id,
                time_zone=time_zone,
                clock=clock,
            )
        )
        return SyncMemoryInstance(self._loop, instance)

    def toolbox(
        self,
        session_scope: Mapping[str, str],
        *,
        conversation_id: str | None = None,
        run_id: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> SyncToolbox:
        """A session's toolbox without the recall, e.g. for a later turn."""
        toolbox = self.capability.toolbox(
            session_scope,
            conversation_id=conversation_id,
            run_id=run_id,
            time_zone=time_zone,
            clock=clock,
        )
        return SyncToolbox._wrapping(self._loop, toolbox)
