"""The time-phrase resolver (recallstore._when), table-driven with fixed clocks.

Four clocks in three zones and UTC: a leap-year month boundary in Berlin (Friday
2024-03-01, the day after February 29), the Monday after the spring DST change in New
York (2024-03-11), New Year's Day in Tokyo (a year, month and week boundary at once,
00:30 local while it is still December 31 in UTC), and the Monday after the autumn
DST change in London (2024-10-28). Expected bounds are written as local wall-clock
times of the clock's zone; the DST cases also pin the windows' lengths in hours.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from recallstore._when import (
    EXAMPLES,
    TimeWindow,
    UnknownTimePhrase,
    find_phrase,
    resolve_phrase,
    resolve_since_until,
)

BERLIN = ("Europe/Berlin", datetime(2024, 3, 1, 10, 0, tzinfo=UTC))  # Fri 11:00 local
NEW_YORK = ("America/New_York", datetime(2024, 3, 11, 15, 0, tzinfo=UTC))  # Mon 11:00 EDT
TOKYO = ("Asia/Tokyo", datetime(2024, 12, 31, 15, 30, tzinfo=UTC))  # Wed 2025-01-01 00:30
LONDON = ("Europe/London", datetime(2024, 10, 28, 9, 0, tzinfo=UTC))  # Mon 09:00 GMT
NOW = "now"  # the bound is the clock itself

# (clock, phrase, local start, local end); a bare date is local midnight.
TABLE: list[tuple[tuple[str, datetime], str, str | None, str | None]] = [
    (BERLIN, "today", "2024-03-01", "2024-03-02"),
    (BERLIN, "yesterday", "2024-02-29", "2024-03-01"),
    (BERLIN, "the day before yesterday", "2024-02-28", "2024-02-29"),
    (BERLIN, "tomorrow", "2024-03-02", "2024-03-03"),
    (BERLIN, "this week", "2024-02-26", "2024-03-04"),
    (BERLIN, "last week", "2024-02-19", "2024-02-26"),
    (BERLIN, "the week before last", "2024-02-12", "2024-02-19"),
    (BERLIN, "this month", "2024-03-01", "2024-04-01"),
    (BERLIN, "last month", "2024-02-01", "2024-03-01"),
    (BERLIN, "this year", "2024-01-01", "2025-01-01"),
    (BERLIN, "last year", "2023-01-01", "2024-01-01"),
    (BERLIN, "two days ago", "2024-02-28", "2024-02-29"),
    (BERLIN, "3 days ago", "2024-02-27", "2024-02-28"),
    (BERLIN, "a week ago", "2024-02-19", "2024-02-26"),
    (BERLIN, "two weeks ago", "2024-02-12", "2024-02-19"),
    (BERLIN, "a month ago", "2024-02-01", "2024-03-01"),
    (BERLIN, "2 months ago", "2024-01-01", "2024-02-01"),
    (BERLIN, "a year ago", "2023-01-01", "2024-01-01"),
    (BERLIN, "a couple of days ago", "2024-02-28", "2024-02-29"),
    (BERLIN, "in March", "2024-03-01", "2024-04-01"),
    (BERLIN, "last March", "2023-03-01", "2023-04-01"),
    (BERLIN, "in February", "2024-02-01", "2024-03-01"),
    (BERLIN, "December", "2023-12-01", "2024-01-01"),
    (BERLIN, "in December 2022", "2022-12-01", "2023-01-01"),
    (BERLIN, "in sept", "2023-09-01", "2023-10-01"),
    (BERLIN, "on Monday", "2024-02-26", "2024-02-27"),
    (BERLIN, "last Monday", "2024-02-26", "2024-02-27"),
    (BERLIN, "Friday", "2024-03-01", "2024-03-02"),
    (BERLIN, "last Friday", "2024-02-23", "2024-02-24"),
    (BERLIN, "this Friday", "2024-03-01", "2024-03-02"),
    (BERLIN, "Sunday", "2024-02-25", "2024-02-26"),
    (BERLIN, "Monday last week", "2024-02-19", "2024-02-20"),
    (BERLIN, "Wednesday this week", "2024-02-28", "2024-02-29"),
    (BERLIN, "last summer", "2023-06-01", "2023-09-01"),
    (BERLIN, "this summer", "2024-06-01", "2024-09-01"),
    (BERLIN, "last winter", "2023-12-01", "2024-03-01"),
    (BERLIN, "winter", "2023-12-01", "2024-03-01"),
    (BERLIN, "in the spring", "2024-03-01", "2024-06-01"),
    (BERLIN, "last spring", "2023-03-01", "2023-06-01"),
    (BERLIN, "autumn 2023", "2023-09-01", "2023-12-01"),
    (BERLIN, "last fall", "2023-09-01", "2023-12-01"),
    (BERLIN, "past 3 days", "2024-02-27", NOW),
    (BERLIN, "the last 7 days", "2024-02-23", NOW),
    (BERLIN, "last 2 weeks", "2024-02-16", NOW),
    (BERLIN, "past 2 months", "2024-01-01", NOW),
    (BERLIN, "recently", "2024-01-31", "2024-03-02"),
    (BERLIN, "earlier this week", "2024-02-26", NOW),
    (BERLIN, "earlier this month", "2024-03-01", NOW),
    (BERLIN, "earlier today", "2024-03-01", NOW),
    (BERLIN, "2024-02-29", "2024-02-29", "2024-03-01"),
    (BERLIN, "2024-02", "2024-02-01", "2024-03-01"),
    (BERLIN, "2023", "2023-01-01", "2024-01-01"),
    (BERLIN, "since Monday", "2024-02-26", None),
    (BERLIN, "since last week", "2024-02-19", None),
    (BERLIN, "before March", None, "2024-03-01"),
    (BERLIN, "until yesterday", None, "2024-03-01"),
    (BERLIN, "March 3rd 2023", "2023-03-03", "2023-03-04"),
    (BERLIN, "Feb 29", "2024-02-29", "2024-03-01"),
    (BERLIN, "the 28th of February", "2024-02-28", "2024-02-29"),
    (BERLIN, "this weekend", "2024-03-02", "2024-03-04"),
    (BERLIN, "last weekend", "2024-02-24", "2024-02-26"),
    (BERLIN, "last night", "2024-02-29T18:00", "2024-03-01T06:00"),
    (BERLIN, "this morning", "2024-03-01", "2024-03-01T12:00"),
    (BERLIN, "tonight", "2024-03-01T18:00", "2024-03-02"),
    (BERLIN, "Last Week.", "2024-02-19", "2024-02-26"),
    (BERLIN, "  in   MARCH ", "2024-03-01", "2024-04-01"),
    (BERLIN, "2024-03-01T09:30", "2024-03-01T09:30", "2024-03-01T09:30:00.000001"),
    (BERLIN, "2024-03-01T08:00Z", "2024-03-01T09:00", "2024-03-01T09:00:00.000001"),
    (NEW_YORK, "yesterday", "2024-03-10", "2024-03-11"),
    (NEW_YORK, "today", "2024-03-11", "2024-03-12"),
    (NEW_YORK, "last week", "2024-03-04", "2024-03-11"),
    (NEW_YORK, "this week", "2024-03-11", "2024-03-18"),
    (NEW_YORK, "Monday", "2024-03-11", "2024-03-12"),
    (NEW_YORK, "last Monday", "2024-03-04", "2024-03-05"),
    (NEW_YORK, "Sunday", "2024-03-10", "2024-03-11"),
    (NEW_YORK, "last weekend", "2024-03-09", "2024-03-11"),
    (NEW_YORK, "two days ago", "2024-03-09", "2024-03-10"),
    (NEW_YORK, "this month", "2024-03-01", "2024-04-01"),
    (NEW_YORK, "last month", "2024-02-01", "2024-03-01"),
    (NEW_YORK, "past 3 days", "2024-03-08", NOW),
    (NEW_YORK, "in November", "2023-11-01", "2023-12-01"),
    (NEW_YORK, "last autumn", "2023-09-01", "2023-12-01"),
    (NEW_YORK, "since yesterday", "2024-03-10", None),
    (TOKYO, "today", "2025-01-01", "2025-01-02"),
    (TOKYO, "yesterday", "2024-12-31", "2025-01-01"),
    (TOKYO, "this week", "2024-12-30", "2025-01-06"),
    (TOKYO, "last week", "2024-12-23", "2024-12-30"),
    (TOKYO, "this month", "2025-01-01", "2025-02-01"),
    (TOKYO, "last month", "2024-12-01", "2025-01-01"),
    (TOKYO, "this year", "2025-01-01", "2026-01-01"),
    (TOKYO, "last year", "2024-01-01", "2025-01-01"),
    (TOKYO, "in December", "2024-12-01", "2025-01-01"),
    (TOKYO, "last winter", "2023-12-01", "2024-03-01"),
    (TOKYO, "winter", "2024-12-01", "2025-03-01"),
    (TOKYO, "this winter", "2024-12-01", "2025-03-01"),
    (TOKYO, "last summer", "2024-06-01", "2024-09-01"),
    (TOKYO, "a month ago", "2024-12-01", "2025-01-01"),
    (TOKYO, "three weeks ago", "2024-12-09", "2024-12-16"),
    (TOKYO, "Feb 29", "2024-02-29", "2024-03-01"),
    (TOKYO, "Tuesday", "2024-12-31", "2025-01-01"),
    (TOKYO, "last Friday", "2024-12-27", "2024-12-28"),
    (TOKYO, "past 2 months", "2024-11-01", NOW),
    (TOKYO, "two years ago", "2023-01-01", "2024-01-01"),
    (TOKYO, "since March", "2024-03-01", None),
    (LONDON, "yesterday", "2024-10-27", "2024-10-28"),
    (LONDON, "last week", "2024-10-21", "2024-10-28"),
    (LONDON, "last weekend", "2024-10-26", "2024-10-28"),
    (LONDON, "this month", "2024-10-01", "2024-11-01"),
    (LONDON, "last summer", "2024-06-01", "2024-09-01"),
]


def _local(text: str | None, zone: ZoneInfo, now: datetime) -> datetime | None:
    if text is None:
        return None
    if text == NOW:
        return now
    return datetime.fromisoformat(text).replace(tzinfo=zone).astimezone(UTC)


def test_the_table_is_large_enough_and_spans_three_zones() -> None:
    assert len(TABLE) >= 80
    assert len({clock[0] for clock, *_ in TABLE}) >= 3


@pytest.mark.parametrize(
    ("clock", "phrase", "start", "end"),
    TABLE,
    ids=[f"{clock[0]}-{phrase.strip()}" for clock, phrase, _, _ in TABLE],
)
def test_a_phrase_resolves_to_its_window(
    clock: tuple[str, datetime], phrase: str, start: str | None, end: str | None
) -> None:
    zone_name, now = clock
    zone = ZoneInfo(zone_name)
    window = resolve_phrase(phrase, now, zone)
    assert window == TimeWindow(_local(start, zone, now), _local(end, zone, now))


@pytest.mark.parametrize(
    ("clock", "phrase", "hours"),
    [
        (NEW_YORK, "yesterday", 23),  # 2024-03-10: clocks went forward at 02:00
        (NEW_YORK, "today", 24),
        (NEW_YORK, "last week", 7 * 24 - 1),
        (LONDON, "yesterday", 25),  # 2024-10-27: clocks went back at 02:00
        (LONDON, "last week", 7 * 24 + 1),
        (LONDON, "last weekend", 49),
        (BERLIN, "last month", 29 * 24),  # February of a leap year
        (TOKYO, "last month", 31 * 24),
    ],
)
def test_days_across_a_dst_change_are_their_true_length(
    clock: tuple[str, datetime], phrase: str, hours: int
) -> None:
    zone_name, now = clock
    window = resolve_phrase(phrase, now, ZoneInfo(zone_name))
    assert window.start is not None
    assert window.end is not None
    assert window.end - window.start == timedelta(hours=hours)


def test_the_same_phrase_names_different_instants_in_different_zones() -> None:
    now = datetime(2024, 12, 31, 15, 30, tzinfo=UTC)
    tokyo = resolve_phrase("today", now, ZoneInfo("Asia/Tokyo"))
    los_angeles = resolve_phrase("today", now, ZoneInfo("America/Los_Angeles"))
    assert tokyo.start == datetime(2024, 12, 31, 15, 0, tzinfo=UTC)  # 2025-01-01 JST
    assert los_angeles.start == datetime(2024, 12, 31, 8, 0, tzinfo=UTC)  # 2024-12-31 PST
    assert resolve_phrase("today", now).start == datetime(2024, 12, 31, tzinfo=UTC)


@pytest.mark.parametrize(
    "phrase", ["the other day", "last blursday", "in Smarch", "29th of February 2023", "soon-ish"]
)
def test_an_unknown_phrase_is_named_with_examples(phrase: str) -> None:
    with pytest.raises(UnknownTimePhrase) as caught:
        resolve_phrase(phrase, BERLIN[1], ZoneInfo(BERLIN[0]))
    assert caught.value.phrase == phrase
    assert repr(phrase) in str(caught.value)
    assert all(example in str(caught.value) for example in EXAMPLES)


def test_a_naive_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        resolve_phrase("today", datetime(2024, 3, 1))


def test_since_and_until_take_the_start_and_the_end_of_their_periods() -> None:
    zone_name, now = BERLIN
    zone = ZoneInfo(zone_name)
    same = resolve_since_until("last week", "last week", now, zone)
    assert same == resolve_phrase("last week", now, zone)
    open_ended = resolve_since_until("since Monday", None, now, zone)
    assert open_ended == TimeWindow(_local("2024-02-26", zone, now), None)
    spanning = resolve_since_until("2024-01-15", "yesterday", now, zone)
    assert spanning == TimeWindow(_local("2024-01-15", zone, now), _local("2024-03-01", zone, now))
    assert resolve_since_until(None, None, now, zone) == TimeWindow(None, None)
    with pytest.raises(ValueError, match="empty"):
        resolve_since_until("today", "last week", now, zone)
    with pytest.raises(UnknownTimePhrase):
        resolve_since_until("the other day", None, now, zone)


@pytest.mark.parametrize(
    ("text", "phrase", "rest"),
    [
        (
            "what did I tell you last week about the trip",
            "last week",
            "what did I tell you about the trip",
        ),
        ("anything from two days ago?", "two days ago", "anything from ?"),
        ("the recipe I mentioned in March", "in March", "the recipe I mentioned"),
        ("plans for last summer", "last summer", "plans for"),
        ("notes from 2024-02-29 on the budget", "2024-02-29", "notes from on the budget"),
        ("what I said yesterday", "yesterday", "what I said"),
    ],
)
def test_a_phrase_is_found_in_a_question(text: str, phrase: str, rest: str) -> None:
    assert find_phrase(text) == (phrase, rest)


@pytest.mark.parametrize(
    "text", ["may I ask about the trip", "the sunday roast recipe", "march of the penguins"]
)
def test_words_that_are_only_sometimes_time_are_not_phrases(text: str) -> None:
    assert find_phrase(text) is None
