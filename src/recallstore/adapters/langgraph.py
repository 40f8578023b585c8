"""LangGraph's store interface on any MemoryStore: :class:`LangGraphStore`, a ``BaseStore``.

Code written against LangGraph's ``BaseStore`` (``store.put/get/search/delete``,
``create_react_agent(store=…)``, ``create_agent(store=…)``, langmem's memory tools)
runs on recallstore unchanged, with recallstore's semantics where LangGraph's are weaker
(docs/langgraph.md has the whole mapping):

* a namespace is a scope: position ``i`` is the scope field ``namespace_fields[i]``,
  inside the fixed ``scope`` given here, which no namespace can leave or widen;
* a key is the record's ``target.key`` (and, where the store has the ``idempotency``
  extension, its idempotency key, so two writers never leave two current versions);
* a value is the record's payload; its ``content_field`` (or the fields ``index`` names,
  or else the whole value as JSON) is the record's searchable content;
* a ``put`` over an existing key supersedes it: every earlier version stays in the store
  (:meth:`LangGraphStore.history`, ``include_invalidated`` searches, the dashboard);
* a ``delete`` invalidates the current version (kept as history); a delete of a key
  with no current item changes nothing and succeeds, as in LangGraph's own stores (a
  model's made-up id must not end the run: langmem's tool has no error path to the
  model), unless the adapter is built with ``strict_delete=True``: then it raises
  :class:`ItemNotFoundError`;
* a search with a query is ranked by the store (BM25, or hybrid with an embedder) and
  returns only matching items; without one it lists items newest first;
* a TTL (minutes) sets the record's ``expires_at``; expired items are omitted. A read
  does not extend a TTL (a record never changes but to be invalidated).

Sync calls (``put``, ``get``, …) need a loop to run the store on: build the adapter on a
:class:`~recallstore.sync.SyncMemoryStore`, or call them from a thread other than the
loop's own — the loop the adapter was built on (or, built outside any, the one its async
API was first used on). Needs the ``langgraph`` extra.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Final

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._langgraph_items import (
    ITEM_SECTION,
    KEY_PREFIX,
    MAX_ITEM_KEY_CHARS,
    ItemNotFoundError,
    NamespaceMap,
    check_filter,
    check_key,
    expiry_delta,
    item_text,
    literal_prefix,
    matches_conditions,
    matches_filter,
    to_item,
    to_search_item,
)
from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.records import (
    MAX_LIMIT,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryTarget,
    MemoryWriteInput,
    Provenance,
)
from recallstore.store import (
    EXPORT_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    MemoryStore,
    SupportsExportRecords,
)
from recallstore.sync import BackgroundLoop, SyncMemoryStore
from recallstore.values import utc_now

with _framework_imports("langgraph", "the LangGraph store", "langgraph"):
    from langgraph.config import get_config
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        validate_op_namespace,
    )

__all__ = [
    "ITEM_SECTION",
    "MAX_ITEM_KEY_CHARS",
    "ItemNotFoundError",
    "LangGraphStore",
]

DELETE_REASON: Final = "deleted through the LangGraph store"
"""The ``invalid_reason`` of a version a LangGraph ``delete`` invalidated."""
_FIRST_FETCH: Final = 20


class LangGraphStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are records of ``store``.

    ``namespace_fields`` names the scope field of each namespace position, e.g.
    ``("collection", "user")`` for langmem's ``("memories", "{langgraph_user_id}")``; a
    longer namespace is refused (``InvalidNamespaceError``). ``scope`` is the fixed part
    of every item's scope (e.g. ``{"tenant": "acme"}``). ``content_field`` names the value
    field that holds an item's text; ``index_fields`` the value paths searched instead
    (LangGraph's ``index`` of a put overrides them per item; ``index=False`` leaves only
    the key searchable). ``default_ttl`` is in minutes. Items are written with ``kind``;
    their provenance is ``author`` and, inside a LangGraph run, the run's ``thread_id``
    as the conversation. A delete of a key with no current item succeeds and changes
    nothing; with ``strict_delete`` it raises :class:`ItemNotFoundError`.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: MemoryStore | SyncMemoryStore,
        *,
        namespace_fields: Sequence[str],
        scope: Mapping[str, str] | None = None,
        content_field: str = "content",
        index_fields: Sequence[str] | None = None,
        kind: MemoryKind = "fact",
        default_ttl: float | None = None,
        author: str | None = None,
        strict_delete: bool = False,
    ) -> None:
        if isinstance(store, SyncMemoryStore):
            self.store: MemoryStore = store.store
            self._portal: BackgroundLoop | None = store.loop
        else:
            self.store = store
            self._portal = None
        self._map = NamespaceMap(namespace_fields, scope)
        if not isinstance(content_field, str) or not content_field:
            raise ConfigurationError(f"content_field must be a field name, got {content_field!r}")
        self.content_field = content_field
        self.index_fields = None if index_fields is None else list(index_fields)
        self.kind: MemoryKind = kind
        expiry_delta(default_ttl)
        self.ttl_config = TTLConfig(
            refresh_on_read=False, omit_expired=True, default_ttl=default_ttl
        )
        self.author = author
        if not isinstance(strict_delete, bool):
            raise ConfigurationError(f"strict_delete must be True or False, got {strict_delete!r}")
        self.strict_delete = strict_delete
        # The loop sync calls from other threads are sent to: the one running here (an
        # adapter built inside `async with store`), else the first one an async call uses.
        self._home: asyncio.AbstractEventLoop | None = _running_loop()

    @property
    def namespace_fields(self) -> tuple[str, ...]:
        """The scope field of each namespace position."""
        return self._map.fields

    @property
    def scope(self) -> dict[str, str]:
        """The fixed part of every item's scope."""
        return dict(self._map.base)

    # --- BaseStore --------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, blocking; results in the same order.

        Every op is checked before any runs: a bad one raises and changes nothing. An op
        that fails while running (with ``strict_delete``, a delete of a missing key)
        raises after the ones before it took effect, as in LangGraph's own stores.
        """
        checked = self._checked(ops)
        if self._portal is not None:
            return self._portal.run(self._run(checked, self._provenance()))
        home = self._home
        if home is None or home.is_closed():
            raise ConfigurationError(
                "a sync LangGraphStore call needs the loop its store runs on: build the "
                "store on recallstore.sync.SyncMemoryStore, or use the async API (aput, "
                "aget, asearch, ...)"
            )
        if _running_loop() is home:
            raise ConfigurationError(
                "a sync LangGraphStore call on the event loop its store runs on would "
                "block that loop: await the async API (aput, aget, asearch, ...) there"
            )
        run = self._run(checked, self._provenance())
        return asyncio.run_coroutine_threadsafe(run, home).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; results in the same order (see :meth:`batch`)."""
        checked = self._checked(ops)
        if self._portal is not None:
            return await self._portal.arun(self._run(checked, self._provenance()))
        if self._home is None or self._home.is_closed():
            self._home = asyncio.get_running_loop()
        return await self._run(checked, self._provenance())

    # --- history ----------------------------------------------------------------------

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[MemoryRecord]:
        """Every version of ``key`` in ``namespace``, oldest first: superseded and deleted
        ones included (``superseded_by`` links each to its successor)."""
        if self._portal is not None:
            return await self._portal.arun(self._history(tuple(namespace), key))
        return await self._history(tuple(namespace), key)

    def history(self, namespace: tuple[str, ...], key: str) -> list[MemoryRecord]:
        """:meth:`ahistory`, blocking (on a :class:`~recallstore.sync.SyncMemoryStore`)."""
        if self._portal is None:
            raise ConfigurationError("history() needs a SyncMemoryStore; await ahistory()")
        return self._portal.run(self._history(tuple(namespace), key))

    async def _history(self, namespace: tuple[str, ...], key: str) -> list[MemoryRecord]:
        records = await self._keyed(namespace, check_key(key), include_old=True)
        return sorted(records, key=lambda record: (record.created_at, record.id))

    # --- the ops ----------------------------------------------------------------------

    def _checked(self, ops: Iterable[Op]) -> list[Op]:
        checked = list(ops)
        for op in checked:
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                self._check_put(op)
            elif isinstance(op, GetOp):
                self._map.scope(op.namespace)
            elif isinstance(op, SearchOp):
                self._map.scope(op.namespace_prefix)
                check_filter(op.filter)
                if op.limit < 0 or op.offset < 0:
                    raise MemoryValidationError(
                        "limit", "limit and offset must be >= 0", (op.limit, op.offset)
                    )
            elif not isinstance(op, ListNamespacesOp):
                raise MemoryValidationError("op", f"unknown store op {type(op).__name__}", op)
        return checked

    def _check_put(self, op: PutOp) -> None:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
        self._map.scope(op.namespace)
        check_key(op.key)
        if op.value is not None:
            if not isinstance(op.value, Mapping):
                raise MemoryValidationError("value", "a value must be a mapping", op.value)
            self._write_input(op, None, None)
        expiry_delta(op.ttl)

    def _provenance(self) -> Provenance | None:
        """Who writes, read in the caller's context (a LangGraph run's config holds the
        conversation as ``thread_id``): the store's loop may run on another thread."""
        try:
            configurable = get_config().get("configurable") or {}
        except RuntimeError:  # not inside a LangGraph run
            configurable = {}
        thread = configurable.get("thread_id")
        conversation = str(thread) if isinstance(thread, (str, int)) and str(thread) else None
        if conversation is None and self.author is None:
            return None
        return Provenance(conversation_id=conversation, author=self.author)

    async def _run(self, ops: list[Op], provenance: Provenance | None) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp):
                await self._put(op, provenance)
                results.append(None)
            elif isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            else:
                assert isinstance(op, ListNamespacesOp)
                results.append(await self._list_namespaces(op))
        return results

    async def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        current = await self._current(tuple(op.namespace), op.key)
        return None if current is None else to_item(tuple(op.namespace), current)

    async def _put(self, op: PutOp, provenance: Provenance | None) -> None:
        namespace = tuple(op.namespace)
        current = await self._current(namespace, op.key)
        if op.value is None:
            if current is None:
                if self.strict_delete:
                    raise ItemNotFoundError(namespace, op.key)
                return  # LangGraph's contract: deleting what is not there succeeds
            await self.store.invalidate(current.id, DELETE_REASON)
            return
        write = self._write_input(op, current, provenance)
        if current is not None and write.says_the_same_as(current):
            return
        await self.store.write([write])

    def _write_input(
        self, op: PutOp, current: MemoryRecord | None, provenance: Provenance | None
    ) -> MemoryWriteInput:
        assert op.value is not None
        value = dict(op.value)
        if op.index is False:
            text = op.key
        else:
            index = self.index_fields if op.index is None else list(op.index)
            text = item_text(value, self.content_field, index)
        delta = expiry_delta(op.ttl)
        keyed = IDEMPOTENCY_EXTENSION in self.store.capabilities().extensions
        return MemoryWriteInput(
            scope=self._map.scope(tuple(op.namespace)),
            kind=self.kind,
            content=text,
            provenance=provenance,
            target=MemoryTarget(section=ITEM_SECTION, key=op.key),
            payload=value,
            expires_at=None if delta is None else utc_now() + delta,
            # The store supersedes the keyed holder in the write's own transaction (S16);
            # without the extension, the supersede names the version read just before.
            idempotency_key=KEY_PREFIX + op.key if keyed else None,
            supersedes=None if keyed or current is None else current.id,
        )

    async def _current(self, namespace: tuple[str, ...], key: str) -> MemoryRecord | None:
        records = await self._keyed(namespace, key, include_old=False)
        return records[0] if records else None

    async def _keyed(
        self, namespace: tuple[str, ...], key: str, *, include_old: bool
    ) -> list[MemoryRecord]:
        """The records of ``key`` in exactly ``namespace`` (a deeper namespace's share the
        scope filter and are dropped here), newest first."""
        hits = await self.store.search(
            MemorySearchQuery(
                scope=self._map.scope(namespace),
                target_key=key,
                include_invalidated=include_old,
                include_expired=include_old,
                limit=MAX_LIMIT,
            )
        )
        return [hit.record for hit in hits if self._map.namespace(hit.record) == namespace]

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        wanted = op.offset + op.limit
        if op.limit == 0:
            return []
        fetch = min(MAX_LIMIT, max(2 * wanted, _FIRST_FETCH))
        while True:
            hits = await self.store.search(
                MemorySearchQuery(query=op.query, scope=self._map.scope(prefix), limit=fetch)
            )
            items: list[SearchItem] = []
            for hit in hits:
                namespace = self._map.namespace(hit.record)
                if namespace is None or namespace[: len(prefix)] != prefix:
                    continue
                item = to_search_item(namespace, hit)
                if matches_filter(item.value, op.filter):
                    items.append(item)
            if len(items) >= wanted or len(hits) < fetch or fetch >= MAX_LIMIT:
                return items[op.offset : wanted]
            fetch = min(MAX_LIMIT, fetch * 4)

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix = literal_prefix(conditions)
        if len(prefix) > len(self._map.fields):
            return []
        found: set[tuple[str, ...]] = set()
        async for record in self._current_records(self._map.scope(prefix)):
            namespace = self._map.namespace(record)
            if namespace is not None and matches_conditions(namespace, conditions):
                found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    async def _current_records(self, scope: dict[str, str]) -> AsyncIterator[MemoryRecord]:
        """Every current record under ``scope``: streamed from an ``export`` store, else
        the newest :data:`MAX_LIMIT` (docs/langgraph.md)."""
        store = self.store
        if EXPORT_EXTENSION in store.capabilities().extensions and isinstance(
            store, SupportsExportRecords
        ):
            now = utc_now()
            async for record in store.export_records(scope):
                if record.invalid_at is None and not record.is_expired(now):
                    yield record
            return
        for hit in await store.search(MemorySearchQuery(scope=scope, limit=MAX_LIMIT)):
            yield hit.record


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
