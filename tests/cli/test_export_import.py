"""export → import into an empty database keeps every record identical, on real files."""

from __future__ import annotations

import asyncio
import json

import pytest

from recallstore import MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore


def test_round_trip_is_lossless(cli, seeded, tmp_path, records_in) -> None:
    exported = tmp_path / "memory.jsonl"
    result = cli("export", "--db", seeded.path, "--output", exported)
    assert (result.code, result.err.strip()) == (0, f"exported 5 records to {exported}")
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [
        seeded.blue.id,
        seeded.green.id,
        seeded.purple.id,
        seeded.tea.id,
        seeded.coupon.id,
    ]

    copy = tmp_path / "copy" / "memory.db"
    imported = cli("import", exported, "--db", copy)
    assert imported.code == 0, imported.err
    assert imported.err.strip() == f"imported 5 records into {copy}"

    original = records_in(seeded.path)
    assert records_in(copy) == original  # every field: ids, chains, timestamps, payloads
    assert [r.model_dump_json() for r in records_in(copy)] == lines

    again = tmp_path / "again.jsonl"
    cli("export", "--db", copy, "-o", again)
    assert again.read_text(encoding="utf-8") == exported.read_text(encoding="utf-8")


def test_imported_records_behave_like_written_ones(cli, seeded, tmp_path) -> None:
    exported = tmp_path / "memory.jsonl"
    cli("export", "--db", seeded.path, "-o", exported)
    copy = tmp_path / "copy.db"
    cli("import", exported, "--db", copy)

    shown = json.loads(cli("show", seeded.green.id, "--db", copy, "--json").out)
    assert [r["id"] for r in shown["chain"]] == [seeded.blue.id, seeded.green.id, seeded.purple.id]
    hits = json.loads(cli("search", "purple", "--db", copy, "--json").out)
    assert [hit["record"]["id"] for hit in hits] == [seeded.purple.id]
    assert json.loads(cli("list", "--db", copy, "--json").out)[0]["id"] == seeded.purple.id

    async def write_after_import() -> None:
        async with SqliteMemoryStore(copy) as store:
            [new] = await store.write([MemoryWriteInput(scope={"user": "x"}, content="later")])
        assert new.created_at > max(r.updated_at for r in (seeded.purple, seeded.coupon))

    asyncio.run(write_after_import())


def test_reimport_skips_identical_records(cli, seeded, tmp_path, records_in) -> None:
    exported = tmp_path / "memory.jsonl"
    cli("export", "--db", seeded.path, "-o", exported)
    result = cli("import", exported, "--db", seeded.path)
    assert result.code == 0
    assert result.err.strip() == f"imported 0 records (5 already present) into {seeded.path}"
    assert len(records_in(seeded.path)) == 5


@pytest.mark.slow
def test_a_different_record_under_an_existing_id_is_a_conflict(
    process, seeded, tmp_path, records_in
) -> None:
    changed = json.loads(seeded.purple.model_dump_json())
    changed["content"] = "Favourite colour is orange"
    fresh = json.loads(seeded.blue.model_dump_json())
    fresh["id"] = "brand-new-id"
    source = tmp_path / "conflict.jsonl"
    source.write_text(json.dumps(fresh) + "\n" + json.dumps(changed) + "\n", encoding="utf-8")
    before = records_in(seeded.path)

    result = process("import", source, "--db", seeded.path)
    assert result.code == 1
    assert "Traceback" not in result.err
    [line] = result.err.strip().splitlines()
    assert line.startswith("recallstore: error: ")
    assert seeded.purple.id in line
    assert records_in(seeded.path) == before  # the batch was atomic: brand-new-id not written


@pytest.mark.slow
def test_a_malformed_file_writes_nothing(process, seeded, tmp_path) -> None:
    source = tmp_path / "broken.jsonl"
    good = seeded.blue.model_dump_json()
    bad = json.loads(seeded.green.model_dump_json())
    bad["kind"] = "rumour"
    source.write_text(f"{good}\n\n{json.dumps(bad)}\n", encoding="utf-8")
    target = tmp_path / "new" / "memory.db"

    result = process("import", source, "--db", target)
    assert result.code == 2
    [line] = result.err.strip().splitlines()
    assert line.startswith(f"recallstore: error: {source}:3: kind: ")
    assert not target.parent.exists()

    not_json = tmp_path / "notes.jsonl"
    not_json.write_text("this is not json\n", encoding="utf-8")
    result = process("import", not_json, "--db", target)
    assert result.code == 2
    assert result.err.strip().startswith(f"recallstore: error: {not_json}:1: ")

    inconsistent = json.loads(good)
    inconsistent["invalid_at"] = None  # superseded_by is set: the chain would be broken
    broken_chain = tmp_path / "chain.jsonl"
    broken_chain.write_text(json.dumps(inconsistent) + "\n", encoding="utf-8")
    result = process("import", broken_chain, "--db", target)
    assert result.code == 2
    assert result.err.strip() == (
        f"recallstore: error: {broken_chain}:1: invalid_at: a superseded record must have "
        "invalid_at"
    )

    duplicated = tmp_path / "twice.jsonl"
    duplicated.write_text(f"{good}\n{good}\n", encoding="utf-8")
    result = process("import", duplicated, "--db", target)
    assert result.code == 2
    assert "already appeared on line 1" in result.err
    assert not target.parent.exists()


@pytest.mark.slow
def test_missing_import_file(process, tmp_path) -> None:
    result = process("import", tmp_path / "none.jsonl", "--db", tmp_path / "m.db")
    assert result.code == 1
    assert result.err.strip() == f"recallstore: error: no such file: '{tmp_path / 'none.jsonl'}'"


@pytest.mark.slow
def test_export_to_stdout_and_import_from_stdin_with_scope(process, seeded, tmp_path) -> None:
    exported = process("export", "--db", seeded.path, "--scope", "user=alice")
    ids = [json.loads(line)["id"] for line in exported.out.splitlines()]
    assert ids == [seeded.blue.id, seeded.green.id, seeded.purple.id, seeded.coupon.id]
    assert exported.err.strip() == "exported 4 records to stdout"

    import subprocess
    import sys

    target = tmp_path / "alice.db"
    completed = subprocess.run(
        [sys.executable, "-m", "recallstore", "import", "-", "--db", str(target)],
        input=exported.out,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    listed = process("list", "--db", target, "--all", "--json")
    assert sorted(r["id"] for r in json.loads(listed.out)) == sorted(ids)


def test_import_scope_filter(cli, seeded, tmp_path, records_in) -> None:
    exported = tmp_path / "memory.jsonl"
    cli("export", "--db", seeded.path, "-o", exported)
    target = tmp_path / "bob.db"
    assert cli("import", exported, "--db", target, "--scope", "user=bob").code == 0
    assert [r.id for r in records_in(target)] == [seeded.tea.id]


def test_progress_bars_and_more_records_than_one_listing(cli, tmp_path, records_in) -> None:
    source = tmp_path / "big.db"

    async def fill() -> None:
        async with SqliteMemoryStore(source) as store:
            await store.write(
                [
                    MemoryWriteInput(scope={"user": f"u{i % 7}"}, content=f"note number {i}")
                    for i in range(1234)
                ]
            )

    asyncio.run(fill())
    exported = tmp_path / "big.jsonl"
    result = cli("export", "--db", source, "-o", exported, "--progress")
    assert result.code == 0
    assert "exporting 1234 records" in result.err
    assert len(exported.read_text(encoding="utf-8").splitlines()) == 1234

    copy = tmp_path / "copy.db"
    result = cli("import", exported, "--db", copy, "--progress", "--batch-size", "100")
    assert result.code == 0
    assert "importing [" in result.err
    assert "100%  1234/1234" in result.err
    assert records_in(copy) == records_in(source)


def test_export_never_leaves_a_partial_file(process, tmp_path) -> None:
    target = tmp_path / "out.jsonl"
    result = process("export", "--db", tmp_path / "missing.db", "-o", target)
    assert result.code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []
