"""Kit rule S24 bites: backends that leave a trace of what they forgot fail it.

Each broken backend is a bundled one with one erasure step taken out (issue 36): the
plans not redacted, deleted records kept aside, the journal not scrubbed, the SQLite
``-wal`` not emptied, the evolution ledger's rows kept (issue 39). The same kit test
passes on the real backends (their conformance runs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.postgres_server import postgres_schema, postgres_url

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.store import MemoryStore
from recallstore.testing import ToyEmbedder
from recallstore.testing.erasure import ErasureConformance, stored_bytes_of

__all__ = ["postgres_schema", "postgres_url"]


class KeepsPlanText(InMemoryMemoryStore):
    """Deletes records but leaves the plans that quote them as they were."""

    async def _redact_revisions(
        self, handle: None, deleted: frozenset[str], scope: Mapping[str, str] | None
    ) -> None:
        return None


class KeepsATrash(InMemoryMemoryStore):
    """Keeps every deleted record aside (an undo buffer nobody asked for)."""

    def __init__(self) -> None:
        super().__init__()
        self._trash: list[Any] = []

    def _remove(self, id: str) -> None:
        self._trash.append(self._records.get(id))
        super()._remove(id)


class SqliteScrubsNoJournal(SqliteMemoryStore):
    """Deletes records but never looks at the journal rows about them."""

    async def _journal_candidates(self, handle: Any, *criteria: Any) -> list[Any]:
        return []


class SqliteLeavesTheWal(SqliteMemoryStore):
    """Never empties the ``-wal`` after a delete: old page images stay in it."""

    async def _after_forget(self) -> None:
        return None


class PostgresScrubsNoJournal(PostgresMemoryStore):
    """Deletes records but never looks at the journal rows about them."""

    async def _journal_candidates(self, handle: Any, *criteria: Any) -> list[Any]:
        return []


class KeepsTheLedger(InMemoryMemoryStore):
    """Deletes records but keeps their evolution ledger rows (issue 39)."""

    async def _erase_ledger(
        self, handle: None, deleted: frozenset[str], scope: Mapping[str, str] | None
    ) -> None:
        return None


class SqliteKeepsTheLedger(SqliteMemoryStore):
    """Deletes records but keeps their evolution ledger rows."""

    async def _erase_ledger(self, handle: Any, *criteria: Any) -> None:
        return None


class PostgresKeepsTheLedger(PostgresMemoryStore):
    """Deletes records but keeps their evolution ledger rows."""

    async def _erase_ledger(self, handle: Any, *criteria: Any) -> None:
        return None


async def _raw(store: MemoryStore) -> bytes:
    found = await stored_bytes_of(store)
    assert found is not None
    return found


async def _run_rule(factory: Callable[[], MemoryStore]) -> None:
    await ErasureConformance().test_s24_forget_and_delete_leave_nothing(
        store_factory=factory, stored_bytes=_raw
    )


async def _bites(factory: Callable[[], MemoryStore], words: str) -> None:
    with pytest.raises(AssertionError) as caught:
        await _run_rule(factory)
    assert str(caught.value).startswith("S24 — "), str(caught.value)
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("mutant", "words"),
    # The plan not redacted lists no forgotten record: the first check that fails.
    [
        (KeepsPlanText, "assert () == ("),
        (KeepsATrash, "the stored bytes keep"),
        (KeepsTheLedger, "the ledger keeps a trace"),
    ],
)
async def test_s24_fails_an_in_memory_store_that_keeps_a_trace(
    mutant: type[InMemoryMemoryStore], words: str
) -> None:
    store = mutant()
    await _bites(lambda: store, words)


async def test_s24_passes_the_in_memory_store() -> None:
    store = InMemoryMemoryStore()
    await _run_rule(lambda: store)


@pytest.mark.parametrize(
    ("mutant", "words"),
    [
        (SqliteScrubsNoJournal, "the journal keeps a trace"),
        (SqliteLeavesTheWal, "the stored bytes keep a trace"),
        (SqliteKeepsTheLedger, "the ledger keeps a trace"),
    ],
)
async def test_s24_fails_a_sqlite_store_that_keeps_a_trace(
    tmp_path: Path, mutant: type[SqliteMemoryStore], words: str
) -> None:
    await _bites(lambda: mutant(tmp_path / "memory.db"), words)


@pytest.mark.parametrize(
    ("mutant", "words"),
    [
        (PostgresScrubsNoJournal, "the journal keeps a trace"),
        (PostgresKeepsTheLedger, "the ledger keeps a trace"),
    ],
)
async def test_s24_fails_a_postgres_store_that_keeps_a_trace(
    postgres_url: str, postgres_schema: str, mutant: type[PostgresMemoryStore], words: str
) -> None:
    await _bites(lambda: mutant(postgres_url, schema=postgres_schema), words)


async def test_s24_holds_with_vectors_in_play_on_every_backend(
    tmp_path: Path, postgres_url: str, postgres_schema: str
) -> None:
    """Hybrid stores (vectors beside the records) pass the rule too."""
    memory = InMemoryMemoryStore(embedder=ToyEmbedder())
    await _run_rule(lambda: memory)
    await _run_rule(lambda: SqliteMemoryStore(tmp_path / "hybrid.db", embedder=ToyEmbedder()))
    await _run_rule(
        lambda: PostgresMemoryStore(postgres_url, schema=postgres_schema, embedder=ToyEmbedder())
    )
