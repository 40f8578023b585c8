"""A primary and its streaming hot standby, started by the tests for the session.

Not the machine's server: a cluster of its own (``initdb`` into a temporary directory,
the PostgreSQL binaries of the machine's installation), on unused ports, with
``wal_level = replica``; the standby is a ``pg_basebackup -R`` of it with
``hot_standby = on``. As root both run as the ``postgres`` user (PostgreSQL refuses
root). Both are stopped and deleted afterwards. Without the binaries the tests skip,
unless RECALLSTORE_REQUIRE_POSTGRES=1 (CI), where they fail.
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
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest


def _binaries() -> Path | None:
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / "initdb").exists() and (root / "pg_basebackup").exists():
            return root
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def _run(command: list[str]) -> None:
    done = subprocess.run(_as_server_user(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")


def _settings(port: int, directory: Path) -> str:
    return "\n".join(
        [
            f"port = {port}",
            "listen_addresses = '127.0.0.1'",
            f"unix_socket_directories = '{directory}'",
            "wal_level = replica",
            "max_wal_senders = 4",
            "hot_standby = on",
            "fsync = off",
            "full_page_writes = off",
            "shared_buffers = 32MB",
            "max_connections = 40",
            "",
        ]
    )


def _wait_ready(url: str) -> None:
    for _ in range(600):  # a start-up bound: each look is a connection attempt
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.Error:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not accept connections")


def _start_pair(binaries: Path) -> tuple[str, str, list[Path]]:
    root = Path(tempfile.mkdtemp(prefix="recallstore-replica-"))
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(root, account.pw_uid, account.pw_gid)
    primary, standby = root / "primary", root / "standby"
    ports = (_port(), _port())
    started: list[Path] = []
    try:
        _run([str(binaries / "initdb"), "-D", str(primary), "-U", "postgres", "--auth=trust"])
        with (primary / "postgresql.conf").open("a") as conf:
            conf.write(_settings(ports[0], root))
        _run(
            [str(binaries / "pg_ctl"), "-D", str(primary), "-l", str(root / "p.log"), "-w", "start"]
        )
        started.append(primary)
        primary_url = f"postgresql://postgres@127.0.0.1:{ports[0]}/postgres"
        _wait_ready(primary_url)
        backup = ["-U", "postgres", "-D", str(standby), "-R", "-X", "stream"]
        _run([str(binaries / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(ports[0]), *backup])
        with (standby / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {ports[1]}\n")
        _run(
            [str(binaries / "pg_ctl"), "-D", str(standby), "-l", str(root / "s.log"), "-w", "start"]
        )
        started.append(standby)
        standby_url = f"postgresql://postgres@127.0.0.1:{ports[1]}/postgres"
        _wait_ready(standby_url)
    except BaseException:
        _stop(binaries, started, root)
        raise
    return primary_url, standby_url, [root, *started]


def _stop(binaries: Path, clusters: list[Path], root: Path) -> None:
    for cluster in reversed(clusters):
        subprocess.run(
            _as_server_user([str(binaries / "pg_ctl"), "-D", str(cluster), "-m", "fast", "stop"]),
            capture_output=True,
            check=False,
        )
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def replica_pair() -> Iterator[tuple[str, str]]:
    """``(primary URL, standby URL)`` of a test-started streaming replication pair."""
    required = os.environ.get("RECALLSTORE_REQUIRE_POSTGRES") == "1"
    binaries = _binaries()
    if binaries is None:
        reason = "needs the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup)"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        primary_url, standby_url, made = _start_pair(binaries)
    except RuntimeError as exc:
        if required:
            raise
        pytest.skip(f"the replication pair did not start: {exc}")
    try:
        yield primary_url, standby_url
    finally:
        _stop(binaries, made[1:], made[0])


@pytest.fixture
def replica_schema(replica_pair: tuple[str, str]) -> Iterator[str]:
    """A fresh schema name for one test's store on the pair, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(replica_pair[0], autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
