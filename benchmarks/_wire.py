"""What a Postgres client sends, counted on the wire: a TCP relay between the client and
the server (or PgBouncer) that counts statements and round trips (postgres_round_trips.py).

A *statement* is a simple-protocol ``Query`` or an extended-protocol ``Execute``
message; a *round trip* is a burst of client messages sent after the server last
answered (a pipeline of several statements is one). Connect through it with
``sslmode=disable`` (the relay reads the protocol's messages).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass
class Counts:
    """Totals since the relay started (compare two snapshots)."""

    statements: int = 0
    round_trips: int = 0


class _Connection:
    def __init__(self, counts: Counts) -> None:
        self.counts = counts
        self.answered = True  # the server spoke since the client last did
        self.started = False
        self.buffer = b""

    def from_client(self, data: bytes) -> None:
        if self.answered:
            self.counts.round_trips += 1
            self.answered = False
        self.buffer += data
        while True:
            if not self.started:  # the startup packet: length, then no type byte
                if len(self.buffer) < 4:
                    return
                size = int.from_bytes(self.buffer[:4], "big")
                if len(self.buffer) < size:
                    return
                self.buffer = self.buffer[size:]
                self.started = True
                continue
            if len(self.buffer) < 5:
                return
            size = int.from_bytes(self.buffer[1:5], "big")
            if len(self.buffer) < 1 + size:
                return
            if self.buffer[:1] in (b"Q", b"E"):
                self.counts.statements += 1
            self.buffer = self.buffer[1 + size :]


async def _pump(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: _Connection, client: bool
) -> None:
    try:
        while data := await reader.read(65536):
            if client:
                seen.from_client(data)
            else:
                seen.answered = True
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def relay(host: str, port: int) -> AsyncIterator[tuple[int, Counts]]:
    """A counting relay to ``host:port`` on a free local port: (its port, the counts)."""
    counts = Counts()
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(host, port)
        seen = _Connection(counts)
        for task in (
            asyncio.create_task(_pump(reader, up_writer, seen, client=True)),
            asyncio.create_task(_pump(up_reader, writer, seen, client=False)),
        ):
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1]), counts
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
