"""Time phrases ("last week", "in March", "two days ago") as UTC windows, without a model.

:func:`resolve_phrase` turns one phrase into a :class:`TimeWindow`, a half-open
``[start, end)`` in UTC, read against a given "now" and the user's time zone: calendar
boundaries (midnight, Monday, the first of the month) are the user's, so "yesterday"
in Tokyo is not yesterday in Los Angeles, and a day across a DST change is 23 or 25
hours long. Weeks start on Monday (ISO 8601); seasons are the northern meteorological
ones (spring is March to May; winter runs from December into the next year).

Everything is deterministic: the same phrase, clock and zone give the same window.
A phrase the grammar does not know raises :class:`UnknownTimePhrase`, which names it
and lists examples that work. :func:`find_phrase` finds a phrase inside free text
("what did I tell you last week about the trip").

The calendar has edges, and a window never crosses them: its bounds lie between
:data:`EARLIEST` (the first instant of the year 1000, the first year a memory's time
may have) and :data:`LATEST` (the last instant ``datetime`` can hold, at the end of
9999). A window reaching past an edge is cut at it ("9999-12-31" ends at
:data:`LATEST`); a phrase with no part inside them ("0500-01-01", "last week" read
by a clock standing in the year 1, a day a zone skipped) raises
:class:`TimeOutOfRange`, an :class:`UnknownTimePhrase`, so every caller that treats
an unreadable phrase as text, a tool error or a 400 treats it the same way. Nothing
here raises ``OverflowError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Final

from recallstore._calendar import EARLIEST, LATEST, Calendar, TimeWindow, add_months

__all__ = [
    "EARLIEST",
    "EXAMPLES",
    "LATEST",
    "TimeOutOfRange",
    "TimeWindow",
    "UnknownTimePhrase",
    "find_phrase",
    "is_approximate",
    "last_instant",
    "resolve_phrase",
    "resolve_since_until",
]

EXAMPLES: Final = (
    "yesterday",
    "last week",
    "this month",
    "in March",
    "two days ago",
    "since Monday",
    "last summer",
    "past 3 days",
    "2025-03-14",
)
"""Phrases shown to a model whose phrase was not understood."""


class UnknownTimePhrase(ValueError):
    """A time phrase the resolver does not understand; ``phrase`` is the text given."""

    def __init__(self, phrase: str, problem: str | None = None) -> None:
        self.phrase = phrase
        examples = ", ".join(f'"{example}"' for example in EXAMPLES)
        super().__init__(
            problem
            or f"cannot read {phrase!r} as a time; use an ISO date (YYYY-MM-DD) or a phrase "
            f"such as {examples}"
        )


class TimeOutOfRange(UnknownTimePhrase):
    """A phrase that names no time inside the calendar's edges (:data:`EARLIEST` to
    :data:`LATEST`) when read at the given clock and zone."""

    def __init__(self, phrase: str, now: datetime) -> None:
        super().__init__(
            phrase,
            f"{phrase!r} (read at {now.isoformat()}) names no time between the years "
            f"{EARLIEST.year} and 9999, the times memories can have; use a date inside them, "
            "or no time at all",
        )


_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_SEASONS: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
"""Each season's first month; a season is three months long."""

_NUMBER: Final = r"(\d{1,3}|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_UNIT: Final = r"(day|week|month|year)s?"
_MONTH: Final = (
    r"("
    + "|".join(name for name in _MONTHS)
    + r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
)
_WEEKDAY: Final = r"(" + "|".join(_WEEKDAYS) + r"|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
_SEASON: Final = r"(spring|summer|autumn|fall|winter)"


def _month_number(name: str) -> int:
    return next(index for index, full in enumerate(_MONTHS, start=1) if full.startswith(name[:3]))


def _weekday_number(name: str) -> int:
    return next(index for index, full in enumerate(_WEEKDAYS) if full.startswith(name[:3]))


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text]


def _clean(phrase: str) -> str:
    text = re.sub(r"\s+", " ", phrase.strip().lower().replace(",", " "))
    return text.strip(" .!?")


def last_instant(phrase: str, now: datetime, zone: tzinfo | None = None) -> datetime | None:
    """The last instant of the period ``phrase`` names, for "as of" reads: the end of
    "2026-11-01", the instant itself for "now" or an ISO time; None for a period that
    runs on to now ("since Monday"). Raises as :func:`resolve_phrase` does."""
    window = resolve_phrase(phrase, now, zone)
    return None if window.end is None else window.end - timedelta(microseconds=1)


def resolve_phrase(phrase: str, now: datetime, zone: tzinfo | None = None) -> TimeWindow:
    """The window ``phrase`` names, read at ``now`` (timezone-aware) in ``zone`` (UTC
    when None); an instant ("now", an ISO time) is a window of one microsecond.

    Raises :class:`UnknownTimePhrase` for text it cannot read, and its kind
    :class:`TimeOutOfRange` for a phrase naming no time between :data:`EARLIEST` and
    :data:`LATEST`; a window reaching past either is cut at it.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    text = _clean(phrase)
    bound = re.match(r"(since|after|before|until|till) (.+)", text)
    if bound is not None:
        # "since Monday": from Monday's start on; "before March": up to March's start.
        try:
            window = resolve_phrase(bound.group(2), now, zone)
        except TimeOutOfRange:
            raise TimeOutOfRange(phrase, now) from None
        except UnknownTimePhrase:
            raise UnknownTimePhrase(phrase) from None
        if bound.group(1) in ("since", "after"):
            return TimeWindow(window.start, None)
        if bound.group(1) == "before" and window.start == EARLIEST:
            raise TimeOutOfRange(phrase, now)  # nothing lies before the calendar's start
        return TimeWindow(None, window.start if bound.group(1) == "before" else window.end)
    text = re.sub(r"^(?:(?:on|in|during|at|from|the)\s+)+", "", text)
    try:
        resolved = _resolve(text, Calendar(now, zone or UTC))
    except (OverflowError, ValueError):
        # Date arithmetic left the calendar (a day before the year 1 or after 9999).
        raise TimeOutOfRange(phrase, now) from None
    if resolved is None:
        raise UnknownTimePhrase(phrase)
    return _inside(resolved, phrase, now)


def _inside(window: TimeWindow, phrase: str, now: datetime) -> TimeWindow:
    """``window`` cut at the calendar's edges; :class:`TimeOutOfRange` when nothing of it
    is left (it lies wholly outside, or is empty, as a day a zone skipped is)."""
    start = None if window.start is None else min(max(window.start, EARLIEST), LATEST)
    end = None if window.end is None else min(max(window.end, EARLIEST), LATEST)
    if start is not None and end is not None and start >= end:
        raise TimeOutOfRange(phrase, now)
    if end == EARLIEST or start == LATEST:
        raise TimeOutOfRange(phrase, now)
    return TimeWindow(start, end)


def _resolve(text: str, cal: Calendar) -> TimeWindow | None:
    iso = _iso(text, cal)
    if iso is not None:
        return iso
    # Each is computed only when asked for: near the calendar's edges "tomorrow" may not
    # exist while "March 2025" does.
    simple: dict[str, Callable[[], TimeWindow]] = {
        "now": lambda: cal.instant(cal.now),
        "today": lambda: cal.days(cal.today),
        "earlier today": lambda: TimeWindow(cal.at(cal.today), cal.now),
        "this morning": lambda: TimeWindow(cal.at(cal.today), cal.at(cal.today, 12)),
        "this afternoon": lambda: TimeWindow(cal.at(cal.today, 12), cal.at(cal.today, 18)),
        "this evening": lambda: TimeWindow(cal.at(cal.today, 18), cal.after(cal.today, days=1)),
        "tonight": lambda: TimeWindow(cal.at(cal.today, 18), cal.after(cal.today, days=1)),
        "yesterday": lambda: cal.days(cal.today - timedelta(days=1)),
        "last night": lambda: TimeWindow(
            cal.at(cal.today - timedelta(days=1), 18), cal.at(cal.today, 6)
        ),
        "day before yesterday": lambda: cal.days(cal.today - timedelta(days=2)),
        "tomorrow": lambda: cal.days(cal.today + timedelta(days=1)),
        "this week": lambda: cal.days(cal.week_of(cal.today), 7),
        "earlier this week": lambda: TimeWindow(cal.at(cal.week_of(cal.today)), cal.now),
        "last week": lambda: cal.days(cal.week_of(cal.today) - timedelta(days=7), 7),
        "previous week": lambda: cal.days(cal.week_of(cal.today) - timedelta(days=7), 7),
        "week before last": lambda: cal.days(cal.week_of(cal.today) - timedelta(days=14), 7),
        "past weekend": lambda: _last_weekend(cal),
        "this past weekend": lambda: _last_weekend(cal),
        "this weekend": lambda: cal.days(cal.week_of(cal.today) + timedelta(days=5), 2),
        "last weekend": lambda: _last_weekend(cal),
        "this month": lambda: cal.months(cal.today.replace(day=1)),
        "earlier this month": lambda: TimeWindow(cal.at(cal.today.replace(day=1)), cal.now),
        "last month": lambda: cal.months(add_months(cal.today, -1)),
        "previous month": lambda: cal.months(add_months(cal.today, -1)),
        "this year": lambda: cal.year(cal.today.year),
        "earlier this year": lambda: TimeWindow(cal.at(date(cal.today.year, 1, 1)), cal.now),
        "last year": lambda: cal.year(cal.today.year - 1),
        # People say "lately" of weeks, not of days: the past month and today.
        "recently": lambda: cal.days(cal.today - timedelta(days=30), 31),
        "lately": lambda: cal.days(cal.today - timedelta(days=30), 31),
        "past week": lambda: cal.days(cal.today - timedelta(days=7), 8),
        "past month": lambda: TimeWindow(cal.at(add_months(cal.today, -1).replace(day=1)), cal.now),
    }
    if text in simple:
        return simple[text]()
    if found := re.fullmatch(rf"{_NUMBER} {_UNIT} ago", text):
        n, unit = _count(found.group(1)), found.group(2)
        if unit == "day":
            return cal.days(cal.today - timedelta(days=n))
        if unit == "week":
            return cal.days(cal.week_of(cal.today) - timedelta(days=7 * n), 7)
        if unit == "month":
            return cal.months(add_months(cal.today, -n))
        return cal.year(cal.today.year - n)
    if found := re.fullmatch(rf"(?:past|last|previous) {_NUMBER} {_UNIT}", text):
        n, unit = _count(found.group(1)), found.group(2)
        if unit in ("day", "week"):
            days = n * (7 if unit == "week" else 1)
            return TimeWindow(cal.at(cal.today - timedelta(days=days)), cal.now)
        months = n * (12 if unit == "year" else 1)
        back = add_months(cal.today, -months)
        first = back.replace(day=min(cal.today.day, 28))
        return TimeWindow(cal.at(first), cal.now)
    if found := re.fullmatch(rf"(last|this|past)? ?{_WEEKDAY}", text):
        which, weekday = found.group(1), _weekday_number(found.group(2))
        if which == "this":
            return cal.days(cal.week_of(cal.today) + timedelta(days=weekday))
        days_back = (cal.today.weekday() - weekday) % 7
        if which in ("last", "past") and days_back == 0:
            days_back = 7
        return cal.days(cal.today - timedelta(days=days_back))
    if found := re.fullmatch(rf"{_WEEKDAY} (last|this) week", text):
        weekday, which = _weekday_number(found.group(1)), found.group(2)
        monday = cal.week_of(cal.today) - timedelta(days=7 if which == "last" else 0)
        return cal.days(monday + timedelta(days=weekday))
    if found := re.fullmatch(rf"(last|this)? ?{_MONTH}(?: (\d{{4}}))?", text):
        which, month, year = found.group(1), _month_number(found.group(2)), found.group(3)
        if year is not None:
            return cal.months(date(int(year), month, 1))
        if which == "this":
            return cal.months(date(cal.today.year, month, 1))
        return cal.months(date(cal.latest_month(month, before_this=which == "last"), month, 1))
    if found := re.fullmatch(
        rf"(?:{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH})"
        rf"(?: (\d{{4}}))?",
        text,
    ):
        month = _month_number(found.group(1) or found.group(4))
        day = int(found.group(2) or found.group(3))
        year = int(found.group(5)) if found.group(5) else None
        if year is not None:
            return _day_window(cal, year, month, day)
        # The latest such day not after cal.today (February 29 looks back to a leap year).
        for years_back in range(9):
            found_day = _day_window(cal, cal.today.year - years_back, month, day)
            if found_day is not None and found_day.start is not None and found_day.start <= cal.now:
                return found_day
        return None
    if found := re.fullmatch(rf"(last|this)? ?{_SEASON}(?: (\d{{4}}))?", text):
        which, first_month, year = found.group(1), _SEASONS[found.group(2)], found.group(3)
        if year is not None:
            return cal.months(date(int(year), first_month, 1), 3)
        return cal.season(first_month, which=which or "latest")
    return None


def _last_weekend(cal: Calendar) -> TimeWindow:
    """The Saturday and Sunday before this week's Monday: the latest weekend that is
    over (on a Sunday, the one before the weekend under way)."""
    return cal.days(cal.week_of(cal.today) - timedelta(days=2), 2)


def _day_window(cal: Calendar, year: int, month: int, day: int) -> TimeWindow | None:
    try:
        return cal.days(date(year, month, day))
    except ValueError:
        return None


_ISO_DAY: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_ISO_MONTH: Final = re.compile(r"(\d{4})-(\d{2})")
_ISO_YEAR: Final = re.compile(r"(\d{4})")


def _iso(text: str, cal: Calendar) -> TimeWindow | None:
    try:
        if _ISO_DAY.fullmatch(text):
            return cal.days(date.fromisoformat(text))
        if found := _ISO_MONTH.fullmatch(text):
            return cal.months(date(int(found.group(1)), int(found.group(2)), 1))
        if found := _ISO_YEAR.fullmatch(text):
            year = int(found.group(1))
            return cal.year(year) if year >= 1000 else None
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}[t ][\d:.]+(z|[+-][\d:]+)?", text):
            moment = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=cal.zone)
            return cal.instant(moment.astimezone(UTC))
    except ValueError:
        return None
    return None


def resolve_since_until(
    since: str | None, until: str | None, now: datetime, zone: tzinfo | None = None
) -> TimeWindow:
    """The window from the start of ``since``'s period to the end of ``until``'s.

    ``since="last week"`` starts at last week's Monday and runs to now (no end);
    ``until="yesterday"`` runs to the end of yesterday; both name exactly a period
    when they are the same phrase. A leading "since", "from", "after" (``since``) or
    "until", "till", "before", "up to" (``until``) is read as part of the argument.
    Raises :class:`UnknownTimePhrase` for either phrase it cannot read, and
    ``ValueError`` when the window is empty.
    """
    start = end = None
    if since is not None and since.strip():
        bare = re.sub(r"^\s*(since|from|after)\s+", "", since, flags=re.I)
        start = resolve_phrase(bare, now, zone).start
    if until is not None and until.strip():
        bare = re.sub(r"^\s*(until|till|up to|to)\s+", "", until, flags=re.I)
        window = resolve_phrase(bare, now, zone)
        end = window.end
    if start is not None and end is not None and start >= end:
        raise ValueError(f"the window from {since!r} until {until!r} is empty")
    return TimeWindow(start, end)


_FINDERS: Final = (
    rf"(?:in the |the )?(?:past|last) {_NUMBER} {_UNIT}",
    rf"{_NUMBER} {_UNIT} ago",
    r"(?:the )?day before yesterday",
    r"yesterday|today|earlier today|this morning|last night|tonight|this evening",
    r"(?:earlier )?this (?:week|month|year)|last (?:week|month|year|weekend)|this weekend",
    r"(?:this |the )?past weekend",
    r"(?:the )?week before last|recently|lately",
    rf"(?:last|this) {_WEEKDAY}|{_WEEKDAY} (?:last|this) week|(?:on|since) {_WEEKDAY}",
    rf"(?:last|this) {_SEASON}|in (?:the )?{_SEASON}(?: \d{{4}})?",
    rf"(?:on {_MONTH}|(?!may\b){_MONTH}) \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?",
    rf"(?:on )?(?:the )?\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH}(?:,? \d{{4}})?",
    rf"in {_MONTH}(?: \d{{4}})?|(?:last|this) {_MONTH}",
    r"\d{4}-\d{2}-\d{2}",
)
_FINDER: Final = re.compile(r"\b(?:" + "|".join(f"(?:{f})" for f in _FINDERS) + r")\b", re.I)


def find_phrase(text: str) -> tuple[str, str] | None:
    """The first time phrase in ``text`` and ``text`` without it, or None.

    Only phrases that read as time in any sentence are looked for ("last week", "in
    March", "two days ago"); a bare month or weekday name ("may", "sunday") is not.
    """
    found = _FINDER.search(text)
    if found is None:
        return None
    rest = (text[: found.start()] + " " + text[found.end() :]).strip()
    return found.group(0), re.sub(r"\s+", " ", rest)


_APPROXIMATE: Final = re.compile(r"\b(?:ago|recently|lately)\b", re.I)


def is_approximate(phrase: str) -> bool:
    """Whether ``phrase`` names a time only roughly ("two months ago", "lately"), so its
    window is a reading of it, not the calendar span it names ("in May 2023", "last
    week", "on Thursday")."""
    return _APPROXIMATE.search(phrase) is not None
