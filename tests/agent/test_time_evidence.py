"""Time as evidence, not as an order (issue 37 item 3).

A time phrase in a question is read against a fixed clock ("lately", "last weekend",
"on Thursday", dates), and the window it names boosts within the relevance ranking
(``recallstore._time_query``): its matches and the plain search's take turns, so a
strong match from outside the window stays near the top, and a question whose words
are only framing ("What did we talk about on Thursday?") is answered with that day's
records on a keyword-only SQLite store, in the recall block and in ``memory_search``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from recallstore import MemoryCapability, MemoryToolbox, MemoryWriteInput
from recallstore._time_query import query_time, time_boosted_search
from recallstore._when import TimeWindow, is_approximate
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemoryHit, MemorySearchQuery
from recallstore.testing.pytest_plugin import FrozenClock

FRIDAY = datetime(2026, 12, 4, 15, 0, tzinfo=UTC)
SUNDAY = datetime(2026, 12, 6, 15, 0, tzinfo=UTC)
USER = {"user": "ana"}

# (clock, question, the phrase found, first day of the window, the day after its last)
READINGS = [
    (FRIDAY, "Anything new with the garden lately?", "lately", "2026-11-04", "2026-12-05"),
    (FRIDAY, "what have I been reading recently", "recently", "2026-11-04", "2026-12-05"),
    (FRIDAY, "What did I do last weekend?", "last weekend", "2026-11-28", "2026-11-30"),
    (SUNDAY, "What did I do last weekend?", "last weekend", "2026-11-28", "2026-11-30"),
    (FRIDAY, "how was this past weekend", "this past weekend", "2026-11-28", "2026-11-30"),
    (FRIDAY, "What did we talk about on Thursday?", "on Thursday", "2026-12-03", "2026-12-04"),
    (SUNDAY, "What did we talk about on Thursday?", "on Thursday", "2026-12-03", "2026-12-04"),
    (FRIDAY, "What did we talk about on Friday?", "on Friday", "2026-12-04", "2026-12-05"),
    (FRIDAY, "the plan from last Thursday", "last Thursday", "2026-12-03", "2026-12-04"),
    (FRIDAY, "since Monday, what changed", "since Monday", "2026-11-30", None),
    (FRIDAY, "what did I say on 2026-11-20", "2026-11-20", "2026-11-20", "2026-11-21"),
    (FRIDAY, "what happened on November 20?", "on November 20", "2026-11-20", "2026-11-21"),
    (FRIDAY, "what happened on November 20th", "on November 20th", "2026-11-20", "2026-11-21"),
    (FRIDAY, "the talk on the 3rd of March, 2025", "on the 3rd of March, 2025", "2025-03-03",
     "2025-03-04"),
    (FRIDAY, "we met March 3, 2025 in Porto", "March 3, 2025", "2025-03-03", "2025-03-04"),
    (FRIDAY, "see you on December 24", "on December 24", "2025-12-24", "2025-12-25"),
    (FRIDAY, "what did I plan in November", "in November", "2026-11-01", "2026-12-01"),
]  # fmt: skip


def _day(moment: datetime | None) -> str | None:
    return None if moment is None else moment.date().isoformat()


@pytest.mark.parametrize(("now", "text", "phrase", "start", "end"), READINGS)
def test_a_time_phrase_in_a_question_reads_right(
    now: datetime, text: str, phrase: str, start: str, end: str | None
) -> None:
    found = query_time(text, now)
    assert found is not None, text
    assert found.phrase == phrase
    assert (_day(found.window.start), _day(found.window.end)) == (start, end)
    assert phrase not in found.rest


@pytest.mark.parametrize(
    "text",
    [
        "Thursday",  # a bare weekday reads as a phrase, but is not looked for in text
        "I may 20 times have said so",  # "may" the verb is not a month
        "the Sunday mass at St. Mary's",
        "how do I descale the kettle",
    ],
)
def test_text_without_a_time_phrase_reads_no_window(text: str) -> None:
    assert query_time(text, FRIDAY) is None


def test_a_bare_weekday_given_as_a_phrase_is_its_latest_day() -> None:
    from recallstore._when import resolve_phrase

    assert resolve_phrase("Thursday", FRIDAY) == TimeWindow(
        datetime(2026, 12, 3, tzinfo=UTC), datetime(2026, 12, 4, tzinfo=UTC)
    )
    assert resolve_phrase("Thursday", SUNDAY).start == datetime(2026, 12, 3, tzinfo=UTC)


TUESDAY_TALK = "We talked about the budget for the garden shed."
TUESDAY_OTHER = "We discussed your sister's wedding in Lisbon."
THURSDAY_FIG = "You asked how to repot the fig tree."
THURSDAY_TRIP = "We planned the climbing trip to Fontainebleau."
QUESTION = "What did we talk about on Thursday?"


def _at(day: int, hour: int) -> datetime:
    return datetime(2026, 12, day, hour, tzinfo=UTC)


@pytest.fixture
async def week(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    """A keyword-only SQLite file: two things said on Tuesday, two on Thursday."""
    async with SqliteMemoryStore(tmp_path / "m.db", clock=FrozenClock(FRIDAY)) as store:
        await store.write(
            [
                MemoryWriteInput(scope=USER, content=TUESDAY_TALK, observed_at=_at(1, 10)),
                MemoryWriteInput(scope=USER, content=TUESDAY_OTHER, observed_at=_at(1, 11)),
                MemoryWriteInput(scope=USER, content=THURSDAY_FIG, observed_at=_at(3, 10)),
                MemoryWriteInput(scope=USER, content=THURSDAY_TRIP, observed_at=_at(3, 18)),
            ]
        )
        yield store


def _contents(result: dict[str, Any]) -> list[str]:
    assert result["ok"] is True, result
    return [memory["content"] for memory in result["memories"]]


async def test_on_thursday_finds_thursdays_records_above_tuesdays(
    week: SqliteMemoryStore,
) -> None:
    capability = MemoryCapability(week, scope_fields=["user"])
    instance = await capability.instantiate(
        USER, conversation_id="c1", first_user_text=QUESTION, clock=FrozenClock(FRIDAY)
    )
    recalled = [record.content for record in instance.recall.hits]
    # The newest of Thursday first; Tuesday's "talked" only after both.
    assert recalled == [THURSDAY_TRIP, THURSDAY_FIG, TUESDAY_TALK]
    searched = await instance.toolbox.call("memory_search", {"query": QUESTION})
    assert _contents(searched) == recalled
    assert searched["window"]["from_query"] == "on Thursday"
    assert searched["window"]["since"] == "2026-12-03T00:00:00+00:00"


async def test_on_thursday_reads_the_conversations_clock(week: SqliteMemoryStore) -> None:
    # Read on the next Wednesday, "on Thursday" is still December 3; read on Thursday
    # itself, it is that day, when nothing was said yet: the plain match is all.
    toolbox = MemoryToolbox(week, USER, clock=FrozenClock(_at(9, 12)))
    assert _contents(await toolbox.call("memory_search", {"query": QUESTION}))[:2] == [
        THURSDAY_TRIP,
        THURSDAY_FIG,
    ]
    on_thursday = MemoryToolbox(week, USER, clock=FrozenClock(_at(10, 12)))
    assert _contents(await on_thursday.call("memory_search", {"query": QUESTION})) == [TUESDAY_TALK]


async def test_the_window_boosts_without_burying_a_strong_match_outside_it(
    tmp_path: Path,
) -> None:
    # Twelve weak matches said last week, one strong match said a month before: the
    # plain search ranks the strong one first, and reading "last week" keeps it third
    # at worst (two window matches, then the plain search's best), not thirteenth.
    strong = "The kettle descaling schedule: descale the kettle every second Sunday."
    async with SqliteMemoryStore(tmp_path / "m.db", clock=FrozenClock(FRIDAY)) as store:
        await store.write(
            [
                MemoryWriteInput(
                    scope=USER, content=strong, observed_at=datetime(2026, 10, 20, tzinfo=UTC)
                )
            ]
            + [
                MemoryWriteInput(
                    scope=USER,
                    content=f"Note {n}: the kettle is on the shelf.",
                    observed_at=datetime(2026, 11, 24, n, tzinfo=UTC),
                )
                for n in range(12)
            ]
        )
        search = _scored_search(store)
        question = "what did I say last week about the kettle descaling schedule"
        plain = await search(question, TimeWindow(None, None), 10)
        assert plain[0].record.content == strong
        hits, found = await time_boosted_search(search, question, 10, FRIDAY)
        assert found is not None
        assert found.phrase == "last week"
        contents = [hit.record.content for hit in hits]
        assert contents.index(strong) == 2
        assert all(content.startswith("Note") for content in contents[:2])
        assert len(contents) == len(set(contents)) == 10
        # Deterministic: the same store, question and clock give the same ranking.
        again, _ = await time_boosted_search(search, question, 10, FRIDAY)
        assert [hit.record.id for hit in again] == [hit.record.id for hit in hits]


NEW_SCHEDULE = "New kettle descaling schedule: descale the kettle on Sundays."
OLD_SCHEDULES = [
    f"The kettle descaling schedule, version {n}: descale the kettle every {nth} Sunday."
    for n, nth in ((1, "second"), (2, "third"), (3, "fourth"))
]
# "A week ago" is read as last week's span, roughly: its weak matches do not lead.
SCHEDULE_QUESTION = "what did I say a week ago about the kettle descaling schedule"


@pytest.fixture
async def kettle(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    """Last week: the new schedule and four shopping lists that merely name a kettle;
    in October, three older schedules."""
    async with SqliteMemoryStore(tmp_path / "m.db", clock=FrozenClock(FRIDAY)) as store:
        await store.write(
            [
                MemoryWriteInput(
                    scope=USER, content=content, observed_at=datetime(2026, 10, day, tzinfo=UTC)
                )
                for day, content in zip((20, 21, 22), OLD_SCHEDULES, strict=True)
            ]
        )
        await store.write(
            [
                MemoryWriteInput(
                    scope=USER,
                    content=NEW_SCHEDULE,
                    observed_at=datetime(2026, 11, 23, 9, tzinfo=UTC),
                )
            ]
            + [
                MemoryWriteInput(
                    scope=USER,
                    content=f"Shopping list {n} for the week: milk, bread, eggs, coffee, "
                    "tea, rice, soap, apples, a kettle.",
                    observed_at=datetime(2026, 11, 24, n, tzinfo=UTC),
                )
                for n in range(4)
            ]
        )
        yield store


def _scored_search(store: SqliteMemoryStore, rescore: Any = None) -> Any:
    """A ``search(text, window, limit)`` for ``time_boosted_search`` on ``store``, in
    ``USER``'s scope; ``rescore`` replaces each hit's score."""

    async def search(text: str, window: TimeWindow, limit: int) -> list[MemoryHit]:
        hits = await store.search(
            MemorySearchQuery(
                query=text,
                scope=USER,
                limit=limit,
                observed_after=window.start,
                observed_before=window.end,
            )
        )
        if rescore is None:
            return hits
        return [hit.model_copy(update={"score": rescore(hit.score)}) for hit in hits]

    return search


async def _boosted(search: Any, question: str = SCHEDULE_QUESTION) -> list[str]:
    hits, found = await time_boosted_search(search, question, 10, FRIDAY)
    assert found is not None
    assert found.window.start == datetime(2026, 11, 23, tzinfo=UTC)
    assert found.window.end == datetime(2026, 11, 30, tzinfo=UTC)
    return [hit.record.content for hit in hits]


async def test_weak_window_matches_do_not_lead_the_plain_search(
    kettle: SqliteMemoryStore,
) -> None:
    # The shopping lists share one word with the question and score under a third of
    # the new schedule inside the window: only the new schedule leads, and the older
    # schedules follow in the plain search's order, ahead of the lists.
    contents = await _boosted(_scored_search(kettle))
    assert contents[:4] == [NEW_SCHEDULE, *reversed(OLD_SCHEDULES)]
    assert all(content.startswith("Shopping list") for content in contents[4:])
    assert len(contents) == 8


async def test_a_calendar_span_lets_every_window_match_lead(
    kettle: SqliteMemoryStore,
) -> None:
    # The same window named as the calendar week ("last week") is what the question
    # asks for: its weak matches take their turns, two before each plain match.
    question = SCHEDULE_QUESTION.replace("a week ago", "last week")
    contents = await _boosted(_scored_search(kettle), question)
    assert contents[0] == NEW_SCHEDULE
    assert contents[1].startswith("Shopping list")
    assert contents[2] == OLD_SCHEDULES[2]


async def test_without_positive_scores_the_windows_best_alone_leads(
    kettle: SqliteMemoryStore,
) -> None:
    # Scores a fusion may give below zero: the window's first match still leads alone.
    contents = await _boosted(_scored_search(kettle, lambda score: score - 10.0))
    assert contents[:4] == [NEW_SCHEDULE, *reversed(OLD_SCHEDULES)]


async def test_without_scores_every_window_match_takes_its_turn(
    kettle: SqliteMemoryStore,
) -> None:
    # A store that gives no scores: nothing tells weak from strong, so two window
    # matches lead each plain one, as for equally strong matches.
    contents = await _boosted(_scored_search(kettle, lambda score: None))
    assert contents[0] == NEW_SCHEDULE
    assert contents[1].startswith("Shopping list")
    assert contents[2] == OLD_SCHEDULES[2]


@pytest.mark.parametrize(
    ("phrase", "approximate"),
    [
        ("two months ago", True),
        ("a week ago", True),
        ("lately", True),
        ("recently", True),
        ("last week", False),
        ("in May 2023", False),
        ("on October 13, 2023", False),
        ("on Thursday", False),
        ("yesterday", False),
    ],
)
def test_rough_phrases_are_told_from_calendar_spans(phrase: str, approximate: bool) -> None:
    assert is_approximate(phrase) is approximate
