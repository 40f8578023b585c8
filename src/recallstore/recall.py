"""Turn-1 recall: the memories a conversation starts with, assembled within a budget.

``assemble_recall`` is the one place the recall budget lives. Rendering is separate
and pure (``recallstore.prompt.render_recall``): it never fetches.

Rules, in order:

1. profile-kind records for the scope, newest first (at most ``profile_limit``);
2. then ``search(user_text)`` hits for the scope (at most ``limit``), best first,
   above the relevance floor (``recallstore._search.floor``: at least a fraction of
   the best hit's score), skipping records already included;
3. the budget bounds the rendered block (``render_recall``: delimiters, introduction,
   headings, each entry's line and the truncation note), in characters; each entry
   is its record's text, a long one excerpted to its sentences that match
   (``recallstore.prompt``), taken in that order; an entry that does not fit is omitted and the walk
   continues, so a later, shorter entry may still fit;
4. omitted entries are counted and the recall is marked ``truncated`` — never silent.

The same store state gives the same recall, so the rendered block is byte-identical
and prompt caches keep hitting.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Protocol, runtime_checkable

from recallstore._concurrently import both
from recallstore._recalled import Recall
from recallstore._search.floor import above_floor
from recallstore._time_query import time_boosted_search
from recallstore._when import TimeWindow
from recallstore.context import call_context
from recallstore.errors import ConfigurationError
from recallstore.prompt import recall_entry_size, recall_frame_size
from recallstore.records import MAX_CONTENT_CHARS, MemoryHit, MemoryRecord, MemorySearchQuery
from recallstore.sameness import statement_key
from recallstore.store import MemoryStore, store_clock

__all__ = [
    "DEFAULT_BUDGET_CHARS",
    "DEFAULT_PROFILE_LIMIT",
    "DEFAULT_RECALL_LIMIT",
    "Recall",
    "RecallObserver",
    "assemble_recall",
]

DEFAULT_BUDGET_CHARS = 4_000
"""Default recall budget, in characters of the rendered recall block."""
DEFAULT_RECALL_LIMIT = 20
"""Default number of search hits fetched for the user's text."""
DEFAULT_PROFILE_LIMIT = 20
"""Default number of profile records fetched (the always-recalled tier is small)."""


@runtime_checkable
class RecallObserver(Protocol):
    """A store that wants to hear about each assembled recall (e.g. to emit an event)."""

    def observe_recall(self, recall: Recall) -> None:
        """Called once per ``assemble_recall``, inside its call context."""
        ...


async def assemble_recall(
    store: MemoryStore,
    scope: Mapping[str, str],
    user_text: str,
    *,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    limit: int = DEFAULT_RECALL_LIMIT,
    profile_limit: int = DEFAULT_PROFILE_LIMIT,
    conversation_id: str | None = None,
    run_id: str | None = None,
    time_zone: tzinfo | None = None,
    now: datetime | None = None,
) -> Recall:
    """Assemble the turn-1 recall for ``scope`` and the conversation's first ``user_text``.

    ``scope`` must be non-empty, as for :class:`~recallstore.toolbox.MemoryToolbox`: an
    empty scope would recall every user's memories into one prompt. A time phrase in
    ``user_text`` ("what did I say last week about the trip"), read at ``now`` (default:
    the store's clock, :func:`~recallstore.store.store_clock`) in ``time_zone`` (UTC
    when None), boosts the memories observed in its window within the ranking
    (``recallstore._time_query``). Raises
    :class:`~recallstore.errors.ConfigurationError` for it, ``ValueError`` for a negative
    budget or limit; store failures propagate.
    """
    if not scope:
        raise ConfigurationError(
            "assemble_recall needs a non-empty scope (e.g. {'user': 'u_42'}); "
            "an empty scope would recall every user's memories"
        )
    if budget_chars < 0:
        raise ValueError(f"budget_chars must be >= 0, got {budget_chars}")
    if limit < 0 or profile_limit < 0:
        raise ValueError(f"limit and profile_limit must be >= 0, got {limit}, {profile_limit}")
    profile_query = MemorySearchQuery(scope=dict(scope), kinds=("profile",), limit=profile_limit)
    # Search terms are capped by the tokenizer anyway; cutting here keeps a huge first
    # message from failing the query's size check.
    hits_query = MemorySearchQuery(
        query=user_text[:MAX_CONTENT_CHARS], scope=profile_query.scope, limit=limit
    )
    with call_context(conversation_id=conversation_id, run_id=run_id):
        found: list[MemoryHit] = []
        if hits_query.is_listing:
            listed = await store.search(profile_query)
        else:
            # Started first, the listing runs while the first message's query is
            # embedded (a hybrid store), and is done (its event published) first.
            listed, found = await both(
                store.search(profile_query), _hits(store, hits_query, now, time_zone)
            )
        profile = [hit.record for hit in listed]
        # Hits far below the best are noise for the block (recallstore._search.floor).
        hits = above_floor(found, lambda hit: hit.score)
        # One line per statement: a store that already holds equal or near-identical
        # records (the same words; saved before write-time deduplication, or captured
        # twice) shows the first of them only.
        seen = {record.id for record in profile}
        said: set[str] = set()
        candidates: list[tuple[MemoryRecord, bool]] = []
        for record, is_profile in [(r, True) for r in profile] + [(h.record, False) for h in hits]:
            text = statement_key(record.content)
            if text in said or (not is_profile and record.id in seen):
                continue
            seen.add(record.id)
            said.add(text)
            candidates.append((record, is_profile))

        entries, profile_count, omitted, used, used_bytes = _fit(
            candidates, budget_chars, user_text
        )
        recall = Recall(
            scope=profile_query.scope,
            user_text=user_text,
            entries=tuple(entries),
            profile_count=profile_count,
            hit_count=len(entries) - profile_count,
            omitted=omitted,
            truncated=omitted > 0,
            budget_chars=budget_chars,
            used_chars=used,
            used_bytes=used_bytes,
        )
        if isinstance(store, RecallObserver):
            store.observe_recall(recall)
    return recall


def _fit(
    candidates: list[tuple[MemoryRecord, bool]], budget_chars: int, user_text: str
) -> tuple[list[MemoryRecord], int, int, int, int]:
    """The entries that fit the budget, whole and in order, with the block's size.

    Each candidate is tried against the block as it would render with it: its line,
    the entries taken so far, and the frame around them, including room for the
    truncation note as long as later candidates might still be left out (the longest
    note they could need). One that does not fit is omitted and the walk goes on.
    """
    entries: list[MemoryRecord] = []
    omitted = profile_count = entry_chars = entry_bytes = 0
    for index, (record, is_profile) in enumerate(candidates):
        chars, size_bytes = recall_entry_size(record, position=len(entries), user_text=user_text)
        later = len(candidates) - index - 1
        has_profile = profile_count > 0 or is_profile
        has_hits = len(entries) > profile_count or not is_profile
        frame, _ = recall_frame_size(has_profile, has_hits, omitted + later)
        if frame + entry_chars + chars > budget_chars:
            omitted += 1
            continue
        entries.append(record)
        profile_count += is_profile
        entry_chars += chars
        entry_bytes += size_bytes
    used = used_bytes = 0
    if entries or omitted:  # render_recall gives no block at all otherwise
        has_hits = len(entries) > profile_count
        used, used_bytes = recall_frame_size(profile_count > 0, has_hits, omitted)
        used += entry_chars
        used_bytes += entry_bytes
    return entries, profile_count, omitted, used, used_bytes


async def _hits(
    store: MemoryStore, query: MemorySearchQuery, now: datetime | None, zone: tzinfo | None
) -> list[MemoryHit]:
    """The search hits of the first message, its time phrase's window boosted, before
    the relevance floor (``benchmarks/recall_floor.py`` reads them whole)."""

    async def search(text: str, window: TimeWindow, limit: int) -> list[MemoryHit]:
        asked = query.model_copy(
            update={
                "query": text,
                "limit": limit,
                "observed_after": window.start,
                "observed_before": window.end,
            }
        )
        return await store.search(asked)

    hits, _ = await time_boosted_search(
        search, query.query or "", query.limit, now or store_clock(store)(), zone
    )
    return hits
