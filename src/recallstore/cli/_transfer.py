"""The transfer commands: export records as JSONL, import them back unchanged."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from recallstore._command.database import make_parent_directory, open_store, parse_scope
from recallstore._command.errors import EXIT_INTERRUPTED, CliError
from recallstore.cli._output import count_records
from recallstore.cli._progress import ProgressBar
from recallstore.jsonl import (
    IMPORT_EXTENSION,
    export_jsonl,
    filter_by_scope,
    import_records,
    read_jsonl,
)
from recallstore.records import MemoryRecord


def run_export(args: argparse.Namespace) -> int:
    """``recallstore export``: every matching record as JSONL, oldest first."""
    scope = parse_scope(args.scope)
    to_stdout = args.output in (None, "-")
    bar = ProgressBar("exporting", total=None, enabled=ProgressBar.wanted(args.progress))

    async def go(out: TextIO) -> int:
        async with open_store(args.db, must_exist=True, read_only=True) as store:
            return await export_jsonl(store, out, scope=scope, progress=bar.update)

    if to_stdout:
        try:
            count = asyncio.run(go(sys.stdout))
        finally:
            bar.close()
        sys.stdout.flush()
        destination = "stdout"
    else:
        target = Path(args.output)
        if target.is_dir():
            raise CliError(f"--output {str(target)!r} is a directory")
        if not target.parent.is_dir():
            raise CliError(f"--output {str(target)!r}: no folder {str(target.parent)!r}")
        partial = target.with_name(target.name + ".partial")
        try:
            # Write beside the target and rename, so a crash never leaves half a file.
            with partial.open("w", encoding="utf-8") as out:
                count = asyncio.run(go(out))
            os.replace(partial, target)
        finally:
            bar.close()
            partial.unlink(missing_ok=True)
        destination = str(target)
    print(f"exported {count_records(count)} to {destination}", file=sys.stderr)
    return 0


def _read_import_file(name: str) -> list[MemoryRecord]:
    if name == "-":
        return _decoded(lambda: read_jsonl(sys.stdin, source="<stdin>"), "<stdin>")
    source = Path(name)
    if source.is_dir():
        raise CliError(f"{name!r} is a directory, not a JSONL file")
    if not source.is_file():
        raise CliError(f"no such file: {name!r}")
    with source.open(encoding="utf-8") as lines:
        return _decoded(lambda: read_jsonl(lines, source=name), name)


def _decoded(read: Callable[[], list[MemoryRecord]], source: str) -> list[MemoryRecord]:
    try:
        return read()
    except UnicodeDecodeError:
        raise CliError(f"{source}: not UTF-8 text (is it a recallstore JSONL export?)") from None


def run_import(args: argparse.Namespace) -> int:
    """``recallstore import FILE``: insert exported records unchanged."""
    scope = parse_scope(args.scope)
    if args.batch_size < 1:
        raise CliError(f"--batch-size must be at least 1, got {args.batch_size}", 2)
    records = _read_import_file(args.file)
    if scope:
        records = filter_by_scope(records, scope)
    bar = ProgressBar("importing", total=len(records), enabled=ProgressBar.wanted(args.progress))

    store = open_store(args.db, must_exist=False)
    if IMPORT_EXTENSION not in store.capabilities().extensions:
        raise CliError(
            f"{args.db} cannot take a lossless import: its store ({type(store).__name__}) "
            f"lacks the '{IMPORT_EXTENSION}' extension"
        )
    make_parent_directory(store)
    done = 0

    def progress(count: int) -> None:
        nonlocal done
        done = count
        bar.update(count)

    async def go() -> tuple[int, int]:
        async with store:
            result = await import_records(
                store, records, batch_size=args.batch_size, progress=progress
            )
            return result.inserted, result.skipped

    try:
        inserted, skipped = asyncio.run(go())
    except KeyboardInterrupt:
        raise CliError(
            f"interrupted after importing {done} of {len(records)} records into {args.db}; "
            "run the same import again to finish (records already there are skipped)",
            EXIT_INTERRUPTED,
        ) from None
    finally:
        bar.close()
    note = f" ({skipped} already present)" if skipped else ""
    print(f"imported {count_records(inserted)}{note} into {args.db}", file=sys.stderr)
    return 0
