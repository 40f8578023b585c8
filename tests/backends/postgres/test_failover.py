"""Failover under load: the primary crashes, the synchronous standby is promoted, and
writer processes that never reopen their store carry on (tests/postgres_failover.py
swaps the roles of two test-started clusters; tests/postgres_failover_writers.py holds
the writers).

After every failover each writer must get a write acknowledged again by itself; after
the run, against the last primary: every acknowledged write is there (synchronous
replication: an acknowledged COMMIT was on the standby that took over), every batch is
whole or absent, each writer's supersede chain has one head (the last one it was
told about), each idempotency key holds the record its write returned, and each
acknowledged write has exactly one journal entry, their ids increasing in the order
the writer was told they committed (an id handed out again after a failover would
come out lower), and a tailer reading the journal throughout saw exactly the final
journal.

Without synchronous replication a failover may lose the writes acknowledged within
the replication lag before the crash: that run asserts everything else (whole writes
and batches, one head per chain, keys, journal order of what survived, no loss without
a failover after it) and reports the losses (docs/postgres.md#failover).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.postgres_failover import FailoverPair
from tests.postgres_failover_writers import (
    BATCH,
    LOOSE,
    tail_until_stopped,
    write_until_stopped,
)
from tests.postgres_replica import _binaries

from recallstore.backends.postgres import PostgresMemoryStore

SCHEMA = "failover"
ROUNDS = int(os.environ.get("RECALLSTORE_FAILOVERS", "20"))  # fewer for a quick look
ASYNC_ROUNDS = int(os.environ.get("RECALLSTORE_FAILOVERS", "5"))
WRITERS = 8
_PROGRESS_BOUND = 300.0  # seconds for every writer to get a write acknowledged again


@contextmanager
def _pair(synchronous: bool) -> Iterator[FailoverPair]:
    binaries = _binaries()
    if binaries is None:
        reason = "needs the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup)"
        if os.environ.get("RECALLSTORE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    pair = FailoverPair(binaries, synchronous=synchronous)
    try:
        pair.start()
        yield pair
    finally:
        pair.stop()


def _entries(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


def _wait_for_acks_after(logs: list[Path], moment: float, procs: list[Any]) -> None:
    """Return once every writer logged a write acknowledged after ``moment``."""
    deadline = time.monotonic() + _PROGRESS_BOUND
    waiting = set(range(len(logs)))
    while waiting:
        for writer in list(waiting):
            if any(e.get("acked") and e["at"] > moment for e in _entries(logs[writer])):
                waiting.discard(writer)
        dead = [proc.name for proc in procs if proc.exitcode is not None]
        assert not dead, f"writers exited early: {dead}"
        if waiting and time.monotonic() > deadline:
            raise AssertionError(f"writers {sorted(waiting)} wrote nothing for {_PROGRESS_BOUND} s")
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_failovers_under_writers_lose_no_acknowledged_write(tmp_path: Path) -> None:
    with _pair(synchronous=True) as pair:
        report = _run(pair, ROUNDS, tmp_path)
        _check_synchronous(report)
        print(f"{ROUNDS} failovers under {WRITERS} writers, synchronous: {report}")


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_without_synchronous_replication_a_failover_loses_only_its_window(
    tmp_path: Path,
) -> None:
    with _pair(synchronous=False) as pair:
        report = _run(pair, ASYNC_ROUNDS, tmp_path, lagging=True)
    # The standby was cut off before each crash, so there were writes to lose, and
    # only those acknowledged after it stopped receiving were (_check asserts it).
    assert report["lost"]
    assert report["acknowledged writes"] > len(report["lost"])
    counted = {name: len(v) if isinstance(v, list) else v for name, v in report.items()}
    print(f"{ASYNC_ROUNDS} failovers under {WRITERS} writers, asynchronous: {counted}")


def _run(
    pair: FailoverPair, rounds: int, tmp_path: Path, *, lagging: bool = False
) -> dict[str, Any]:
    """Writers and a tailer through ``rounds`` failovers; what _check found. With
    ``lagging``, before each crash the standby stops receiving WAL until every writer
    had another write acknowledged (writes a failover without synchronous replication
    loses)."""

    async def migrate() -> None:
        async with PostgresMemoryStore(pair.url, schema=SCHEMA):
            pass

    asyncio.run(migrate())  # once, before eight processes open the store at once
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    logs = [tmp_path / f"writer{n}.jsonl" for n in range(WRITERS)]
    procs = [
        context.Process(
            target=write_until_stopped,
            args=(pair.url, SCHEMA, n, str(logs[n]), stop),
            name=f"writer{n}",
        )
        for n in range(WRITERS)
    ]
    seen = tmp_path / "tailer.jsonl"
    writers_stopped = context.Event()
    tailer = context.Process(
        target=tail_until_stopped, args=(pair.url, SCHEMA, str(seen), writers_stopped)
    )
    for proc in [*procs, tailer]:
        proc.start()
    started = time.monotonic()
    try:
        _wait_for_acks_after(logs, 0.0, procs)
        held: list[float] = []
        for _ in range(rounds):
            if lagging:
                held.append(pair.hold_standby())
                _wait_for_acks_after(logs, time.time(), procs)
            pair.fail_over()
            _wait_for_acks_after(logs, time.time(), procs)
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=300)
            if proc.exitcode is None:
                proc.kill()
        writers_stopped.set()
        tailer.join(timeout=300)
        if tailer.exitcode is None:
            tailer.kill()
    assert [proc.exitcode for proc in procs] == [0] * WRITERS
    assert tailer.exitcode == 0
    assert pair.failovers == rounds
    tailed = [json.loads(line) for line in seen.read_text().splitlines()]
    logged = [_entries(log) for log in logs]
    report = _check(pair.node_url(pair.primary), logged, tailed, pair.crashes, held)
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


def _check_synchronous(report: dict[str, Any]) -> None:
    """What synchronous replication adds: nothing acknowledged or seen is lost."""
    assert report["lost"] == [], f"acknowledged records lost: {report['lost'][:10]}"
    assert report["chain heads lost"] == 0
    assert report["journal entries seen then lost"] == []
    assert report["journal ids seen, then given to another entry"] == []
    assert report["tailer skipped"] == 0
    for name in ("lost", "journal entries seen then lost"):
        report[name] = len(report[name])
    report["journal ids seen, then given to another entry"] = 0


def _check(
    url: str,
    logs: list[list[dict[str, Any]]],
    tailed: list[list[Any]],
    crashes: list[tuple[float, float]],
    held: list[float],
) -> dict[str, Any]:
    """The invariants that hold with or without synchronous replication (asserted), and
    what a failover lost (reported, for _check_synchronous)."""
    table, journal = f"{SCHEMA}.memory_records", f"{SCHEMA}.memory_journal"
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f"SELECT id, content, idempotency_key, invalid_at IS NULL, scope FROM {table}"
        ).fetchall()
        entries = conn.execute(
            f"SELECT seq, envelope->'data'->'record_ids' FROM {journal} ORDER BY seq"
        ).fetchall()
    by_id = {row[0]: row for row in rows}
    by_content: dict[str, list[str]] = {}
    for row in rows:
        by_content.setdefault(row[1], []).append(row[0])
    entry_of: dict[str, list[int]] = {}
    for seq, ids in entries:
        for record_id in ids or []:
            entry_of.setdefault(record_id, []).append(seq)

    writes = [e for log in logs for e in log if e["kind"] != "chain-lost"]
    acked = [e for e in writes if e["acked"]]
    lost = [e for e in acked if not any(i in by_id for i in e["ids"])]
    # A write is all there or not at all: no acknowledged write half lost.
    assert all(i in by_id for e in acked if e not in lost for i in e["ids"])
    # Nothing acknowledged after the last failover is lost (a loss needs a failover),
    # and how long before its crash each lost write was acknowledged: the loss window
    # (an acknowledgement read late, after the crash, counts as 0).
    window = []
    for e in lost:
        after = [n for n, (_, done) in enumerate(crashes) if done >= e["at"]]
        assert after, f"{e} was lost without a failover after it"
        window.append(max(0.0, crashes[after[0]][0] - e["at"]))
        # With the standby held back, only writes acknowledged after it had everything
        # the primary wrote (held[n]) can be lost to that failover.
        if held:
            assert e["at"] > held[after[0]], f"{e} was on the standby, and lost"

    partial = []
    for writer, log in enumerate(logs):
        for e in log:
            if e["kind"] not in ("batch", "loose"):
                continue
            size, word = (BATCH, "batch") if e["kind"] == "batch" else (LOOSE, "loose")
            found = sum(
                len(by_content.get(f"w{writer} {word} {e['step']} item {n}", []))
                for n in range(size)
            )
            if found not in (0, size):
                partial.append((writer, e["step"], found))
    assert partial == [], f"partial or doubled batches (writer, step, rows): {partial}"

    forks = []
    for writer, log in enumerate(logs):
        chain = [r for r in rows if r[4] == {"user": f"w{writer}", "chain": "c"}]
        heads = [r[0] for r in chain if r[3]]
        last = [e["ids"][0] for e in log if e["kind"] == "chain" and e["acked"]][-1:]
        if len(heads) > 1 or (last and last[0] in by_id and heads != last):
            forks.append((writer, heads, last))
    assert forks == [], f"chains with another head than the last acknowledged: {forks}"

    wrong_keys = [
        (key, record_id)
        for e in acked
        if e["kind"] != "loose" and e not in lost
        for key, record_id in zip(e["keys"], e["ids"], strict=True)
        if by_id[record_id][2] != key
    ]
    assert wrong_keys == []

    reused, out_of_order = [], []
    for log in logs:
        previous = 0
        for e in log:
            if not e.get("acked") or e in lost:
                continue
            seqs = {seq for record_id in e["ids"] for seq in entry_of.get(record_id, [])}
            if len(seqs) != 1:
                reused.append((e["ids"][0], sorted(seqs)))
                continue
            seq = seqs.pop()
            if seq <= previous:
                out_of_order.append((e["ids"][0], previous, seq))
            previous = seq
    assert reused == [], f"acknowledged writes without exactly one journal entry: {reused[:10]}"
    assert out_of_order == [], (
        f"journal ids not increasing in acknowledgement order: {out_of_order}"
    )

    # What the tailer read against the final journal: entries it saw that are gone, ids
    # it saw that now name another entry, and entries it never saw (it reads after the
    # last id it saw, so an id handed out again is passed over).
    final = {seq: ids for seq, ids in entries}
    seen = {seq: ids for seq, ids in tailed}
    assert len(seen) == len(tailed), "the tailer saw an id twice"
    return {
        "acknowledged writes": len(acked),
        "acknowledged records": sum(len(e["ids"]) for e in acked),
        "writes that failed over (retried or not)": sum(1 for e in writes if e["failures"]),
        "unacknowledged loose batches": len(writes) - len(acked),
        "journal entries": len(entries),
        "lost": [e["ids"][0] for e in lost],
        "lost records": sum(len(e["ids"]) for e in lost),
        "loss window, seconds before the crash (max)": round(max(window, default=0.0), 3),
        "chain heads lost": sum(1 for log in logs for e in log if e["kind"] == "chain-lost"),
        "partial batches": 0,
        "forked chains": 0,
        "journal entries a tailer saw": len(tailed),
        "journal entries seen then lost": [s for s in seen if s not in final],
        "journal ids seen, then given to another entry": [
            s for s in seen if s in final and final[s] != seen[s]
        ],
        "tailer skipped": sum(1 for s in final if s not in seen),
    }
