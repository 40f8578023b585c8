"""The writer processes of the failover test (tests/backends/postgres/test_failover.py).

Each is a process of its own (``spawn``) with its own ``PostgresMemoryStore`` on the
failover pair's two-host URL, opened once and never reopened: every reconnection after
a failover is the store's. It cycles through four writes and appends one JSON line per
write to its file, flushed before the next write starts:

- ``single``: one record with an idempotency key;
- ``batch``: five records with keys, in one ``write``;
- ``chain``: one record with a key superseding the chain's head (one chain per writer);
- ``loose``: three records without keys, in one ``write``, tried once.

Without synchronous replication a failover can lose a chain's acknowledged head; the
next step's supersede then finds no such record, and the writer logs a ``chain-lost``
line and carries on from the chain's valid record (the test counts those lines).

A keyed write that fails with StoreUnavailableError (a failover under it: it may or may
not have committed) is retried with the same keys and contents until acknowledged, as
an application would; the key makes the retry return the committed record instead of
writing a second one. A ``loose`` batch that fails is recorded as unacknowledged and
not retried: the test checks it is whole or absent.

A tailer process (:func:`tail_until_stopped`) reads the journal the whole time through
a store of its own, logging every entry it sees; once the writers stopped it reads to
the end. What it saw across the failovers must be the final journal, entry for entry:
no entry seen that the failover then lost, no id handed out twice, none skipped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.errors import MemoryNotFoundError, StoreUnavailableError
from recallstore.records import MemoryRecord, MemorySearchQuery, MemoryWriteInput

__all__ = ["BATCH", "LOOSE", "tail_until_stopped", "write_until_stopped"]

BATCH = 5
LOOSE = 3
_RETRY_BOUND = 300.0  # seconds one write may keep failing before the writer gives up


def write_until_stopped(url: str, schema: str, writer: int, out: str, stop: Event) -> None:
    """The process's body: write until ``stop`` is set, logging to ``out``."""
    # The pool warns of each failed reconnection attempt while no node takes writes.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    asyncio.run(_write_until_stopped(url, schema, writer, Path(out), stop))


async def _write_until_stopped(url: str, schema: str, writer: int, out: Path, stop: Event) -> None:
    store = PostgresMemoryStore(url, schema=schema, min_connections=1, max_connections=2)
    name = f"w{writer}"
    head: str | None = None
    with out.open("a") as log:

        def note(entry: dict[str, Any]) -> None:
            log.write(json.dumps(entry) + "\n")
            log.flush()

        async with store:
            step = 0
            while not stop.is_set():
                kind = ("single", "batch", "chain", "loose")[step % 4]
                if kind == "single":
                    inputs = [_keyed(name, f"{name} single {step}", f"{name}-s{step}", {})]
                elif kind == "batch":
                    inputs = [
                        _keyed(name, f"{name} batch {step} item {n}", f"{name}-b{step}-{n}", {})
                        for n in range(BATCH)
                    ]
                elif kind == "chain":
                    content = f"{name} chain step {step}"
                    inputs = [_keyed(name, content, f"{name}-c{step}", {"chain": "c"}, head)]
                else:
                    inputs = [
                        MemoryWriteInput(
                            scope={"user": name}, content=f"{name} loose {step} item {n}"
                        )
                        for n in range(LOOSE)
                    ]
                try:
                    written, failures, error = await _attempt(store, inputs, retry=kind != "loose")
                except MemoryNotFoundError:
                    # Without synchronous replication the failover lost the chain's head
                    # (acknowledged, never replicated): carry on from the chain's valid one.
                    chain = MemorySearchQuery(scope={"user": name, "chain": "c"}, limit=10)
                    heads = [hit.record.id for hit in await store.search(chain)]
                    note({"kind": "chain-lost", "step": step, "lost": head, "heads": heads})
                    head = heads[0] if heads else None
                    continue
                note(
                    {
                        "kind": kind,
                        "step": step,
                        "acked": written is not None,
                        "ids": [r.id for r in written or []],
                        "keys": [inp.idempotency_key for inp in inputs],
                        "failures": failures,
                        "error": error,
                        "at": time.time(),
                    }
                )
                if written is None and kind != "loose":
                    raise RuntimeError(f"{name}: a keyed write failed for good: {error}")
                if kind == "chain" and written is not None:
                    head = written[0].id
                step += 1


def _keyed(
    name: str, content: str, key: str, extra: dict[str, str], supersedes: str | None = None
) -> MemoryWriteInput:
    return MemoryWriteInput(
        scope={"user": name, **extra},
        content=content,
        idempotency_key=key,
        supersedes=supersedes,
    )


async def _attempt(
    store: PostgresMemoryStore, inputs: list[MemoryWriteInput], *, retry: bool
) -> tuple[list[MemoryRecord] | None, int, str | None]:
    """``(records, failed attempts, last error)``; records None when never acknowledged."""
    failures = 0
    error: str | None = None
    deadline = time.monotonic() + _RETRY_BOUND
    pause = 0.05
    while True:
        try:
            return await store.write(inputs), failures, error
        except StoreUnavailableError as exc:
            failures += 1
            error = exc.reason[:300]
            if not retry or time.monotonic() > deadline:
                return None, failures, error
            await asyncio.sleep(pause)  # an application's back-off between retries
            pause = min(pause * 2, 1.0)


def tail_until_stopped(url: str, schema: str, out: str, stop: Event) -> None:
    """The tailer's body: log each journal entry as ``[id, record ids]`` until ``stop``
    is set and the journal is read to its end."""
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    asyncio.run(_tail_until_stopped(url, schema, Path(out), stop))


async def _tail_until_stopped(url: str, schema: str, out: Path, stop: Event) -> None:
    store = PostgresMemoryStore(url, schema=schema, min_connections=1, max_connections=1)
    last = 0
    with out.open("a") as log:
        async with store:
            while True:
                stopping = stop.is_set()  # before the read: a read after it sees every write
                try:
                    entries = await store.read_journal(after=last, limit=500)
                except StoreUnavailableError:
                    await asyncio.sleep(0.1)  # a failover: read again once it is over
                    continue
                for entry in entries:
                    log.write(
                        json.dumps([entry.id, entry.envelope["data"].get("record_ids")]) + "\n"
                    )
                    last = entry.id
                log.flush()
                if not entries:
                    if stopping:
                        return
                    await asyncio.sleep(0.05)  # the pace of an idle tailer's polls
