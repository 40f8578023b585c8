"""Read routing: searches and listings on a hot standby, with read-your-writes.

A store given ``standby_url`` sends its searches and listings (recall included) to
that streaming replica, and everything else (writes, ``get``, the journal, exports,
the vector half of a hybrid search) to the primary. Each write the store commits
notes the primary's WAL position after its commit (``pg_current_wal_insert_lsn()``,
sent with the commit: no extra round trip). Before a read on the standby the store
asks the standby how far it has replayed (``pg_last_wal_replay_lsn()``), waiting up
to ``standby_wait`` seconds for it to reach the store's last write; a standby still
behind then, unreachable, or no longer in recovery (promoted) is passed over and the
read goes to the primary; so does a read the standby fails part-way (a hot standby
cancels a query that holds up its replay, a recovery conflict), run again there. So a
conversation served by one store reads its own writes (a save, then the next turn's
search, finds the save), and a lagging standby is never read as if it were current
for them. Other stores' writes reach a standby read with
the replica's lag (eventual consistency), as they would reach a read that started
before they committed. :attr:`StandbyReads.counts` says how many reads each served.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from recallstore.backends.postgres.connections import PoolMode, open_pool, redact

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["WAL_POSITION", "StandbyReads", "lsn_value"]

_logger = logging.getLogger(__name__)
_T = TypeVar("_T")

WAL_POSITION = "CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_insert_lsn()::text END"
"""The primary's WAL position as SQL (NULL on a standby): what the store notes at open
(:meth:`StandbyReads.wrote`), so a standby is read once it has replayed the schema."""


def lsn_value(lsn: str) -> int:
    """A ``pg_lsn`` text (``16/B374D848``) as a number, for comparing two."""
    high, _, low = lsn.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


class StandbyReads:
    """The standby's pool, the store's last write position, and where reads went."""

    def __init__(self, url: str, mode: PoolMode, sizes: tuple[int, int], wait: float) -> None:
        self._url = url
        self._mode = mode
        self._sizes = sizes
        self._wait = wait
        self.target = redact(url)
        self._pool: AsyncConnectionPool[Any] | None = None
        self._written: str | None = None
        self.counts = {"standby": 0, "primary": 0}
        """Reads served by the standby, and reads it could not serve (to the primary)."""

    async def open(self) -> None:
        """Connect to the standby (StoreUnavailableError naming it when it cannot)."""
        self._pool = await open_pool(self._url, self._sizes, self._mode, self.target)

    async def close(self) -> None:
        """Close the standby's connections."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def wrote(self, lsn: str | None) -> None:
        """Note the primary's WAL position after one of the store's commits."""
        if lsn is not None and (self._written is None or lsn_value(lsn) > lsn_value(self._written)):
            self._written = lsn

    async def _caught_up(self, conn: AsyncConnection[Any]) -> bool:
        """Whether the standby replayed the store's last write, waiting up to the bound."""
        written = self._written
        if written is None:  # nothing of the store's to wait for: no round trip
            return True
        deadline = time.monotonic() + self._wait
        pause = 0.001
        while True:
            # A promoted standby keeps its last replay position (NULL only on a server
            # that never recovered): ask whether it still is one, and pass it over at
            # once when it is not (it will not replay anything more).
            cursor = await conn.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= %s::pg_lsn",
                (written,),
            )
            row = await cursor.fetchone()
            if row is None or not row[0]:
                return False
            if row[1]:
                return True
            if time.monotonic() + pause > deadline:
                return False
            await asyncio.sleep(pause)  # the bounded wait for replay, not a sync
            pause = min(2 * pause, 0.02)

    async def read(
        self,
        primary: Callable[[], AbstractAsyncContextManager[AsyncConnection[Any]]],
        work: Callable[[AsyncConnection[Any]], Awaitable[_T]],
    ) -> _T:
        """What ``work(conn)`` returns, run on a standby connection that has replayed
        the store's writes, else on the primary's (``primary()``). A read the standby
        fails part-way runs again on the primary: a hot standby cancels a query that
        holds up its replay (a recovery conflict), and a standby can drop its
        connections; a read changes nothing, so running it twice is safe."""
        import psycopg

        async with self._ready() as conn:
            if conn is not None:
                try:
                    found = await work(conn)
                except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                    _logger.info("a read failed on the standby %s: %s", self.target, exc)
                else:
                    self.counts["standby"] += 1
                    return found
        self.counts["primary"] += 1
        async with primary() as conn:
            return await work(conn)

    @asynccontextmanager
    async def _ready(self) -> AsyncIterator[AsyncConnection[Any] | None]:
        """A standby connection that has replayed the store's writes; None when the
        standby cannot serve the read (behind after the wait, unreachable, promoted)."""
        import psycopg
        from psycopg_pool import PoolTimeout

        assert self._pool is not None  # open() ran with the store's
        try:
            manager = self._pool.connection(timeout=self._wait + 1)
            conn = await manager.__aenter__()
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout):
            yield None
            return
        # Whatever happens from here (a caller cancelled while the standby replays
        # included), the connection goes back to its pool, which checks it.
        try:
            try:
                ready = await self._caught_up(conn)
            except (psycopg.OperationalError, psycopg.InterfaceError):
                ready = False
            yield conn if ready else None
        except BaseException as exc:
            await manager.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        await manager.__aexit__(None, None, None)
