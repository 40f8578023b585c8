"""list, search, show, invalidate and delete against a real SQLite file, in-process."""

from __future__ import annotations

import json

import pytest


def test_list_shows_current_records_newest_first(cli, seeded) -> None:
    result = cli("list", "--db", seeded.path)
    assert result.code == 0
    header, *lines = result.out.splitlines()
    assert header.split() == ["ID", "KIND", "STATUS", "SAID", "SAVED", "SCOPE", "CONTENT"]
    # The expired coupon, the invalidated tea and the superseded colours are hidden.
    assert [line.split()[0] for line in lines] == [seeded.purple.id]
    assert "Favourite colour is purple" in lines[0]


def test_list_all_includes_every_record_with_its_status(cli, seeded) -> None:
    result = cli("list", "--db", seeded.path, "--all")
    rows = {line.split()[0]: line for line in result.out.splitlines()[1:]}
    every = (seeded.blue, seeded.green, seeded.purple, seeded.tea, seeded.coupon)
    assert set(rows) == {record.id for record in every}
    assert " superseded " in rows[seeded.blue.id]
    assert " invalidated " in rows[seeded.tea.id]
    assert " expired " in rows[seeded.coupon.id]
    assert " valid " in rows[seeded.purple.id]


def test_list_filters_by_scope_kind_and_tag(cli, seeded) -> None:
    bob = cli("list", "--db", seeded.path, "--all", "--scope", "user=bob", "--json")
    assert [r["id"] for r in json.loads(bob.out)] == [seeded.tea.id]
    episodes = cli("list", "--db", seeded.path, "--all", "--kind", "episode", "--json")
    assert [r["id"] for r in json.loads(episodes.out)] == [seeded.coupon.id]
    tagged = cli("list", "--db", seeded.path, "--all", "--tag", "colour", "--json")
    assert [r["id"] for r in json.loads(tagged.out)] == [seeded.blue.id]
    nobody = cli("list", "--db", seeded.path, "--scope", "user=carol")
    assert nobody.code == 0
    assert nobody.out.strip() == "(no matching memories)"


def test_list_json_is_the_record_contract(cli, seeded) -> None:
    result = cli("list", "--db", seeded.path, "--all", "--scope", "user=alice", "--json")
    records = json.loads(result.out)
    by_id = {r["id"]: r for r in records}
    assert by_id[seeded.coupon.id] == json.loads(seeded.coupon.model_dump_json())


def test_search_ranks_matches_and_reports_scores(cli, seeded) -> None:
    result = cli("search", "colour purple", "--db", seeded.path, "--json")
    hits = json.loads(result.out)
    assert hits[0]["record"]["id"] == seeded.purple.id
    assert all(isinstance(hit["score"], float) for hit in hits)
    text = cli("search", "tea", "--db", seeded.path, "--all")
    header, row = text.out.splitlines()
    assert header.split()[:3] == ["ID", "SCORE", "KIND"]
    assert row.split()[0] == seeded.tea.id
    assert cli("search", "tea", "--db", seeded.path).out.strip() == "(no matching memories)"


def test_show_prints_the_record_and_its_chain_both_ways(cli, seeded) -> None:
    result = cli("show", seeded.green.id, "--db", seeded.path)
    assert result.code == 0
    assert f"superseded by {seeded.purple.id}" in result.out
    chain = result.out.split("chain (oldest first):")[1].splitlines()[1:]
    ids = [line.replace("*", " ").split()[0] for line in chain]
    assert ids == [seeded.blue.id, seeded.green.id, seeded.purple.id]
    assert chain[1].lstrip().startswith("*")


def test_show_json_chain_from_each_end(cli, seeded) -> None:
    expected = [seeded.blue.id, seeded.green.id, seeded.purple.id]
    for record in (seeded.blue, seeded.purple):
        shown = json.loads(cli("show", record.id, "--db", seeded.path, "--json").out)
        assert shown["record"]["id"] == record.id
        assert [item["id"] for item in shown["chain"]] == expected


def test_show_of_a_record_without_chain_shows_its_fields(cli, seeded) -> None:
    result = cli("show", seeded.coupon.id, "--db", seeded.path)
    assert "chain" not in result.out
    # The same text the lens's scope field reads back (recallstore.scope_text).
    assert "scope:      tenant=acme, user=alice\n" in result.out
    assert "conversation_id=c-1" in result.out
    assert '"code": "SPRING"' in result.out
    assert "Alice used the spring coupon" in result.out


def test_scope_hides_records_outside_it(cli, seeded, record_in) -> None:
    for command in ("show", "invalidate", "delete"):
        result = cli(command, seeded.tea.id, "--db", seeded.path, "--scope", "user=alice")
        assert result.code == 1
        assert result.err.strip() == (
            f"recallstore: error: no memory record with id '{seeded.tea.id}' in this scope"
        )
    assert record_in(seeded.path, seeded.tea.id) == seeded.tea


def test_invalidate_records_the_reason_once(cli, seeded, record_in) -> None:
    result = cli("invalidate", seeded.purple.id, "--db", seeded.path, "--reason", "asked to forget")
    assert (result.code, result.out.strip()) == (0, f"invalidated {seeded.purple.id}")
    stored = record_in(seeded.path, seeded.purple.id)
    assert stored.invalid_reason == "asked to forget"
    assert stored.invalid_at is not None
    again = cli("invalidate", seeded.purple.id, "--db", seeded.path)
    assert again.code == 0
    assert "already invalid" in again.out
    assert record_in(seeded.path, seeded.purple.id) == stored


def test_delete_forgets_the_record(cli, seeded, record_in) -> None:
    result = cli("delete", seeded.tea.id, "--db", seeded.path)
    assert (result.code, result.out.strip()) == (0, f"deleted {seeded.tea.id}")
    assert record_in(seeded.path, seeded.tea.id) is None
    missing = cli("delete", seeded.tea.id, "--db", seeded.path)
    assert missing.code == 1
    assert "no memory record with id" in missing.err


def test_db_defaults_to_the_environment_variable(cli, seeded, monkeypatch) -> None:
    monkeypatch.setenv("RECALLSTORE_DB", str(seeded.path))
    result = cli("list", "--json")
    assert [r["id"] for r in json.loads(result.out)] == [seeded.purple.id]


def test_db_accepts_a_sqlite_url(cli, seeded) -> None:
    result = cli("list", "--db", f"sqlite:///{seeded.path}", "--json")
    assert [r["id"] for r in json.loads(result.out)] == [seeded.purple.id]


@pytest.mark.parametrize(
    "command",
    [["list"], ["search", "tea"], ["show", "x"], ["invalidate", "x"], ["delete", "x"], ["export"]],
)
def test_read_commands_never_create_a_database(cli, tmp_path, command) -> None:
    missing = tmp_path / "memory.db"
    result = cli(*command, "--db", missing)
    assert result.code == 1
    assert result.err == (
        f"recallstore: error: no memory database at '{missing}' (check --db or $RECALLSTORE_DB)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_show_finds_a_predecessor_older_than_a_thousand_records(cli, tmp_path) -> None:
    import asyncio

    from recallstore import MemoryWriteInput
    from recallstore.backends.sqlite import SqliteMemoryStore

    path = tmp_path / "busy.db"

    async def fill() -> tuple[str, str]:
        async with SqliteMemoryStore(path) as store:
            [old] = await store.write([MemoryWriteInput(scope={"u": "1"}, content="old")])
            [new] = await store.write(
                [MemoryWriteInput(scope={"u": "1"}, content="new", supersedes=old.id)]
            )
            await store.write(
                [MemoryWriteInput(scope={"u": "1"}, content=f"n {i}") for i in range(1000)]
            )
        return old.id, new.id

    old_id, new_id = asyncio.run(fill())
    shown = json.loads(cli("show", new_id, "--db", path, "--json").out)
    assert [record["id"] for record in shown["chain"]] == [old_id, new_id]


def test_terminal_control_characters_in_memory_are_shown_not_obeyed(cli, tmp_path) -> None:
    import asyncio

    from recallstore import MemoryWriteInput
    from recallstore.backends.sqlite import SqliteMemoryStore

    path = tmp_path / "hostile.db"
    hostile = "fine\x1b[2J\x1b]0;title\x07\x9b31m"

    async def fill() -> str:
        async with SqliteMemoryStore(path) as store:
            [record] = await store.write(
                [MemoryWriteInput(scope={"u": "\x1b[8m"}, content=hostile, tags=["\x1b[1m"])]
            )
        return record.id

    record_id = asyncio.run(fill())
    for output in (
        cli("list", "--db", path).out,
        cli("search", "fine", "--db", path).out,
        cli("show", record_id, "--db", path).out,
    ):
        assert not any(char in output for char in "\x1b\x07\x9b")
        assert "fine\\x1b[2J\\x1b]0;title\\x07\\x9b31m" in output
    assert json.loads(cli("show", record_id, "--db", path, "--json").out)["record"]["content"] == (
        hostile
    )
