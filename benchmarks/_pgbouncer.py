"""A throw-away PgBouncer in transaction pooling mode for a benchmark (Debian's binary):
an ini and a user list in a temporary directory, an unused port, stopped and deleted on
exit. tests/postgres_server.py starts the tests' one the same way."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit


def binary() -> str | None:
    """The pgbouncer executable, or None."""
    return shutil.which("pgbouncer") or next(
        (path for path in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(path).exists()),
        None,
    )


@contextlib.contextmanager
def pgbouncer(server_url: str, pool_size: int = 8) -> Iterator[str]:
    """The URL of a PgBouncer (transaction mode, ``pool_size`` server connections) in
    front of ``server_url``, for the duration of the block."""
    import psycopg

    found = binary()
    if found is None:
        raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
    server = urlsplit(server_url)
    user = server.username or "postgres"
    directory = Path(tempfile.mkdtemp(prefix="recallstore-bench-pgbouncer-"))
    run_as = None
    if os.geteuid() == 0:
        run_as = "postgres"
        account = pwd.getpwnam(run_as)
        os.chown(directory, account.pw_uid, account.pw_gid)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    (directory / "users.txt").write_text(f'"{user}" ""\n')
    ini = directory / "pgbouncer.ini"
    ini.write_text(
        "\n".join(
            [
                "[databases]",
                f"* = host={server.hostname} port={server.port or 5432} user={user}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {port}",
                "unix_socket_dir =",
                "auth_type = trust",
                f"auth_file = {directory / 'users.txt'}",
                "pool_mode = transaction",
                f"default_pool_size = {pool_size}",
                "max_client_conn = 500",
                f"logfile = {directory / 'pgbouncer.log'}",
                f"pidfile = {directory / 'pgbouncer.pid'}",
                *([f"user = {run_as}"] if run_as else []),
            ]
        )
        + "\n"
    )
    process = subprocess.Popen([found, "-q", str(ini)])
    url = f"postgresql://{user}@127.0.0.1:{port}{server.path}"
    try:
        for _ in range(300):
            try:
                with psycopg.connect(url, prepare_threshold=None, connect_timeout=3):
                    break
            except psycopg.Error:
                if process.poll() is not None:
                    raise RuntimeError("pgbouncer exited at start") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)
