"""Two clusters in synchronous streaming replication whose roles the tests swap.

Like tests/postgres_replica.py (``initdb`` into a temporary directory, unused ports, as
the ``postgres`` user when root), but both clusters carry
``synchronous_standby_names = '*'`` and ``synchronous_commit = on``: a COMMIT on the
primary returns only once the standby has flushed it. :meth:`FailoverPair.fail_over`
does what an operator (or Patroni) does when the primary dies: it crashes the primary
(``pg_ctl -m immediate``: no shutdown checkpoint, no goodbye to clients), promotes the
standby, and rebuilds the dead node as the new primary's standby (a fresh
``pg_basebackup``: whatever the crashed node committed locally but never replicated is
thrown away, as it must be) and waits until it replicates synchronously again. The
application's URL names both nodes (``host=a,b target_session_attrs=read-write``), so it
never changes: libpq connects to whichever node is the primary.

``FailoverPair(..., synchronous=False)`` replicates asynchronously (no
``synchronous_standby_names``); :meth:`FailoverPair.hold_standby` then cuts the standby
off the primary's WAL before a crash, so the failover has acknowledged writes to lose,
and :meth:`FailoverPair.promote` promotes the standby without stopping the primary.
No node is left running: :meth:`FailoverPair.stop` stops both and deletes them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
from tests.postgres_replica import _as_server_user, _port, _run, _settings, _wait_ready

__all__ = ["FailoverPair"]

# Every wait below is a bound on something the servers do, checked by asking them.
_SYNC_BOUND = 180.0


def _until(conn: psycopg.Connection[tuple[object, ...]], sql: str) -> None:
    """Return once ``sql`` (one boolean) is true on ``conn``."""
    deadline = time.monotonic() + _SYNC_BOUND
    while conn.execute(sql).fetchone() != (True,):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{sql} stayed false for {_SYNC_BOUND} s")
        time.sleep(0.05)


class FailoverPair:
    """A primary and its synchronous standby (nodes ``0`` and ``1`` at first)."""

    def __init__(self, binaries: Path, *, synchronous: bool = True) -> None:
        self._bin = binaries
        self._synchronous = synchronous
        self._root = Path(tempfile.mkdtemp(prefix="recallstore-failover-"))
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self._root, account.pw_uid, account.pw_gid)
        self._ports = (_port(), _port())
        self._dirs = (self._root / "node0", self._root / "node1")
        self.primary = 0
        """Which node (0 or 1) is the primary now."""
        self.failovers = 0
        self._held = False
        self.crashes: list[tuple[float, float]] = []
        """When each crash of a primary was over, and when its failover was
        (``time.time()``: the standby promoted and the old primary its new standby)."""

    @property
    def url(self) -> str:
        """The application's URL: both nodes, connecting to the one that takes writes."""
        hosts = ",".join(f"127.0.0.1:{port}" for port in self._ports)
        return f"postgresql://postgres@{hosts}/postgres?target_session_attrs=read-write"

    def node_url(self, node: int) -> str:
        """One node's own URL."""
        return f"postgresql://postgres@127.0.0.1:{self._ports[node]}/postgres"

    def _ctl(self, node: int, *args: str) -> None:
        log = self._root / f"node{node}.log"
        _run([str(self._bin / "pg_ctl"), "-D", str(self._dirs[node]), "-l", str(log), *args])

    def start(self) -> None:
        """initdb node 0, start it as the primary, and node 1 as its synchronous standby."""
        first = self._dirs[0]
        _run([str(self._bin / "initdb"), "-D", str(first), "-U", "postgres", "--auth=trust"])
        with (first / "postgresql.conf").open("a") as conf:
            conf.write(_settings(self._ports[0], self._root))
            names = "*" if self._synchronous else ""
            conf.write(f"synchronous_standby_names = '{names}'\nsynchronous_commit = on\n")
            conf.write("wal_keep_size = 64MB\nmax_connections = 60\n")
        self._ctl(0, "-w", "start")
        _wait_ready(self.node_url(0))
        self._make_standby(1)

    def _make_standby(self, node: int) -> None:
        """A fresh copy of the primary at ``node``, started as its standby; returns once
        the primary reports it as its synchronous standby."""
        shutil.rmtree(self._dirs[node], ignore_errors=True)
        source = self._ports[self.primary]
        _run(
            [
                str(self._bin / "pg_basebackup"),
                *("-h", "127.0.0.1", "-p", str(source), "-U", "postgres"),
                *("-D", str(self._dirs[node]), "-R", "-X", "stream", "--checkpoint=fast"),
            ]
        )
        with (self._dirs[node] / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {self._ports[node]}\n")
        self._ctl(node, "-w", "start")
        _wait_ready(self.node_url(node))
        self.wait_synchronous()

    def wait_synchronous(self) -> None:
        """Return once the primary streams to its standby (in ``sync`` state unless the
        pair was made with ``synchronous=False``)."""
        deadline = time.monotonic() + _SYNC_BOUND
        state = "sync" if self._synchronous else "async"
        while time.monotonic() < deadline:
            with psycopg.connect(self.node_url(self.primary), autocommit=True) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_replication "
                    "WHERE sync_state = %s AND state = 'streaming'",
                    (state,),
                ).fetchone()
            if row is not None and row[0] == 1:
                return
            time.sleep(0.2)
        raise RuntimeError(f"no synchronous standby after {_SYNC_BOUND} s")

    def promote(self) -> None:
        """Promote the standby without stopping the primary (as a failover tool does when
        it wrongly thinks the primary dead): two nodes then take writes."""
        self._ctl(1 - self.primary, "-w", "promote")

    def hold_standby(self) -> float:
        """Cut the standby off the primary's WAL until the next :meth:`fail_over` (its
        ``primary_conninfo`` emptied: the WAL receiver exits and no new one starts), as
        a broken link would, once it has everything the primary wrote so far; returns
        a moment before which every commit is on it."""
        before = time.time()
        with psycopg.connect(self.node_url(self.primary), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        standby = self.node_url(1 - self.primary)
        with psycopg.connect(standby, autocommit=True) as conn:
            _until(conn, f"SELECT pg_last_wal_receive_lsn() >= '{row[0]}'::pg_lsn")
            conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
            conn.execute("SELECT pg_reload_conf()")
            _until(conn, "SELECT count(*) = 0 FROM pg_stat_wal_receiver")
        self._held = True
        return before

    def fail_over(self) -> None:
        """Crash the primary, promote the standby, rebuild the old primary as its standby."""
        old, new = self.primary, 1 - self.primary
        self._ctl(old, "-m", "immediate", "stop")
        crashed = time.time()
        self._ctl(new, "-w", "promote")
        self.primary = new
        deadline = time.monotonic() + _SYNC_BOUND
        with psycopg.connect(self.node_url(new), autocommit=True) as conn:
            while conn.execute("SELECT pg_is_in_recovery()").fetchone() != (False,):
                if time.monotonic() > deadline:
                    raise RuntimeError("the standby did not leave recovery")
                time.sleep(0.1)
            if self._held:  # a primary needs no link to one; a later standby gets its own
                conn.execute("ALTER SYSTEM RESET primary_conninfo")
                self._held = False
        self._make_standby(old)
        self.failovers += 1
        self.crashes.append((crashed, time.time()))

    def stop(self) -> None:
        """Stop both nodes and delete their directories."""
        for node in (0, 1):
            if self._dirs[node].exists():
                ctl = [str(self._bin / "pg_ctl"), "-D", str(self._dirs[node])]
                subprocess.run(
                    _as_server_user([*ctl, "-m", "immediate", "stop"]),
                    capture_output=True,
                    check=False,
                )
        shutil.rmtree(self._root, ignore_errors=True)
