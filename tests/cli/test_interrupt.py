"""Ctrl+C during `recallstore import`: one line saying what is kept; re-running finishes."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

RECORDS = 3000


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ctrl_c_during_import_keeps_whole_batches_and_says_so(cli, tmp_path, records_in) -> None:
    source = tmp_path / "source.db"

    async def fill() -> None:
        async with SqliteMemoryStore(source) as store:
            await store.write(
                [MemoryWriteInput(scope={"u": "1"}, content=f"note {i}") for i in range(RECORDS)]
            )

    asyncio.run(fill())
    exported = tmp_path / "all.jsonl"
    assert cli("export", "--db", source, "-o", exported).code == 0
    target = tmp_path / "copy.db"
    # One record per transaction: thousands of commits, so the import is still running
    # when the first progress line (drawn after the first commit) is seen.
    command = ["import", str(exported), "--db", str(target), "--batch-size", "1", "--progress"]
    importing = subprocess.Popen(
        [sys.executable, "-m", "recallstore", *command],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        # A run started in the background of a non-interactive shell inherits SIGINT
        # ignored, and so would the import: give it Ctrl+C's default, as a terminal does.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert importing.stderr is not None
    seen = ""
    while "importing [" not in seen:
        char = importing.stderr.read(1)
        assert char, f"the import ended before drawing progress: {seen!r}"
        seen += char
    importing.send_signal(signal.SIGINT)
    err = seen + importing.stderr.read()
    assert importing.wait(timeout=60) == 130
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    prefix = "recallstore: error: interrupted after importing "
    assert last.startswith(prefix), err
    reported = int(last.removeprefix(prefix).split()[0])
    assert f" of {RECORDS} records into {target}; run the same import again" in last
    assert 0 < reported < RECORDS
    # Whole batches only: the reported ones, plus at most the batch whose commit the
    # interrupt overtook.
    kept = len(records_in(target))
    assert reported <= kept <= reported + 1

    again = cli("import", exported, "--db", target)
    assert again.code == 0
    assert again.err.strip() == (
        f"imported {RECORDS - kept} records ({kept} already present) into {target}"
    )
    assert records_in(target) == records_in(source)
