"""The time-phrase resolver at the calendar's edges: a window inside them, or no window.

Issue 36 item 2: "9999-12-31", year 1 read east of UTC, a clock standing near either
end of the calendar made ``resolve_phrase`` raise a raw ``OverflowError`` (725 of
20,000 fuzzed phrases did, with the real clock). The rule now: a window is cut at
:data:`EARLIEST` / :data:`LATEST`, and a phrase with nothing left inside them raises
:class:`TimeOutOfRange`, an :class:`UnknownTimePhrase`, which every caller already
turns into text to search, a tool error or a 4xx. The table pins the edges; the
hypothesis test throws grammar-shaped phrases at the real clock and at clocks near the
year 1 and the year 9999.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallstore._time_query import query_time
from recallstore._when import (
    EARLIEST,
    LATEST,
    TimeOutOfRange,
    TimeWindow,
    UnknownTimePhrase,
    resolve_phrase,
    resolve_since_until,
)
from recallstore.records import MemorySearchQuery
from recallstore.store import utc_now
from recallstore.values import FIRST_YEAR

CLOCK = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)
CALENDAR_END = LATEST
PLUS_14 = timezone(timedelta(hours=14))
MINUS_12 = timezone(timedelta(hours=-12))
KIRITIMATI = ZoneInfo("Pacific/Kiritimati")  # +14:00, the easternmost zone
NEW_YORK = ZoneInfo("America/New_York")
APIA = ZoneInfo("Pacific/Apia")  # skipped 2011-12-30 when it crossed the date line
TOKYO = ZoneInfo("Asia/Tokyo")
NONE = "no window"  # TimeOutOfRange
UNKNOWN = "unknown"  # UnknownTimePhrase, not a matter of range


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# (phrase, clock, zone, expected start, expected end): ISO instants, NONE or UNKNOWN.
EDGES: list[tuple[str, datetime, tzinfo | None, str | None, str | None]] = [
    # the end of the calendar: cut at LATEST
    ("9999-12-31", CLOCK, None, "9999-12-31T00:00+00:00", "max"),
    ("9999-12-31", CLOCK, MINUS_12, "9999-12-31T12:00+00:00", "max"),
    ("9999-12-31", CLOCK, PLUS_14, "9999-12-30T10:00+00:00", "9999-12-31T10:00+00:00"),
    ("9999", CLOCK, None, "9999-01-01T00:00+00:00", "max"),
    ("in December 9999", CLOCK, None, "9999-12-01T00:00+00:00", "max"),
    ("December 31 9999", CLOCK, MINUS_12, "9999-12-31T12:00+00:00", "max"),
    ("winter 9999", CLOCK, None, "9999-12-01T00:00+00:00", "max"),
    ("9999-12", CLOCK, MINUS_12, "9999-12-01T12:00+00:00", "max"),
    ("until 9999-12-31", CLOCK, MINUS_12, None, "max"),
    ("since 9999-12-31", CLOCK, None, "9999-12-31T00:00+00:00", None),
    ("9999-12-31T23:59:59.999999+00:00", CLOCK, None, NONE, NONE),  # [max, max) is empty
    ("9999-12-31T23:00:00-05:00", CLOCK, None, NONE, NONE),  # the year 10000 in UTC
    ("9999-12-31T18:00:00-05:00", CLOCK, None, "9999-12-31T18:00-05:00", "9999-12-31T18:00-05:00"),
    # the start of the calendar: memories have no time before the year 1000
    ("0001-01-01", CLOCK, None, NONE, NONE),
    ("0001-01-01", CLOCK, PLUS_14, NONE, NONE),
    ("0001-01-01", CLOCK, KIRITIMATI, NONE, NONE),
    ("0001-01-01", CLOCK, MINUS_12, NONE, NONE),
    ("0001-01-01T00:00:00+01:00", CLOCK, None, NONE, NONE),
    ("0999-12-31", CLOCK, None, NONE, NONE),
    ("before 1000-01-01", CLOCK, None, NONE, NONE),
    ("since 0500-06-01", CLOCK, None, NONE, NONE),
    ("1000-01-01", CLOCK, PLUS_14, "1000-01-01T00:00+00:00", "1000-01-01T10:00+00:00"),
    ("1000-01-01", CLOCK, MINUS_12, "1000-01-01T12:00+00:00", "1000-01-02T12:00+00:00"),
    ("999 years ago", CLOCK, None, "1027-01-01T00:00+00:00", "1028-01-01T00:00+00:00"),
    # a clock in the year 1: nothing relative is inside; absolute dates still are
    ("last week", YEAR_ONE, None, NONE, NONE),
    ("today", YEAR_ONE, PLUS_14, NONE, NONE),
    ("now", YEAR_ONE, None, NONE, NONE),
    ("in March 2025", YEAR_ONE, KIRITIMATI, "2025-02-28T10:00+00:00", "2025-03-31T10:00+00:00"),
    ("today", YEAR_ONE, KIRITIMATI, NONE, NONE),  # its local time then is before the year 1
    ("2025-03-14", YEAR_ONE, MINUS_12, "2025-03-14T12:00+00:00", "2025-03-15T12:00+00:00"),
    # a clock at the last microsecond of 9999
    ("today", CALENDAR_END, None, "9999-12-31T00:00+00:00", "max"),
    ("this evening", CALENDAR_END, None, "9999-12-31T18:00+00:00", "max"),
    ("yesterday", CALENDAR_END, None, "9999-12-30T00:00+00:00", "9999-12-31T00:00+00:00"),
    ("this year", CALENDAR_END, MINUS_12, "9999-01-01T12:00+00:00", "max"),
    ("tomorrow", CALENDAR_END, None, NONE, NONE),
    ("now", CALENDAR_END, None, NONE, NONE),
    ("yesterday", CALENDAR_END, TOKYO, NONE, NONE),  # Tokyo's today is in the year 10000
    ("2025-03-14", CALENDAR_END, TOKYO, "2025-03-13T15:00+00:00", "2025-03-14T15:00+00:00"),
    # leap days
    ("2024-02-29", CLOCK, None, "2024-02-29T00:00+00:00", "2024-03-01T00:00+00:00"),
    ("February 29", CLOCK, None, "2024-02-29T00:00+00:00", "2024-03-01T00:00+00:00"),
    ("2023-02-29", CLOCK, None, UNKNOWN, UNKNOWN),
    ("February 29 2023", CLOCK, None, UNKNOWN, UNKNOWN),
    ("February 29 9996", CLOCK, None, "9996-02-29T00:00+00:00", "9996-03-01T00:00+00:00"),
    # DST gaps and overlaps, and a day a zone skipped
    ("2024-03-10", CLOCK, NEW_YORK, "2024-03-10T00:00-05:00", "2024-03-11T00:00-04:00"),
    ("2024-11-03", CLOCK, NEW_YORK, "2024-11-03T00:00-04:00", "2024-11-04T00:00-05:00"),
    ("2024-03-10T02:30", CLOCK, NEW_YORK, "2024-03-10T02:30-05:00", "2024-03-10T02:30-05:00"),
    ("2024-11-03T01:30", CLOCK, NEW_YORK, "2024-11-03T01:30-04:00", "2024-11-03T01:30-04:00"),
    ("2011-12-30", CLOCK, APIA, NONE, NONE),
    ("2011-12-31", CLOCK, APIA, "2011-12-31T00:00+14:00", "2012-01-01T00:00+14:00"),
    # huge numbers are not phrases
    ("10**30 days ago", CLOCK, None, UNKNOWN, UNKNOWN),
    ("1000000000000000000000000000000 days ago", CLOCK, None, UNKNOWN, UNKNOWN),
    ("in 99999 years", CLOCK, None, UNKNOWN, UNKNOWN),
    ("99999-01-01", CLOCK, None, UNKNOWN, UNKNOWN),
    ("0000-01-01", CLOCK, None, UNKNOWN, UNKNOWN),
    ("March 0000", CLOCK, None, NONE, NONE),
]


@pytest.mark.parametrize(("phrase", "clock", "zone", "start", "end"), EDGES)
def test_an_edge_phrase_is_a_window_inside_the_calendar_or_no_window(
    phrase: str, clock: datetime, zone: tzinfo | None, start: str | None, end: str | None
) -> None:
    if start in (NONE, UNKNOWN):
        kind = TimeOutOfRange if start == NONE else UnknownTimePhrase
        with pytest.raises(UnknownTimePhrase) as raised:
            resolve_phrase(phrase, clock, zone)
        assert type(raised.value) is kind
        assert repr(phrase) in str(raised.value)
        return
    window = resolve_phrase(phrase, clock, zone)
    instant = phrase.count(":") > 0 and start == end
    expected_start = None if start is None else _utc(start)
    expected_end = None if end is None else LATEST if end == "max" else _utc(end)
    if instant:
        assert expected_end is not None
        expected_end += timedelta(microseconds=1)
    assert window == TimeWindow(expected_start, expected_end)
    _check_window(window, zone)


def test_the_earliest_bound_is_the_first_year_stores_keep() -> None:
    assert datetime(FIRST_YEAR, 1, 1, tzinfo=UTC) == EARLIEST  # one fact: values.FIRST_YEAR


def test_an_out_of_range_phrase_in_a_query_is_text_to_search() -> None:
    assert query_time("what happened on 0001-01-01 at the fair", CLOCK) is None
    found = query_time("plans for 9999-12-31 party", CLOCK, MINUS_12)
    assert found is not None
    assert found.window == TimeWindow(_utc("9999-12-31T12:00+00:00"), LATEST)
    assert found.rest == "plans for party"


def test_since_and_until_at_the_edges() -> None:
    both = resolve_since_until("9999-12-31", "9999-12-31", CLOCK, PLUS_14)
    assert both == TimeWindow(_utc("9999-12-30T10:00+00:00"), _utc("9999-12-31T10:00+00:00"))
    with pytest.raises(TimeOutOfRange):
        resolve_since_until("0001-01-01", None, CLOCK, PLUS_14)
    with pytest.raises(TimeOutOfRange):
        resolve_since_until(None, "last week", YEAR_ONE)


def _check_window(window: TimeWindow, zone: tzinfo | None) -> None:
    """What every caller does with a window works: bounds inside the calendar, not
    empty, shown in the user's zone, and a valid observed window of a search."""
    for bound in (window.start, window.end):
        assert bound is None or EARLIEST <= bound <= LATEST
    if window.start is not None and window.end is not None:
        assert window.start < window.end
    window.local(zone)
    MemorySearchQuery(observed_after=window.start, observed_before=window.end)


# --- fuzzing, with the real clock and clocks near both ends --------------------------

_WORD_NUMBERS = ["a", "an", "one", "two", "twelve", "a couple of", "a few", "several"]
_NUMBERS = st.one_of(
    st.sampled_from(_WORD_NUMBERS),
    st.integers(0, 999).map(str),
    st.integers(1_000, 10**40).map(str),
    st.just("10**30"),
)
_UNITS = st.sampled_from(["day", "days", "week", "weeks", "month", "months", "year", "years"])
_YEARS = st.one_of(
    st.integers(0, 30).map(lambda y: f"{y:04d}"),
    st.integers(990, 1010).map(lambda y: f"{y:04d}"),
    st.integers(9990, 9999).map(str),
    st.integers(0, 99_999).map(lambda y: f"{y:04d}"),
)
_TWO = st.integers(0, 32).map(lambda n: f"{n:02d}")
_OFFSETS = st.tuples(st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)).map(
    lambda o: f"{o[0]}{o[1]:02d}:{o[2]:02d}"
)
_MONTHS = st.sampled_from(["january", "feb", "march", "may", "sept", "december"])
_WEEKDAYS = st.sampled_from(["monday", "tue", "sunday"])
_SEASONS = st.sampled_from(["spring", "summer", "fall", "winter"])
_SIMPLE = st.sampled_from(
    [
        "now",
        "today",
        "tonight",
        "this evening",
        "yesterday",
        "tomorrow",
        "last night",
        "this week",
        "last week",
        "week before last",
        "this weekend",
        "last weekend",
        "this month",
        "last month",
        "past month",
        "this year",
        "last year",
        "earlier this year",
        "recently",
    ]
)
_PHRASES = st.one_of(
    _SIMPLE,
    st.tuples(_NUMBERS, _UNITS).map(lambda p: f"{p[0]} {p[1]} ago"),
    st.tuples(st.sampled_from(["past", "last", "in"]), _NUMBERS, _UNITS).map(" ".join),
    st.tuples(_YEARS, _TWO, _TWO).map("-".join),
    st.tuples(_YEARS, _TWO).map("-".join),
    _YEARS,
    st.tuples(_YEARS, _TWO, _TWO, _TWO, _TWO, _OFFSETS | st.just("") | st.just("Z")).map(
        lambda p: f"{p[0]}-{p[1]}-{p[2]}T{p[3]}:{p[4]}:00{p[5]}"
    ),
    st.tuples(st.sampled_from(["", "last ", "this "]), _MONTHS).map("".join),
    st.tuples(_MONTHS, _YEARS).map(" ".join),
    st.tuples(_MONTHS, st.integers(0, 32).map(str), _YEARS | st.just("")).map(" ".join),
    st.tuples(st.sampled_from(["", "last ", "this "]), _SEASONS, _YEARS | st.just("")).map(
        lambda p: f"{p[0]}{p[1]} {p[2]}"
    ),
    st.tuples(st.sampled_from(["last ", "this ", ""]), _WEEKDAYS).map("".join),
)
PHRASES = st.tuples(
    st.sampled_from(["", "since ", "before ", "until ", "after ", "in ", "on the "]), _PHRASES
).map("".join)
ZONES = st.sampled_from(
    [None, UTC, PLUS_14, MINUS_12, KIRITIMATI, ZoneInfo("Pacific/Pago_Pago"), NEW_YORK, APIA]
)
NEAR_YEAR_ONE = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(3, 1, 1), timezones=st.just(UTC)
)
NEAR_YEAR_9999 = st.datetimes(
    min_value=datetime(9997, 1, 1), max_value=datetime.max, timezones=st.just(UTC)
)
NEAR_YEAR_1000 = st.datetimes(
    min_value=datetime(999, 1, 1), max_value=datetime(1002, 1, 1), timezones=st.just(UTC)
)
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _holds(phrase: str, clock: datetime, zone: tzinfo | None) -> None:
    """No phrase, clock or zone gets anything but a usable window or the phrase's error."""
    try:
        window: TimeWindow | None = resolve_phrase(phrase, clock, zone)
    except UnknownTimePhrase as exc:
        window, unread = None, exc.phrase
    if window is None:
        assert unread == phrase
    else:
        _check_window(window, zone)
    for since, until in ((phrase, None), (None, phrase), (phrase, phrase)):
        try:
            window = resolve_since_until(since, until, clock, zone)
        except ValueError:  # an UnknownTimePhrase, or an empty window, both named
            pass
        else:
            _check_window(window, zone)
    found = query_time(f"what did I say {phrase} about the kettle", clock, zone)
    if found is not None:
        _check_window(found.window, zone)


@FUZZ
@given(phrase=PHRASES, zone=ZONES)
def test_fuzzed_phrases_with_the_real_clock(phrase: str, zone: tzinfo | None) -> None:
    _holds(phrase, utc_now(), zone)


@FUZZ
@given(phrase=PHRASES, zone=ZONES, clock=st.one_of(NEAR_YEAR_ONE, NEAR_YEAR_1000, NEAR_YEAR_9999))
def test_fuzzed_phrases_with_clocks_near_the_calendars_ends(
    phrase: str, zone: tzinfo | None, clock: datetime
) -> None:
    _holds(phrase, clock, zone)
