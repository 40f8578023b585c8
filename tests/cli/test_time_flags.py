"""``list`` and ``search`` with ``--as-of``, ``--since``, ``--until`` and ``--time-zone``
(issue 41), the real command on a real SQLite file: what was valid then, what was said
when, read in a zone; every bad value one line, exit 2, nothing changed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.cli.conftest import Result, read_all

from recallstore import MemoryRecord, MemoryWriteInput
from recallstore.backends.sqlite import SqliteMemoryStore

ANA = {"tenant": "acme", "user": "ana"}
BO = {"tenant": "acme", "user": "bo"}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class _Clock:
    """The seeding store's clock, moved by hand: records saved on known days."""

    def __init__(self) -> None:
        self.now = _at("2024-11-01T10:00:00")

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class History:
    """A file whose records were saved, superseded and invalidated on known days."""

    path: Path
    berlin: MemoryRecord  # saved 11-01 10:00, superseded by lisbon 11-10 10:00
    table: MemoryRecord  # saved 11-05 12:00 UTC (11-06 02:00 at UTC+14)
    lisbon: MemoryRecord  # saved 11-10 10:00
    tea: MemoryRecord  # saved 11-20 10:00, invalidated 11-25 10:00
    early: MemoryRecord  # bo's: said 11-01 16:00 UTC (11-02 01:00 in Tokyo), saved 11-20
    late: MemoryRecord  # bo's: said 11-02 16:00 UTC (11-03 01:00 in Tokyo), saved 11-20


async def _seed(path: Path) -> History:
    clock = _Clock()
    async with SqliteMemoryStore(path, clock=clock) as store:
        [berlin] = await store.write([MemoryWriteInput(scope=ANA, content="Ana lives in Berlin")])
        clock.now = _at("2024-11-05T12:00:00")
        [table] = await store.write(
            [MemoryWriteInput(scope=ANA, kind="episode", content="Ana booked a table")]
        )
        clock.now = _at("2024-11-10T10:00:00")
        [lisbon] = await store.write(
            [MemoryWriteInput(scope=ANA, content="Ana lives in Lisbon", supersedes=berlin.id)]
        )
        clock.now = _at("2024-11-20T10:00:00")
        [tea] = await store.write([MemoryWriteInput(scope=ANA, content="Ana drinks tea")])
        early, late = await store.write(
            [
                MemoryWriteInput(
                    scope=BO, content="Bo said he flies home", observed_at=_at("2024-11-01T16:00")
                ),
                MemoryWriteInput(
                    scope=BO, content="Bo said he landed", observed_at=_at("2024-11-02T16:00")
                ),
            ]
        )
        clock.now = _at("2024-11-25T10:00:00")
        await store.invalidate(tea.id, "switched to coffee")
        found = [await store.get(r.id) for r in (berlin, table, lisbon, tea, early, late)]
    records = [r for r in found if r is not None]
    assert len(records) == 6
    return History(path, *records)


@pytest.fixture
def history(tmp_path: Path) -> History:
    return asyncio.run(_seed(tmp_path / "memory.db"))


def _ids(result: Result) -> list[str]:
    assert result.code == 0, result.err
    return [row.get("id") or row["record"]["id"] for row in json.loads(result.out)]


def _rows(result: Result) -> tuple[str, dict[str, str]]:
    """The line above the table and the table's rows by id."""
    assert result.code == 0, result.err
    first, header, *lines = result.out.splitlines()
    assert header.split()[0] == "ID"
    return first, {line.split()[0]: line for line in lines}


def test_as_of_lists_what_was_valid_at_the_end_of_that_day(cli, history: History) -> None:
    db = ["--db", history.path]
    assert _ids(cli("list", *db, "--as-of", "2024-10-31", "--json")) == []
    assert _ids(cli("list", *db, "--as-of", "2024-11-05", "--json")) == [
        history.table.id,
        history.berlin.id,
    ]
    # By the 12th Lisbon had superseded Berlin; on the 22nd the tea was still true.
    assert _ids(cli("list", *db, "--as-of", "2024-11-12", "--scope", "user=ana", "--json")) == [
        history.lisbon.id,
        history.table.id,
    ]
    assert history.tea.id in _ids(cli("list", *db, "--as-of", "2024-11-22", "--json"))
    assert history.tea.id not in _ids(cli("list", *db, "--json"))
    # An exact time is that instant: a microsecond before the save, nothing yet.
    assert _ids(cli("list", *db, "--as-of", "2024-11-01T09:59:59", "--json")) == []
    assert _ids(cli("list", *db, "--as-of", "2024-11-01T10:00:00Z", "--json")) == [
        history.berlin.id
    ]


def test_as_of_shows_the_status_then_and_now(cli, history: History) -> None:
    first, rows = _rows(cli("list", "--db", history.path, "--as-of", "2024-11-05"))
    assert first == "as of 2024-11-05 23:59:59.999999+00:00 (time zone UTC)"
    header = cli("list", "--db", history.path, "--as-of", "2024-11-05").out.splitlines()[1]
    assert header.split() == [
        "ID", "KIND", "STATUS", "NOW", "SAID", "SAVED", "SCOPE", "CONTENT"
    ]  # fmt: skip
    assert rows[history.berlin.id].split()[2:4] == ["valid", "superseded"]
    assert rows[history.table.id].split()[2:4] == ["valid", "valid"]
    _, later = _rows(cli("list", "--db", history.path, "--as-of", "2024-11-22", "--all"))
    assert later[history.berlin.id].split()[2:4] == ["superseded", "superseded"]
    assert later[history.tea.id].split()[2:4] == ["valid", "invalidated"]


def test_as_of_searches_the_store_as_it_stood(cli, history: History) -> None:
    db = ["--db", history.path]
    assert _ids(cli("search", "Berlin", *db, "--as-of", "2024-11-05", "--json")) == [
        history.berlin.id
    ]
    assert _ids(cli("search", "Berlin", *db, "--as-of", "2024-11-12", "--json")) == []
    assert _ids(cli("search", "Berlin", *db, "--json")) == []
    text = cli("search", "Berlin", *db, "--as-of", "2024-11-05")
    assert text.out.splitlines()[0] == "as of 2024-11-05 23:59:59.999999+00:00 (time zone UTC)"
    assert text.out.splitlines()[1].split()[:5] == ["ID", "SCORE", "KIND", "STATUS", "NOW"]


def test_the_time_zone_sets_where_a_day_ends(cli, history: History) -> None:
    # The table was booked at 12:00 UTC on the 5th: on the 6th at UTC+14.
    kiritimati = ["--time-zone", "Pacific/Kiritimati"]
    db = ["--db", history.path, "--scope", "user=ana", "--json"]
    assert history.table.id in _ids(cli("list", *db, "--as-of", "2024-11-05"))
    assert history.table.id not in _ids(cli("list", *db, "--as-of", "2024-11-05", *kiritimati))
    assert history.table.id in _ids(cli("list", *db, "--as-of", "2024-11-06", *kiritimati))


def test_since_and_until_filter_by_the_day_a_thing_was_said(cli, history: History) -> None:
    db = ["--db", history.path, "--json"]
    day = ["--since", "2024-11-02", "--until", "2024-11-02"]
    # Both were saved on the 20th; said on the 1st and the 2nd (UTC).
    assert _ids(cli("list", *db, *day)) == [history.late.id]
    assert _ids(cli("list", *db, "--until", "2024-11-01", "--scope", "user=bo")) == [
        history.early.id
    ]
    # In Tokyo the first was said on the 2nd, the second on the 3rd.
    assert _ids(cli("list", *db, *day, "--time-zone", "Asia/Tokyo")) == [history.early.id]
    # A record saved without a said time is said when saved: the Lisbon fact on the 10th.
    assert _ids(cli("list", *db, "--since", "2024-11-10", "--until", "2024-11-10")) == [
        history.lisbon.id
    ]
    assert _ids(
        cli("search", "Bo said", *db, "--since", "2024-11-02", "--until", "2024-11-02")
    ) == [history.late.id]
    # With --as-of too: the 1st to the 10th as it stood on the 6th.
    both = ["--since", "2024-11-01", "--until", "2024-11-10", "--as-of", "2024-11-06"]
    assert _ids(cli("list", *db, *both)) == [history.table.id, history.berlin.id]


def test_the_table_shows_the_day_said_and_the_save_day_in_the_zone(cli, history: History) -> None:
    result = cli(
        "list", "--db", history.path, "--scope", "user=bo", "--time-zone", "Asia/Tokyo",
        "--since", "2024-11-02",
    )  # fmt: skip
    first, rows = _rows(result)
    assert first == "said from 2024-11-02 00:00:00+09:00 on (time zone Asia/Tokyo)"
    assert rows[history.early.id].split()[2:6] == ["valid", "2024-11-02", "01:00:00", "2024-11-20"]
    assert rows[history.late.id].split()[2:6] == ["valid", "2024-11-03", "01:00:00", "2024-11-20"]
    # Said and saved the same day: the SAVED column is blank.
    plain = cli("list", "--db", history.path, "--scope", "user=ana")
    header, *lines = plain.out.splitlines()
    assert header.split() == ["ID", "KIND", "STATUS", "SAID", "SAVED", "SCOPE", "CONTENT"]
    lisbon = next(line for line in lines if line.startswith(history.lisbon.id))
    assert lisbon.split()[2:6] == ["valid", "2024-11-10", "10:00:00", "tenant=acme,"]
    # The zone alone filters nothing, and says which zone the times are in.
    zoned = cli("list", "--db", history.path, "--scope", "user=bo", "--time-zone", "Asia/Tokyo")
    assert zoned.out.splitlines()[0] == "times in time zone Asia/Tokyo"
    assert len(zoned.out.splitlines()) == 4


def _week_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _seed_weeks(path: Path, monday: date) -> dict[str, str]:
    """Records said on Wednesday of last week, of the week before, and now."""

    def noon(day: date) -> datetime:
        return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)

    async def write() -> dict[str, str]:
        async with SqliteMemoryStore(path) as store:
            last, before, today = await store.write(
                [
                    MemoryWriteInput(
                        scope=ANA, content="last week", observed_at=noon(monday - timedelta(5))
                    ),
                    MemoryWriteInput(
                        scope=ANA, content="week before", observed_at=noon(monday - timedelta(12))
                    ),
                    MemoryWriteInput(scope=ANA, content="said now"),
                ]
            )
        return {"last": last.id, "before": before.id, "now": today.id}

    return asyncio.run(write())


def _this_week(run: Callable[[dict[str, str]], Any], tmp_path: Path) -> Any:
    """``run(ids)`` on a file seeded for this week, again on a fresh file when Monday
    00:00 UTC passed meanwhile (the command reads "last week" by the wall clock)."""
    for attempt in range(2):
        monday = _week_of(datetime.now(UTC).date())
        ids = _seed_weeks(tmp_path / f"weeks-{attempt}.db", monday)
        found = run(ids | {"db": str(tmp_path / f"weeks-{attempt}.db")})
        if _week_of(datetime.now(UTC).date()) == monday:
            return found
    raise AssertionError("the week changed twice in one test")


def test_since_last_week_reads_the_phrase_as_the_tools_do(cli, tmp_path: Path) -> None:
    def run(ids: dict[str, str]) -> None:
        db = ["--db", ids["db"], "--json"]
        since = _ids(cli("list", *db, "--since", "last week"))
        assert since == [ids["now"], ids["last"]]
        exactly = _ids(cli("list", *db, "--since", "last week", "--until", "last week"))
        assert exactly == [ids["last"]]
        assert _ids(cli("list", *db, "--until", "last week")) == [ids["before"], ids["last"]]
        # The words the tools take before a phrase are read too.
        assert _ids(cli("search", "week", *db, "--since", "since last week")) == [ids["last"]]

    _this_week(run, tmp_path)


BAD_VALUES: list[tuple[list[str], str]] = [
    (["list", "--since", "blorp"], "--since: cannot read 'blorp' as a time; use an ISO date"),
    (["search", "x", "--until", "the day after never"], "--until: cannot read 'the day after"),
    (["list", "--as-of", "someday"], "--as-of: cannot read 'someday' as a time"),
    (["list", "--until", "0500-01-01"], "--until: '0500-01-01' (read at "),
    (["search", "x", "--since", "0999-12-31"], "--since: '0999-12-31' (read at "),
    (["list", "--as-of", "0999-12-31"], "--as-of: '0999-12-31' (read at "),
    (["list", "--as-of", "since Monday"], "--as-of 'since Monday' names no end"),
    (["list", "--since", "before March"], "--since 'before March' names no start"),
    (["search", "x", "--until", "after Monday"], "--until 'after Monday' names no end"),
    (["list", "--since", " "], "--since needs a time (e.g. 2026-11-01 or 'last week'), got ' '"),
    (["list", "--until", "x" * 65], "--until: 'xxxxxxxxxxxxxxxxxxxx'... is 65 characters"),
    (
        ["list", "--since", "2024-12-01", "--until", "2024-11-01"],
        "--since '2024-12-01' is not before --until '2024-11-01': no time is said between them",
    ),
    (
        ["list", "--time-zone", "Mars/Olympus"],
        "argument --time-zone: 'Mars/Olympus' is not an IANA time zone name",
    ),
    (["search", "x", "--time-zone", ""], "argument --time-zone: '' is not an IANA time zone"),
    (["list", "--time-zone", "../../etc/passwd"], "'../../etc/passwd' is not an IANA time zone"),
]


@pytest.mark.parametrize(("command", "message"), BAD_VALUES)
def test_a_bad_time_is_one_line_naming_the_flag_and_changes_nothing(
    cli, history: History, command: list[str], message: str
) -> None:
    before = read_all(history.path)
    files = sorted(p.name for p in history.path.parent.iterdir())
    data = history.path.read_bytes()
    result = cli(*command, "--db", history.path)
    assert result.code == 2
    assert result.out == ""
    [line] = result.err.splitlines()
    assert line.startswith(
        ("recallstore: error: ", "recallstore list: error: ", "recallstore search")
    )
    assert message in line
    assert history.path.read_bytes() == data
    assert sorted(p.name for p in history.path.parent.iterdir()) == files
    assert read_all(history.path) == before


def test_a_bad_time_exits_2_in_a_real_process(process, history: History) -> None:
    result = process("list", "--db", history.path, "--since", "last fortnight")
    assert result.code == 2
    assert result.out == ""
    assert result.err.splitlines() == [
        "recallstore: error: --since: cannot read 'last fortnight' as a time; use an ISO date "
        '(YYYY-MM-DD) or a phrase such as "yesterday", "last week", "this month", "in March", '
        '"two days ago", "since Monday", "last summer", "past 3 days", "2025-03-14"'
    ]
