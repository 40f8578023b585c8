"""How the Postgres backend connects: direct, or behind a pooler such as PgBouncer.

A pooler in *transaction* mode (PgBouncer ``pool_mode = transaction``, Supavisor,
RDS Proxy) hands each transaction to whichever server connection is free, so nothing
a session keeps survives from one transaction to the next. The store keeps none of
its own (its advisory locks are transaction-level, its settings ``SET LOCAL``-scoped),
but two things of the driver and the journal are session state:

- psycopg prepares a statement on the server after it ran five times on a connection
  (``prepare_threshold``); the next transaction may reach a server connection that
  never saw it. With ``pool_mode="transaction"`` every connection has
  ``prepare_threshold=None``: statements are parsed each time, never named.
- ``LISTEN`` belongs to a session: through a transaction pooler, notifications reach
  whichever client next borrows that server connection, or no one. A journal tailer
  (the lens's live feed) listens on ``listen_url`` — a direct or session-mode URL —
  when one is given, and otherwise reads the journal table every
  :data:`POLL_SECONDS`.

A pooler cannot be detected from the protocol (it answers as the server does), so the
mode is configured, never guessed: ``PostgresMemoryStore(url, pool_mode="transaction",
listen_url=...)``, or in a URL for ``load_memory_store`` and the CLI,
``?recallstore_pool_mode=transaction&recallstore_listen_url=<percent-encoded URL>``
(and ``recallstore_standby_url``, postgres.routing; :func:`split_url`), parameters
taken out before the URL reaches libpq.
"""

from __future__ import annotations

import asyncio
import re
import select
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast, get_args
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from recallstore.errors import ConfigurationError, StoreUnavailableError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "LISTEN_URL_PARAMETER",
    "POLL_SECONDS",
    "POOL_MODE_PARAMETER",
    "STANDBY_URL_PARAMETER",
    "PoolMode",
    "check_handed_out",
    "check_pool_mode",
    "connection_kwargs",
    "dropped_if_read_only",
    "explain",
    "in_write",
    "is_read_only",
    "meanwhile",
    "open_pool",
    "redact",
    "split_url",
    "writing_on",
]

PoolMode = Literal["session", "transaction"]
"""``"session"``: direct, or a session-mode pooler; ``"transaction"``: a pooler that
keeps no session state between transactions."""

POOL_MODE_PARAMETER: Final = "recallstore_pool_mode"
"""The URL query parameter naming the pool mode (``from_url``)."""
LISTEN_URL_PARAMETER: Final = "recallstore_listen_url"
"""The URL query parameter holding the journal listener's own URL (``from_url``)."""
STANDBY_URL_PARAMETER: Final = "recallstore_standby_url"
"""The URL query parameter holding a hot standby's URL for reads (``from_url``)."""

POLL_SECONDS: Final = 0.5
"""How often a journal tailer reads the journal table when it cannot ``LISTEN``."""

_PASSWORD_IN_URL = re.compile(r"(://[^:/@]+):[^@]*@")
# password=... in a key/value conninfo string or a URL's query string.
_PASSWORD_PARAMETER = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def redact(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***`` (user info, query string, conninfo)."""
    return _PASSWORD_PARAMETER.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1:***@", dsn))


def check_pool_mode(mode: str) -> PoolMode:
    """``mode`` if it is a pool mode; ConfigurationError naming the choices otherwise."""
    if mode not in get_args(PoolMode):
        raise ConfigurationError(f"pool_mode must be 'session' or 'transaction', got {mode!r}")
    return cast(PoolMode, mode)


def split_url(url: str) -> tuple[str, PoolMode, str | None, str | None]:
    """``(url for libpq, pool mode, listen url, standby url)`` from a URL that may carry
    :data:`POOL_MODE_PARAMETER`, :data:`LISTEN_URL_PARAMETER` and
    :data:`STANDBY_URL_PARAMETER` in its query string."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    ours = {POOL_MODE_PARAMETER, LISTEN_URL_PARAMETER, STANDBY_URL_PARAMETER}
    found = {name: value for name, value in pairs if name in ours}
    if not found:
        return url, "session", None, None
    rest = [(name, value) for name, value in pairs if name not in ours]
    libpq = urlunsplit(parts._replace(query=urlencode(rest)))
    mode = check_pool_mode(found.get(POOL_MODE_PARAMETER, "session"))
    listen = found.get(LISTEN_URL_PARAMETER) or None
    return libpq, mode, listen, found.get(STANDBY_URL_PARAMETER) or None


def connection_kwargs(mode: PoolMode) -> dict[str, Any]:
    """psycopg connection arguments of the pool's connections in ``mode``."""
    if mode == "transaction":
        return {"autocommit": True, "prepare_threshold": None}
    return {"autocommit": True}


def explain(exc: BaseException) -> str:
    """``exc``'s message; for a prepared statement a transaction pooler lost or shared
    (psycopg's, in session mode), what to configure; for a write refused as read-only,
    that the connection was dropped and what URL reaches the primary."""
    from psycopg.errors import DuplicatePreparedStatement, InvalidSqlStatementName

    said = str(exc).strip()
    if isinstance(exc, DuplicatePreparedStatement | InvalidSqlStatementName):
        said += (
            ": behind a transaction pooler (PgBouncer), open the store with "
            "pool_mode='transaction' (docs/postgres.md#behind-pgbouncer)"
        )
    elif is_read_only(exc):
        said += (
            ": the server takes no writes (a standby, or a primary demoted or fenced in a "
            "failover); the connection was dropped and the write can be retried (with "
            "idempotency keys, safely). A URL naming every node with "
            "target_session_attrs=read-write reconnects to the primary "
            "(docs/postgres.md#failover)"
        )
    return said


def is_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` is a write refused because the session is read-only.

    After a failover a pooled connection can still reach the old primary when that
    node keeps its sessions but stops taking writes (fenced with
    ``default_transaction_read_only``, or behind a proxy or pooler that now routes to
    a standby). Such a connection works for reads and fails every write, so the pool
    must not hand it out again: the store closes it, and the pool's next connection
    goes wherever the URL's ``target_session_attrs=read-write`` finds the primary."""
    from psycopg.errors import ReadOnlySqlTransaction

    return isinstance(exc, ReadOnlySqlTransaction)


@asynccontextmanager
async def dropped_if_read_only(conn: AsyncConnection[Any]) -> AsyncIterator[None]:
    """Close ``conn`` when the block fails with a write refused as read-only
    (:func:`is_read_only`), so the pool it came from replaces it; re-raise either way."""
    try:
        yield
    except Exception as exc:
        if is_read_only(exc):
            await conn.close()
        raise


async def check_handed_out(conn: AsyncConnection[Any]) -> None:
    """The pool's check of each connection it hands out, without a round trip when the
    connection's socket is quiet. A server that drops a connection (a restart, a
    failover, ``pg_terminate_backend``, an idle timeout) sends its goodbye or closes the
    socket, which makes it readable; so does anything else the server said unasked.
    Then the pool's own check runs (an empty query), and a dead connection is replaced
    instead of failing the call. An idle connection has nothing to read."""
    from psycopg_pool import AsyncConnectionPool

    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):  # closed already: let the pool's check say so
        readable = [True]
    if readable:
        await AsyncConnectionPool.check_connection(conn)


_WRITING: weakref.WeakSet[Any] = weakref.WeakSet()

_T = TypeVar("_T")


async def meanwhile(statement: Awaitable[object], work: Callable[[], _T]) -> _T:
    """What ``work()`` returns, called while the server runs ``statement``: the
    statement is sent first, so the client's work and the server's overlap instead of
    taking turns. ``work`` must not use the statement's connection. The statement's
    error is raised if it fails; whatever happens, it has ended when this returns or
    raises (no query is left in flight)."""
    running = asyncio.ensure_future(statement)
    try:
        await asyncio.sleep(0)  # the statement is sent, then waits for its answer
        done = work()
    except BaseException:
        await asyncio.gather(running, return_exceptions=True)
        raise
    await running
    return done


def writing_on(conn: AsyncConnection[Any], writing: bool) -> None:
    """Mark ``conn`` as in (or out of) a write transaction of the store (a read in a
    pipeline shows a transaction too, so the status alone cannot tell)."""
    if writing:
        _WRITING.add(conn)
    else:
        _WRITING.discard(conn)


def in_write(conn: AsyncConnection[Any]) -> bool:
    """Whether ``conn`` is in a write transaction (its reads lock what they read)."""
    return conn in _WRITING


async def open_pool(
    dsn: str, sizes: tuple[int, int], mode: PoolMode, target: str
) -> AsyncConnectionPool[Any]:
    """An open pool of ``sizes`` (min, max) connections to ``dsn`` in ``mode``, its
    connections checked as handed out (:func:`check_handed_out`);
    StoreUnavailableError naming ``target`` when the server cannot be reached."""
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    try:
        # One direct attempt first: a pool would retry a refused connection until timeout.
        probe = await psycopg.AsyncConnection.connect(
            dsn, connect_timeout=10, **connection_kwargs(mode)
        )
    except psycopg.Error as exc:
        raise StoreUnavailableError(target, f"cannot connect: {exc}") from None
    await probe.close()
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn,
        min_size=sizes[0],
        max_size=sizes[1],
        kwargs=connection_kwargs(mode),
        check=check_handed_out,
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=10)
    except Exception as exc:
        await pool.close()
        raise StoreUnavailableError(target, f"cannot connect: {exc}") from None
    return pool
