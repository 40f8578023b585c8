"""Payload edge values through a real JSONL export file and back (issue 31, defect 4):
every value the contract accepts comes back exactly, on every backend, and an export
file holding a value it refuses is refused line by line (Postgres: tests/postgres)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import MemoryValidationError
from recallstore.jsonl import export_jsonl, import_records, read_jsonl
from recallstore.records import MemoryWriteInput
from recallstore.store import MemoryStore
from recallstore.testing.payloads import ACCEPTED_PAYLOAD, same_json


async def round_trip_through_a_file(
    source: MemoryStore, destination: MemoryStore, path: Path
) -> None:
    """Write the edge payload to ``source``, export it to ``path``, import the file into
    ``destination``; the payload must come back exactly from it."""
    async with source:
        (record,) = await source.write(
            [MemoryWriteInput(scope={"user": "ana"}, content="edge", payload=ACCEPTED_PAYLOAD)]
        )
        with path.open("w", encoding="utf-8") as out:
            assert await export_jsonl(source, out) == 1
    with path.open(encoding="utf-8") as lines:  # as the CLI reads it: by "\n" only
        records = read_jsonl(lines, source=str(path))
    async with destination:
        assert (await import_records(destination, records)).inserted == 1
        imported = await destination.get(record.id)
    assert imported is not None
    payload = imported.payload
    assert isinstance(payload, dict)
    for key, value in ACCEPTED_PAYLOAD.items():
        assert same_json(value, payload[key]), key


_STORES: dict[str, Callable[[Path, str], MemoryStore]] = {
    "memory": lambda tmp, name: InMemoryMemoryStore(),
    "sqlite": lambda tmp, name: SqliteMemoryStore(tmp / f"{name}.db"),
}


@pytest.mark.parametrize("source", list(_STORES))
@pytest.mark.parametrize("destination", list(_STORES))
async def test_edge_payloads_survive_an_export_file(
    tmp_path: Path, source: str, destination: str
) -> None:
    await round_trip_through_a_file(
        _STORES[source](tmp_path, "source"),
        _STORES[destination](tmp_path, "destination"),
        tmp_path / "export.jsonl",
    )


def _line_with_payload(payload_text: str) -> str:
    record = {
        "id": "r1",
        "scope": {},
        "kind": "fact",
        "content": "edge",
        "created_at": "2026-01-01T00:00:00.000000Z",
        "updated_at": "2026-01-01T00:00:00.000000Z",
    }
    return json.dumps(record)[:-1] + f', "payload": {payload_text}}}'


@pytest.mark.parametrize(
    "payload_text",
    ["NaN", "[Infinity]", "1e400", "9" * 641, "[" * 65 + "]" * 65, '"\\ud800"'],
)
def test_an_export_file_holding_a_refused_payload_is_refused(payload_text: str) -> None:
    with pytest.raises(MemoryValidationError) as caught:
        read_jsonl([_line_with_payload(payload_text)], source="export.jsonl")
    assert caught.value.field == "export.jsonl:1"
