"""recallstore.sync over a store's whole life (issue 36): fork(), close() during calls,
a store never closed, and a call interrupted by KeyboardInterrupt.

Real processes (a fork, a SIGINT), real SQLite files and a real PostgreSQL; every wait
is for an observable condition (a lock wait in pg_stat_activity, a line of output, a
thread gone) with a generous bound.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.postgres_server import postgres_schema, postgres_url

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.errors import StoreUnavailableError
from recallstore.records import MemoryWriteInput
from recallstore.sync import BackgroundLoop, SyncMemoryCapability, SyncMemoryStore

__all__ = ["postgres_schema", "postgres_url"]

SCOPE = {"user": "u1"}

OPENER = """
import sys
from recallstore.sync import SyncMemoryStore

def opened(target, schema):
    if target.startswith("postgresql") or "dbname=" in target:
        from recallstore.backends.postgres import PostgresMemoryStore
        return SyncMemoryStore(PostgresMemoryStore(target, schema=schema))
    return SyncMemoryStore(target)
"""

FORKER = (
    OPENER
    + """
import os, time
from recallstore.errors import ConfigurationError
from recallstore.records import MemoryWriteInput

store = opened(sys.argv[1], sys.argv[2])
(record,) = store.write([MemoryWriteInput(scope={"user": "u1"}, content="Before the fork.")])
child = os.fork()
if child == 0:
    try:
        store.get(record.id)
        print("child was served", flush=True)
    except ConfigurationError as exc:
        print(f"child refused: {exc}", flush=True)
        store.close()  # releases nothing: the parent's connections stay the parent's
        print("child closed", flush=True)
    os._exit(0)
deadline = time.monotonic() + 60
while os.waitpid(child, os.WNOHANG) == (0, 0):
    if time.monotonic() > deadline:
        os.kill(child, 9)
        print("child hung", flush=True)
        sys.exit(2)
    time.sleep(0.05)
assert store.get(record.id) == record
store.close()
print("parent served", flush=True)
"""
)

INTERRUPTED = (
    OPENER
    + """
from recallstore.records import MemoryWriteInput

store = opened(sys.argv[1], sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()  # the test holds a lock the write waits for
try:
    store.write([MemoryWriteInput(scope={"user": "u1"}, content="The interrupted write.")])
    print("written", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
sys.stdin.readline()  # the lock is released
store.write([MemoryWriteInput(scope={"user": "u1"}, content="A later write.")])
store.close()
print("later written", flush=True)
"""
)


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "recallstore-sync"]


def _eventually(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def _line_from(child: subprocess.Popen[str], seconds: float = 120) -> str:
    """The child's next line of output; its stderr in the failure if none comes in time."""
    assert child.stdout is not None
    ready, _, _ = select.select([child.stdout], [], [], seconds)
    if not ready:
        child.kill()
        _, err = child.communicate()
        raise AssertionError(f"no line from the child in {seconds:.0f} s; its stderr:\n{err}")
    return child.stdout.readline()


def _open_files(path: Path) -> int:
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        try:
            count += os.readlink(fd).startswith(str(path))
        except OSError:
            continue
    return count


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _connections(postgres_url: str, app: str, *, waiting: bool = False) -> int:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            + (" AND wait_event_type = 'Lock'" if waiting else ""),
            (app,),
        ).fetchone()
    assert row is not None
    return int(row[0])


@contextmanager
def _records_locked(postgres_url: str, schema: str) -> Iterator[None]:
    """Writers of ``schema`` wait (for a table lock) until the block ends."""
    with psycopg.connect(postgres_url) as conn:
        conn.execute(f"LOCK TABLE {schema}.memory_records IN SHARE MODE")
        yield
        conn.rollback()


def _contents(postgres_url: str, schema: str) -> list[str]:
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(f"SELECT content FROM {schema}.memory_records ORDER BY content")
        return [row[0] for row in rows]


# --- fork() -------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_forked_child_is_refused_at_once_and_the_parent_keeps_its_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        target, schema = str(tmp_path / "memory.db"), ""
    else:
        target = request.getfixturevalue("postgres_url")
        schema = request.getfixturevalue("postgres_schema")
    done = subprocess.run(
        [sys.executable, "-c", FORKER, target, schema],
        capture_output=True,
        text=True,
        timeout=240,
        env=_child_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("child refused:"), done.stdout
    assert "before fork()" in lines[0]
    assert "open the store after forking" in lines[0]
    assert lines[1:] == ["child closed", "parent served"]


# --- close() during calls -------------------------------------------------------------


def test_close_during_a_postgres_call_gives_the_caller_a_store_error(
    postgres_url: str, postgres_schema: str
) -> None:
    app = f"recallstore-sync-{uuid.uuid4().hex[:8]}"
    dsn = make_conninfo(postgres_url, application_name=app)
    store = SyncMemoryStore(PostgresMemoryStore(dsn, schema=postgres_schema))
    outcome: list[BaseException | None] = []

    def write() -> None:
        try:
            store.write([MemoryWriteInput(scope=SCOPE, content="Cut short by close().")])
            outcome.append(None)
        except BaseException as exc:  # what the caller gets, whatever it is
            outcome.append(exc)

    with _records_locked(postgres_url, postgres_schema):
        caller = threading.Thread(target=write)
        caller.start()
        _eventually(lambda: _connections(postgres_url, app, waiting=True) == 1, "a lock wait")
        store.close()
        caller.join(timeout=60)
    (error,) = outcome
    assert isinstance(error, StoreUnavailableError), repr(error)
    assert "closed while this call was running" in str(error)
    assert _contents(postgres_url, postgres_schema) == []  # rolled back, whole
    _eventually(lambda: _connections(postgres_url, app) == 0, "the connections closed")


# --- a store never closed -------------------------------------------------------------


def test_a_store_never_closed_is_closed_when_collected(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    before = len(_loop_threads())
    # A notebook cell run three times: each run drops the store of the one before.
    for n in range(3):
        store = SyncMemoryStore(db)
        store.write([MemoryWriteInput(scope=SCOPE, content=f"Run {n}.")])
        gc.collect()
        _eventually(lambda: len(_loop_threads()) == before + 1, "one loop thread left")
    del store
    gc.collect()
    _eventually(lambda: len(_loop_threads()) == before, "no loop thread left")
    _eventually(lambda: _open_files(db) == 0, "the database file closed")


def test_what_is_made_from_a_store_keeps_it_open_until_it_is_collected(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    before = len(_loop_threads())
    memory = SyncMemoryCapability(SyncMemoryStore(db), scope_fields=["user"])
    gc.collect()  # the SyncMemoryStore itself is gone; the capability still uses it
    conversation = memory.instantiate(SCOPE, conversation_id="c-1", first_user_text="Hi")
    saved = conversation.toolbox.call("memory_save", {"content": "Likes green tea."})
    assert saved["ok"] is True, saved
    del memory, conversation
    gc.collect()
    _eventually(lambda: len(_loop_threads()) == before, "no loop thread left")
    _eventually(lambda: _open_files(db) == 0, "the database file closed")


def test_a_postgres_store_never_closed_releases_its_connections_when_collected(
    postgres_url: str, postgres_schema: str
) -> None:
    app = f"recallstore-sync-{uuid.uuid4().hex[:8]}"
    dsn = make_conninfo(postgres_url, application_name=app)
    store = SyncMemoryStore(PostgresMemoryStore(dsn, schema=postgres_schema))
    store.write([MemoryWriteInput(scope=SCOPE, content="Never closed.")])
    assert _connections(postgres_url, app) >= 1
    del store
    gc.collect()
    _eventually(lambda: _connections(postgres_url, app) == 0, "the connections closed")


def test_a_loop_collected_on_its_own_thread_shuts_down_without_waiting_for_itself() -> None:
    before = len(_loop_threads())
    background = BackgroundLoop()
    cycle: dict[str, Any] = {"loop": background}
    cycle["self"] = cycle  # only the collector frees it, on whichever thread runs it
    asyncio_loop = background.loop
    del background, cycle
    asyncio_loop.call_soon_threadsafe(gc.collect)  # collected on the loop's own thread
    _eventually(lambda: len(_loop_threads()) == before, "the loop thread ended")
    assert asyncio_loop.is_closed()


# --- KeyboardInterrupt ----------------------------------------------------------------


def test_an_interrupted_blocking_write_is_cancelled_before_the_interrupt_goes_on(
    postgres_url: str, postgres_schema: str
) -> None:
    app = f"recallstore-sync-{uuid.uuid4().hex[:8]}"
    dsn = make_conninfo(postgres_url, application_name=app)
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, dsn, postgres_schema],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_child_env(),
        # A background process of a non-interactive shell inherits SIGINT ignored: give
        # the child Python's own Ctrl+C, as a program run from a terminal has.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        assert _line_from(child) == "ready\n"
        with _records_locked(postgres_url, postgres_schema):
            child.stdin.write("go\n")
            child.stdin.flush()
            _eventually(lambda: _connections(postgres_url, app, waiting=True) == 1, "a wait")
            child.send_signal(signal.SIGINT)
            assert _line_from(child) == "interrupted\n"
            # The interrupt came back once the write stopped: it waits for nothing now,
            # though the lock it waited for is still held.
            assert _connections(postgres_url, app, waiting=True) == 0
        child.stdin.write("go\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err[-3000:]
    assert out == "later written\n"
    assert _contents(postgres_url, postgres_schema) == ["A later write."]
