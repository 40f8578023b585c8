"""What ``delete`` and ``forget`` erase besides the records: their traces (issue 36).

A deleted record leaves words elsewhere in the store unless they are erased in the same
transaction: the kept revisions (consolidation plans) that named it, and the event
journal's rows that carry its text, its conversation and run ids, or — for a
``forget(scope)`` — the forgotten scope's values. :class:`ErasesTraces` does that once
for every backend, over two journal primitives (rows that may hold a trace, and their
rewrite) and the revise extension's ``_replace_revision``:

* a kept revision naming a deleted record keeps ids only (``redact_revision``);
* the evolution ledger's rows of a deleted record, and every row of a forgotten
  scope, go (``_promote_extension``);
* a journal row whose scope contains the forgotten scope goes (it is about the
  forgotten scope alone); any other row loses the deleted records' text
  (``contents``, ``reason``: the whole list, for a batch) and every conversation or
  run id a deleted record came from;
* buffered search and recall events not yet written are scrubbed the same way.

Ids stay: they are opaque and hold nothing of what was said (docs/deletion.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from recallstore.backends._journal_buffer import JournalBuffer
from recallstore.backends.journal import JournalSettings
from recallstore.records import MemoryRecord, Provenance
from recallstore.store import scope_matches

__all__ = ["ErasesTraces", "provenance_of", "provenance_values", "scrub_envelope"]

Handle = TypeVar("Handle")

_UNCHANGED: Any = object()


def provenance_values(provenance: Any, supports: Iterable[Any] = ()) -> frozenset[str]:
    """The conversation and run ids in a record's ``provenance`` and ``supports``, given
    as models or as the dicts a backend keeps."""
    found: set[str] = set()
    for item in [provenance, *supports]:
        if item is None:
            continue
        fields = item.model_dump() if isinstance(item, Provenance) else dict(item)
        for name in ("conversation_id", "run_id"):
            value = fields.get(name)
            if isinstance(value, str) and value:
                found.add(value)
    return frozenset(found)


def provenance_of(record: MemoryRecord) -> frozenset[str]:
    """The conversation and run ids ``record`` came from."""
    return provenance_values(record.provenance, record.supports)


def scrub_envelope(
    envelope: Mapping[str, Any],
    ids: frozenset[str],
    provenance: frozenset[str],
    scope: Mapping[str, str] | None,
) -> Any:
    """The journal envelope with the traces of the deleted records ``ids`` erased:
    None to drop it, the envelope itself when nothing changes, else a new dict."""
    if scope and scope_matches(dict(envelope.get("scope") or {}), scope):
        return None
    changed = dict(envelope)
    for name in ("conversation_id", "run_id"):
        if changed.get(name) in provenance:
            changed[name] = None
    data = dict(changed.get("data") or {})
    named = set(data.get("record_ids") or ()) | set(data.get("superseded_ids") or ())
    if named & ids:
        # The whole list: the event model has no place for "this one withheld".
        if data.get("contents") is not None:
            data["contents"] = None
        if data.get("reason") is not None:
            data["reason"] = None
        changed["data"] = data
    return _UNCHANGED if changed == dict(envelope) else changed


class ErasesTraces(Generic[Handle]):
    """``_erase_traces``: erase, in a deleting transaction, what :mod:`this module
    <recallstore.backends._forget_traces>` lists."""

    _journal: JournalSettings | None
    _journal_buffer: JournalBuffer | None

    if TYPE_CHECKING:

        async def _redact_revisions(
            self, handle: Handle, deleted: frozenset[str], scope: Mapping[str, str] | None
        ) -> None: ...

    async def _erase_traces(
        self,
        handle: Handle,
        ids: Iterable[str],
        provenance: frozenset[str],
        scope: Mapping[str, str] | None = None,
    ) -> None:
        """Erase the traces of the deleted records ``ids`` (``provenance``: the
        conversation and run ids they came from; ``scope``: a forget's scope)."""
        deleted = frozenset(ids)
        # A forget that finds no record still erases its scope's traces: its records
        # may have gone one by one, by delete, leaving its searches in the journal.
        if not deleted and not scope:
            return
        redact = getattr(self, "_redact_revisions", None)
        if redact is not None:
            await redact(handle, deleted, scope)
        erase_ledger = getattr(self, "_erase_ledger", None)
        if erase_ledger is not None:
            await erase_ledger(handle, deleted, scope)
        if self._journal is None:
            return
        if self._journal_buffer is not None:
            self._journal_buffer.scrub(lambda row: scrub_envelope(row, deleted, provenance, scope))
        rows = await self._journal_candidates(
            handle, sorted(provenance), sorted(set((scope or {}).values()))
        )
        rewrites: list[tuple[int, dict[str, Any] | None]] = []
        for seq, envelope in rows:
            scrubbed = scrub_envelope(envelope, deleted, provenance, scope)
            if scrubbed is not _UNCHANGED:
                rewrites.append((seq, scrubbed))
        if rewrites:
            await self._journal_rewrite(handle, rewrites)

    # --- journal primitives: only for a backend that keeps the journal ------------------

    async def _journal_candidates(
        self, handle: Handle, provenance: Sequence[str], scope_values: Sequence[str]
    ) -> list[tuple[int, dict[str, Any]]]:
        """``(seq, envelope)`` of every journal row that may hold a trace — a superset,
        :func:`scrub_envelope` decides: rows whose ``conversation_id`` or ``run_id`` is
        one of ``provenance``, rows carrying text (``contents`` or ``reason``), and, for
        a forget, rows holding one of the ``scope_values`` as a string. Indexed but for
        the last (a forget may scan)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")

    async def _journal_rewrite(
        self, handle: Handle, rewrites: Sequence[tuple[int, dict[str, Any] | None]]
    ) -> None:
        """In the transaction ``handle``: delete each row whose new envelope is None,
        replace the others'."""
        raise NotImplementedError(f"{type(self).__name__} keeps no event journal")
