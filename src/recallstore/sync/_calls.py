"""The async library functions over a store, as blocking calls on a
:class:`~recallstore.sync.SyncMemoryStore`: capture, the turn-one recall and prompt, the
supersede chain, JSONL export and import.

Each has the async function's name, parameters and semantics, with a
``SyncMemoryStore`` where that one takes a store; it runs on the store's background
loop and blocks until it is done.
"""

from __future__ import annotations

from collections.abc import Collection, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any, TextIO

from recallstore import jsonl as _jsonl
from recallstore._background_loop import BackgroundLoop
from recallstore.capability import memory_prompt as _memory_prompt
from recallstore.capture import DEFAULT_MAX_CHUNK_CHARS, DEFAULT_ROLES, CaptureResult, ToolCalls
from recallstore.capture import capture as _capture
from recallstore.chain import SupersedeChain
from recallstore.chain import supersede_chain as _supersede_chain
from recallstore.errors import ConfigurationError
from recallstore.jsonl import DEFAULT_BATCH_SIZE, ImportResult, Progress
from recallstore.recall import (
    DEFAULT_BUDGET_CHARS,
    DEFAULT_PROFILE_LIMIT,
    DEFAULT_RECALL_LIMIT,
    Recall,
)
from recallstore.recall import assemble_recall as _assemble_recall
from recallstore.records import MemoryRecord
from recallstore.store import Clock
from recallstore.sync._store import SyncMemoryStore

__all__ = [
    "assemble_recall",
    "capture",
    "checked_loop",
    "export_jsonl",
    "import_records",
    "memory_prompt",
    "run_on",
    "supersede_chain",
]


def checked_loop(store: SyncMemoryStore, call: str) -> BackgroundLoop:
    """``store``'s loop; a ``store`` that is no :class:`SyncMemoryStore` (an async
    store, say) raises :class:`~recallstore.errors.ConfigurationError` naming ``call``
    and what to use."""
    if not isinstance(store, SyncMemoryStore):
        raise ConfigurationError(
            f"recallstore.sync.{call} takes a recallstore.sync.SyncMemoryStore, not a "
            f"{type(store).__name__}: open the store with SyncMemoryStore(...), or await "
            f"the async {call} with an async store"
        )
    return store.loop


def run_on(store: SyncMemoryStore, call: str, make: Any, *args: Any, **kwargs: Any) -> Any:
    """``make(store.store, *args, **kwargs)`` run on ``store``'s loop, waited for
    (``store`` checked as by :func:`checked_loop`)."""
    loop = checked_loop(store, call)
    coro: Coroutine[Any, Any, Any] = make(store.store, *args, **kwargs)
    return loop.run(coro)


def capture(
    store: SyncMemoryStore,
    scope: Mapping[str, str],
    transcript: Iterable[Any],
    *,
    conversation_id: str,
    roles: Collection[str] = DEFAULT_ROLES,
    tool_calls: ToolCalls = "skip",
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
    label: bool = True,
    tags: Sequence[str] = (),
) -> CaptureResult:
    """:func:`recallstore.capture`, blocking: ``transcript`` stored in ``scope`` as
    verbatim ``episode`` records in one write, idempotent per conversation and message
    (capturing it again, or a longer one, adds only what is new)."""
    result: CaptureResult = run_on(
        store,
        "capture",
        _capture,
        scope,
        transcript,
        conversation_id=conversation_id,
        roles=roles,
        tool_calls=tool_calls,
        max_chunk_chars=max_chunk_chars,
        label=label,
        tags=tags,
    )
    return result


def memory_prompt(
    store: SyncMemoryStore,
    scope: Mapping[str, str],
    first_user_text: str,
    *,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    recall_limit: int = DEFAULT_RECALL_LIMIT,
    profile_limit: int = DEFAULT_PROFILE_LIMIT,
    conversation_id: str | None = None,
    run_id: str | None = None,
    clock: Clock | None = None,
) -> str:
    """:func:`recallstore.memory_prompt`, blocking: the Manual, then the recall block for
    a conversation's first user message, for a system prompt."""
    prompt: str = run_on(
        store,
        "memory_prompt",
        _memory_prompt,
        scope,
        first_user_text,
        budget_chars=budget_chars,
        recall_limit=recall_limit,
        profile_limit=profile_limit,
        conversation_id=conversation_id,
        run_id=run_id,
        clock=clock,
    )
    return prompt


def assemble_recall(
    store: SyncMemoryStore,
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
    """:func:`recallstore.assemble_recall`, blocking: the turn-one recall for ``scope``
    and the conversation's first ``user_text``."""
    recall: Recall = run_on(
        store,
        "assemble_recall",
        _assemble_recall,
        scope,
        user_text,
        budget_chars=budget_chars,
        limit=limit,
        profile_limit=profile_limit,
        conversation_id=conversation_id,
        run_id=run_id,
        time_zone=time_zone,
        now=now,
    )
    return recall


def supersede_chain(
    store: SyncMemoryStore, record: MemoryRecord, *, complete: bool = False
) -> SupersedeChain:
    """:func:`recallstore.supersede_chain`, blocking: ``record``'s supersede chain,
    walked both ways."""
    chain: SupersedeChain = run_on(
        store, "supersede_chain", _supersede_chain, record, complete=complete
    )
    return chain


def export_jsonl(
    store: SyncMemoryStore,
    out: TextIO,
    *,
    scope: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> int:
    """:func:`recallstore.jsonl.export_jsonl`, blocking: every record matching ``scope``
    written to ``out`` as JSONL, oldest first; how many. ``out`` is written, and
    ``progress`` called, on the store's loop thread while this call waits."""
    count: int = run_on(
        store, "export_jsonl", _jsonl.export_jsonl, out, scope=scope, progress=progress
    )
    return count


def import_records(
    store: SyncMemoryStore,
    records: Sequence[MemoryRecord],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
) -> ImportResult:
    """:func:`recallstore.jsonl.import_records`, blocking: ``records`` inserted unchanged
    in atomic batches (``progress`` is called on the store's loop thread)."""
    result: ImportResult = run_on(
        store,
        "import_records",
        _jsonl.import_records,
        records,
        batch_size=batch_size,
        progress=progress,
    )
    return result
