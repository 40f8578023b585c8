"""What the forget confirmation's preview costs on SQLite (issue 41): the memory lens's
``/person/forget`` page and ``recallstore forget`` read the scope's records, the kept
plans and the whole journal to name what a forget would take.

A file of 10,000 records in 50 scopes and a journal of N searches; then the preview
of one scope (200 records), timed. Run::

    python benchmarks/forget_preview.py 20000
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore._forget_preview import preview_forget
from recallstore.backends.sqlite import SqliteMemoryStore


async def main(searches: int) -> None:
    """Print the preview's p50 over 5 runs for a journal of ``searches`` searches."""
    with tempfile.TemporaryDirectory() as folder:
        async with SqliteMemoryStore(Path(folder) / "memory.db") as store:
            for batch in range(20):
                await store.write(
                    [
                        MemoryWriteInput(
                            scope={"user": f"u{n % 50}"}, content=f"note {batch} {n} harbor"
                        )
                        for n in range(500)
                    ]
                )
            for n in range(searches):
                query = MemorySearchQuery(query="harbor", scope={"user": f"u{n % 50}"}, limit=5)
                await store.search(query)
            await store.flush_journal()
            _, rows = await store.journal_bounds()
            times = []
            for _ in range(5):
                started = time.perf_counter()
                preview = await preview_forget(store, {"user": "u7"})
                times.append(time.perf_counter() - started)
            print(
                f"journal {rows} events: preview of {preview.total} records, "
                f"{preview.journal_erased} entries to erase, "
                f"p50 {statistics.median(times) * 1000:.0f} ms"
            )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
