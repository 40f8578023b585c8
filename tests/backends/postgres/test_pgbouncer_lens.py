"""The lens (``recallstore serve``) on a Postgres store behind PgBouncer in transaction
mode, as a real process: a write another store commits through the pooler reaches its
event stream, whether the lens polls the journal or ``LISTEN``s on a direct URL."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import psycopg
import pytest

from recallstore.backends.postgres import PostgresMemoryStore
from recallstore.records import MemoryWriteInput

pytestmark = pytest.mark.timeout(180)

TOKEN = "lens-behind-pgbouncer"
SCOPE = {"user": "u_1"}


@pytest.fixture
def scratch_database(postgres_url: str) -> Iterator[str]:
    """A database of its own (a URL opens schema ``recallstore``), dropped after."""
    name = f"rs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _in(url: str, database: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + database


def _serve(db: str) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "recallstore", "serve", "--db", db, "--port", "0", "--token", TOKEN],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    assert found, f"serve printed {line!r}"
    return server, f"http://127.0.0.1:{found.group(1)}"


def _first_write(url: str, after: int, connected: threading.Event) -> tuple[int, str]:
    """The id and data of the first write event the stream sends after ``after``;
    ``connected`` is set once the stream is open."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Last-Event-ID": str(after)}
    with httpx.stream("GET", f"{url}/events/", headers=headers, timeout=60) as response:
        assert response.status_code == 200
        connected.set()
        kind, ident = None, None
        for line in response.iter_lines():
            if line.startswith("event:"):
                kind = line.removeprefix("event:").strip()
            elif line.startswith("id:"):
                ident = int(line.removeprefix("id:").strip())
            elif line.startswith("data:") and kind == "agent.memory.write":
                assert ident is not None
                return ident, line
    raise AssertionError("the stream ended before a write")


@pytest.mark.slow
@pytest.mark.parametrize("listening", [False, True], ids=["polling", "listen-url"])
async def test_the_lens_streams_a_write_committed_through_the_pooler(
    pgbouncer_url: str, postgres_url: str, scratch_database: str, listening: bool
) -> None:
    pooled = f"{_in(pgbouncer_url, scratch_database)}?recallstore_pool_mode=transaction"
    lens_db = pooled
    if listening:
        lens_db += f"&recallstore_listen_url={quote(_in(postgres_url, scratch_database), safe='')}"
    async with PostgresMemoryStore.from_url(pooled) as writer:
        await writer.write([MemoryWriteInput(scope=SCOPE, content="before the lens")])
        _, newest = await writer.journal_bounds()
        server, url = _serve(lens_db)
        try:
            # The stream is read in another thread; the write comes once it is open, so
            # the lens learns of it live (NOTIFY on the listen URL, or its next poll).
            connected = threading.Event()
            reading = asyncio.ensure_future(asyncio.to_thread(_first_write, url, newest, connected))
            await asyncio.to_thread(connected.wait, 60)
            [record] = await writer.write([MemoryWriteInput(scope=SCOPE, content="a new fact")])
            ident, data = await reading
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert ident > newest
    assert record.id in data
