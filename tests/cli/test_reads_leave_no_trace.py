"""Operator reads leave no trace: `list`, `search`, `show`, `export`, `events tail` and a
lens session leave the database file byte-identical, and work, silently, on a file that
cannot be written (mode 0444 in a 0555 folder for a process held to file modes, or
`chattr +i`)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.cli.conftest import Result, Seeded
from tests.cli.test_serve_command import TOKEN, serving

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

# The capabilities that let root ignore file modes and the immutable flag. Without them,
# root is held to a file's modes as any other user is (capabilities(7)).
_BYPASS = "-dac_override,-dac_read_search,-fowner,-linux_immutable"


def fingerprint(path: Path) -> tuple[str, list[str]]:
    """The file's SHA-256 and the names in its folder (a -wal or -shm left shows)."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(os.listdir(path.parent))


def held_to_modes() -> list[str]:
    """The command prefix that runs a process held to file modes (empty when not root)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no way to drop CAP_DAC_OVERRIDE")
    return [setpriv, f"--bounding-set={_BYPASS}", "--"]


def run_as(prefix: list[str], *args: str | Path) -> Result:
    completed = subprocess.run(
        [*prefix, sys.executable, "-m", "recallstore", *(str(arg) for arg in args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


def cannot_write(prefix: list[str], path: Path) -> bool:
    """Whether a process with ``prefix`` is refused writing ``path`` (the setup bites)."""
    probe = f"open({str(path)!r}, 'ab')"
    completed = subprocess.run(
        [*prefix, sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    return completed.returncode != 0 and (
        "PermissionError" in completed.stderr or "Operation not permitted" in completed.stderr
    )


def silent(result: Result) -> bool:
    """Exit 0 and nothing on stderr but export's own summary (no warning of any kind)."""
    noise = [line for line in result.err.splitlines() if not line.startswith("exported ")]
    return result.code == 0 and not noise


def read_commands(seeded: Seeded, db: Path, out: Path) -> list[tuple[list[str | Path], str]]:
    """Each operator read and a text its output must hold."""
    return [
        (["list", "--db", db, "--all"], seeded.blue.id),
        (["search", "--db", db, "purple"], seeded.purple.id),
        (["search", "--db", db, "--json", "coupon", "--all"], seeded.coupon.id),
        (["show", "--db", db, seeded.green.id], "chain (oldest first)"),
        (["export", "--db", db], seeded.tea.id),
        (["export", "--db", db, "--output", out], ""),
        (["events", "tail", "--db", db, "--last", "3"], "invalidate"),
    ]


def test_reads_leave_the_file_byte_identical(seeded, tmp_path) -> None:
    (tmp_path / "out").mkdir()
    before = fingerprint(seeded.path)
    for args, expected in read_commands(seeded, seeded.path, tmp_path / "out" / "x.jsonl"):
        result = run_as([], *args)
        assert silent(result), (args, result.err)
        assert expected in result.out, args
        assert fingerprint(seeded.path) == before, args


def test_reads_work_on_a_file_a_user_cannot_write(seeded, tmp_path) -> None:
    prefix = held_to_modes()
    folder = tmp_path / "locked"
    folder.mkdir()
    db = folder / "memory.db"
    shutil.copy(seeded.path, db)
    db.chmod(0o444)
    folder.chmod(0o555)
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)  # the process held to modes writes its export here
    try:
        assert cannot_write(prefix, db), "the setup does not stop this process writing"
        before = fingerprint(db)
        for args, expected in read_commands(seeded, db, out / "x.jsonl"):
            result = run_as(prefix, *args)
            assert silent(result), (args, result.err)
            assert expected in result.out, args
        assert fingerprint(db) == before
        assert str(seeded.purple.id) in (out / "x.jsonl").read_text(encoding="utf-8")
        # A write says why it cannot, and changes nothing.
        refused = run_as(prefix, "invalidate", "--db", db, seeded.purple.id)
        assert refused.code != 0
        assert "read-only" in refused.err or "readonly" in refused.err, refused.err
        assert fingerprint(db) == before
    finally:
        folder.chmod(0o755)


def test_reads_see_a_live_writer_of_a_file_they_cannot_write(seeded, tmp_path) -> None:
    """A writer holding the file open (its -wal beside it): the reader reads through
    the log, read-only, and sees the writer's newest record."""
    prefix = held_to_modes()
    folder = tmp_path / "shared"
    folder.mkdir()
    db = folder / "memory.db"
    shutil.copy(seeded.path, db)
    db.chmod(0o644)
    folder.chmod(0o755)

    import asyncio

    async def scenario() -> None:
        async with SqliteMemoryStore(db) as writer:
            [fresh] = await writer.write(
                [MemoryWriteInput(scope={"user": "alice"}, content="Alice now prefers teal")]
            )
            assert (folder / "memory.db-wal").exists()
            result = await asyncio.to_thread(run_as, prefix, "search", "--db", db, "teal")
            assert (result.code, result.err) == (0, ""), result.err
            assert fresh.id in result.out

    if os.geteuid() == 0:
        asyncio.run(scenario())
    else:
        pytest.skip("the writer and the held reader are the same user: nothing to show")


@pytest.fixture
def immutable_copy(seeded: Seeded, tmp_path: Path) -> Iterator[Path]:
    chattr = shutil.which("chattr")
    db = tmp_path / "frozen" / "memory.db"
    db.parent.mkdir()
    shutil.copy(seeded.path, db)
    if chattr is None:
        pytest.skip("no chattr on this machine")
    made = subprocess.run([chattr, "+i", str(db)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is not supported here: {made.stderr.strip()}")
    try:
        yield db
    finally:
        subprocess.run([chattr, "-i", str(db)], check=True)


def test_reads_work_on_an_immutable_file(seeded, immutable_copy, tmp_path) -> None:
    before = fingerprint(immutable_copy)
    for args, expected in read_commands(seeded, immutable_copy, tmp_path / "x.jsonl"):
        result = run_as([], *args)
        assert silent(result), (args, result.err)
        assert expected in result.out, args
    assert fingerprint(immutable_copy) == before


def lens_pages(seeded: Seeded) -> list[str]:
    """The lens's pages and JSON reads, the way a person browsing it requests them."""
    return [
        "/",
        "/records?scope=tenant%3Dacme%2C+user%3Dalice",
        "/records?scope=user%3Dalice&q=colour&invalidated=1&expired=1",
        f"/records/{seeded.green.id}",
        f"/records/{seeded.tea.id}",
        "/recall?scope=user%3Dalice&text=what+colour",
        "/api/records?scope=user%3Dalice",
        "/api/records?scope=user%3Dalice&q=purple",
        f"/api/records/{seeded.purple.id}",
        "/static/lens.css",
    ]


def browse(base: str, pages: list[str]) -> None:
    with httpx.Client(base_url=base, timeout=10, follow_redirects=True) as client:
        assert client.get(f"/?token={TOKEN}").status_code == 200
        for page in pages:
            answer = client.get(page)
            assert answer.status_code == 200, (page, answer.text[:300])


@pytest.mark.slow
def test_a_lens_session_leaves_the_file_byte_identical(seeded) -> None:
    before = fingerprint(seeded.path)
    with serving(seeded.path, "--token", TOKEN) as (address, server):
        browse(address.split("/?")[0], lens_pages(seeded))
    assert server.returncode == 0
    assert server.stderr is not None
    assert "journal" not in server.stderr.read()
    assert fingerprint(seeded.path) == before


@pytest.mark.slow
def test_the_lens_shows_an_immutable_file(seeded, immutable_copy) -> None:
    before = fingerprint(immutable_copy)
    with serving(immutable_copy, "--token", TOKEN) as (address, server):
        base = address.split("/?")[0]
        browse(base, lens_pages(seeded))
        headers = {"Authorization": f"Bearer {TOKEN}"}
        refused = httpx.post(
            f"{base}/api/records/{seeded.purple.id}/invalidate", headers=headers, json={}
        )
        assert refused.status_code == 503
        assert "read-only" in refused.json()["message"]
    assert server.returncode == 0
    assert server.stderr is not None
    assert server.stderr.read() == ""
    assert fingerprint(immutable_copy) == before
