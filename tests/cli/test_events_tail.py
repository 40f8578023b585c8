"""``recallstore events tail``: the journal of a database, in the terminal."""

from __future__ import annotations

import json

from tests.cli.conftest import Seeded


def test_tail_prints_every_write_of_the_seeded_file(cli, seeded: Seeded) -> None:
    result = cli("events", "tail", "--db", seeded.path)
    assert result.code == 0, result.err
    header, *lines = result.out.splitlines()
    assert header.split() == ["ID", "TIME", "TYPE", "WHAT", "N", "SCOPE", "RECORD", "IDS"]
    # Five writes (two of them supersedes) and an invalidation, in commit order.
    assert [line.split()[4] for line in lines] == [
        "write",
        "supersede",
        "supersede",
        "write",
        "invalidate",
        "write",
    ]
    ids = [int(line.split()[0]) for line in lines]
    assert ids == sorted(set(ids))
    assert seeded.tea.id in lines[4]


def test_tail_filters_by_scope_keeps_the_newest_and_prints_json(cli, seeded: Seeded) -> None:
    scope = seeded.coupon.scope
    pair = next(iter(scope.items()))
    result = cli("events", "tail", "--db", seeded.path, "--scope", f"{pair[0]}={pair[1]}", "--json")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    assert events
    assert all(event["scope"].get(pair[0]) == pair[1] for event in events)
    newest = cli("events", "tail", "--db", seeded.path, "--last", "1", "--json")
    [last] = [json.loads(line) for line in newest.out.splitlines()]
    assert last["data"]["record_ids"] == [seeded.coupon.id]


def test_tail_refuses_a_store_without_a_journal(cli) -> None:
    result = cli("events", "tail", "--db", "memory:")
    assert result.code == 2
    assert "keeps no event journal" in result.err
    assert cli("events", "tail", "--db", "memory:", "--last", "-1").code == 2
