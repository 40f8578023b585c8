"""What erasing a deleted record's traces costs on SQLite (issue 36, kit rule S24).

A file of 10,000 records in 50 scopes and a journal of N searches (about 500 bytes
each); then 40 ``delete(id)`` calls and one ``forget(scope)`` of 200 records. Run::

    python benchmarks/forget_traces.py 20000
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from recallstore import MemorySearchQuery, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore


async def main(searches: int) -> None:
    """Print delete p50 and the forget's time for a journal of ``searches`` searches."""
    with tempfile.TemporaryDirectory() as folder:
        async with SqliteMemoryStore(Path(folder) / "memory.db") as store:
            records = []
            for batch in range(20):
                records += await store.write(
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
            took = []
            for record in records[:40]:
                started = time.perf_counter()
                await store.delete(record.id)
                took.append(time.perf_counter() - started)
            started = time.perf_counter()
            forgotten = await store.forget({"user": "u7"})
            forget_ms = (time.perf_counter() - started) * 1000
    print(
        f"journal rows {rows}: delete p50 {statistics.median(took) * 1000:.1f} ms, "
        f"forget of {forgotten} records {forget_ms:.0f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000))
