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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Final

__all__ = [
    "EXAMPLES",
    "TimeWindow",
    "UnknownTimePhrase",
    "find_phrase",
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

    def __init__(self, phrase: str) -> None:
        self.phrase = phrase
        examples = ", ".join(f'"{example}"' for example in EXAMPLES)
        super().__init__(
            f"cannot read {phrase!r} as a time; use an ISO date (YYYY-MM-DD) or a phrase "
            f"such as {examples}"
        )


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open window ``[start, end)`` in UTC; None is unbounded on that side."""

    start: datetime | None
    end: datetime | None

    def local(self, zone: tzinfo | None) -> tuple[str | None, str | None]:
        """The two bounds as ISO 8601 in ``zone`` (UTC when None), for showing."""
        shown = zone or UTC
        return (
            None if self.start is None else self.start.astimezone(shown).isoformat(),
            None if self.end is None else self.end.astimezone(shown).isoformat(),
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


def _add_months(day: date, months: int) -> date:
    """The first of the month ``months`` after ``day``'s month."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


class _Calendar:
    """Calendar arithmetic in the user's zone, answering in UTC."""

    def __init__(self, now: datetime, zone: tzinfo) -> None:
        self.now = now.astimezone(UTC)
        self.zone = zone
        self.today = self.now.astimezone(zone).date()

    def at(self, day: date, hour: int = 0) -> datetime:
        """Local ``hour`` o'clock of ``day`` as UTC (zoneinfo picks the offset in force)."""
        return datetime.combine(day, time(hour), tzinfo=self.zone).astimezone(UTC)

    def days(self, first: date, count: int = 1) -> TimeWindow:
        return TimeWindow(self.at(first), self.at(first + timedelta(days=count)))

    def week_of(self, day: date) -> date:
        return day - timedelta(days=day.weekday())

    def months(self, first: date, count: int = 1) -> TimeWindow:
        return TimeWindow(self.at(first), self.at(_add_months(first, count)))

    def year(self, year: int) -> TimeWindow:
        return TimeWindow(self.at(date(year, 1, 1)), self.at(date(year + 1, 1, 1)))

    def latest_month(self, month: int, *, before_this: bool = False) -> int:
        """The year of the latest ``month`` not in the future (strictly before the
        current month when ``before_this``)."""
        year = self.today.year
        if month > self.today.month or (before_this and month == self.today.month):
            year -= 1
        return year

    def season(self, first_month: int, *, which: str) -> TimeWindow:
        """The season starting in ``first_month``: the latest that has begun
        (``which="latest"``), the latest that has ended ("last"), or the current
        year's ("this")."""
        start = date(self.today.year, first_month, 1)
        if which == "this":
            if first_month == 12 and self.today.month <= 2:
                start = date(self.today.year - 1, 12, 1)
            return self.months(start, 3)
        while start > self.today:
            start = date(start.year - 1, first_month, 1)
        if which == "last" and _add_months(start, 3) > self.today:
            start = date(start.year - 1, first_month, 1)
        return self.months(start, 3)


def _clean(phrase: str) -> str:
    text = re.sub(r"\s+", " ", phrase.strip().lower().replace(",", " "))
    return text.strip(" .!?")


def resolve_phrase(phrase: str, now: datetime, zone: tzinfo | None = None) -> TimeWindow:
    """The window ``phrase`` names, read at ``now`` (timezone-aware) in ``zone`` (UTC
    when None); an instant ("now", an ISO time) is a window of one microsecond.

    Raises :class:`UnknownTimePhrase` for text it cannot read.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    text = _clean(phrase)
    bound = re.match(r"(since|after|before|until|till) (.+)", text)
    if bound is not None:
        # "since Monday": from Monday's start on; "before March": up to March's start.
        window = resolve_phrase(bound.group(2), now, zone)
        if bound.group(1) in ("since", "after"):
            return TimeWindow(window.start, None)
        return TimeWindow(None, window.start if bound.group(1) == "before" else window.end)
    text = re.sub(r"^(?:(?:on|in|during|at|from|the)\s+)+", "", text)
    resolved = _resolve(text, _Calendar(now, zone or UTC))
    if resolved is None:
        raise UnknownTimePhrase(phrase)
    return resolved


def _resolve(text: str, cal: _Calendar) -> TimeWindow | None:
    today = cal.today
    iso = _iso(text, cal)
    if iso is not None:
        return iso
    simple = {
        "now": TimeWindow(cal.now, cal.now + timedelta(microseconds=1)),
        "today": cal.days(today),
        "earlier today": TimeWindow(cal.at(today), cal.now),
        "this morning": TimeWindow(cal.at(today), cal.at(today, 12)),
        "this afternoon": TimeWindow(cal.at(today, 12), cal.at(today, 18)),
        "this evening": TimeWindow(cal.at(today, 18), cal.at(today + timedelta(days=1))),
        "tonight": TimeWindow(cal.at(today, 18), cal.at(today + timedelta(days=1))),
        "yesterday": cal.days(today - timedelta(days=1)),
        "last night": TimeWindow(cal.at(today - timedelta(days=1), 18), cal.at(today, 6)),
        "day before yesterday": cal.days(today - timedelta(days=2)),
        "tomorrow": cal.days(today + timedelta(days=1)),
        "this week": cal.days(cal.week_of(today), 7),
        "earlier this week": TimeWindow(cal.at(cal.week_of(today)), cal.now),
        "last week": cal.days(cal.week_of(today) - timedelta(days=7), 7),
        "previous week": cal.days(cal.week_of(today) - timedelta(days=7), 7),
        "week before last": cal.days(cal.week_of(today) - timedelta(days=14), 7),
        "this weekend": cal.days(cal.week_of(today) + timedelta(days=5), 2),
        "last weekend": cal.days(
            cal.week_of(today)
            + timedelta(days=5 if today.weekday() == 6 else -2)
            - timedelta(days=7 if today.weekday() == 6 else 0),
            2,
        ),
        "this month": cal.months(today.replace(day=1)),
        "earlier this month": TimeWindow(cal.at(today.replace(day=1)), cal.now),
        "last month": cal.months(_add_months(today, -1)),
        "previous month": cal.months(_add_months(today, -1)),
        "this year": cal.year(today.year),
        "earlier this year": TimeWindow(cal.at(date(today.year, 1, 1)), cal.now),
        "last year": cal.year(today.year - 1),
        "recently": cal.days(today - timedelta(days=7), 8),
        "lately": cal.days(today - timedelta(days=7), 8),
        "past week": cal.days(today - timedelta(days=7), 8),
        "past month": TimeWindow(cal.at(_add_months(today, -1).replace(day=1)), cal.now),
    }
    if text in simple:
        return simple[text]
    if found := re.fullmatch(rf"{_NUMBER} {_UNIT} ago", text):
        n, unit = _count(found.group(1)), found.group(2)
        if unit == "day":
            return cal.days(today - timedelta(days=n))
        if unit == "week":
            return cal.days(cal.week_of(today) - timedelta(days=7 * n), 7)
        if unit == "month":
            return cal.months(_add_months(today, -n))
        return cal.year(today.year - n)
    if found := re.fullmatch(rf"(?:past|last|previous) {_NUMBER} {_UNIT}", text):
        n, unit = _count(found.group(1)), found.group(2)
        if unit in ("day", "week"):
            days = n * (7 if unit == "week" else 1)
            return TimeWindow(cal.at(today - timedelta(days=days)), cal.now)
        months = n * (12 if unit == "year" else 1)
        back = _add_months(today, -months)
        first = back.replace(day=min(today.day, 28))
        return TimeWindow(cal.at(first), cal.now)
    if found := re.fullmatch(rf"(last|this|past)? ?{_WEEKDAY}", text):
        which, weekday = found.group(1), _weekday_number(found.group(2))
        if which == "this":
            return cal.days(cal.week_of(today) + timedelta(days=weekday))
        days_back = (today.weekday() - weekday) % 7
        if which in ("last", "past") and days_back == 0:
            days_back = 7
        return cal.days(today - timedelta(days=days_back))
    if found := re.fullmatch(rf"{_WEEKDAY} (last|this) week", text):
        weekday, which = _weekday_number(found.group(1)), found.group(2)
        monday = cal.week_of(today) - timedelta(days=7 if which == "last" else 0)
        return cal.days(monday + timedelta(days=weekday))
    if found := re.fullmatch(rf"(last|this)? ?{_MONTH}(?: (\d{{4}}))?", text):
        which, month, year = found.group(1), _month_number(found.group(2)), found.group(3)
        if year is not None:
            return cal.months(date(int(year), month, 1))
        if which == "this":
            return cal.months(date(today.year, month, 1))
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
        # The latest such day not after today (February 29 looks back to a leap year).
        for years_back in range(9):
            found_day = _day_window(cal, today.year - years_back, month, day)
            if found_day is not None and found_day.start is not None and found_day.start <= cal.now:
                return found_day
        return None
    if found := re.fullmatch(rf"(last|this)? ?{_SEASON}(?: (\d{{4}}))?", text):
        which, first_month, year = found.group(1), _SEASONS[found.group(2)], found.group(3)
        if year is not None:
            return cal.months(date(int(year), first_month, 1), 3)
        return cal.season(first_month, which=which or "latest")
    return None


def _day_window(cal: _Calendar, year: int, month: int, day: int) -> TimeWindow | None:
    try:
        return cal.days(date(year, month, day))
    except ValueError:
        return None


_ISO_DAY: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_ISO_MONTH: Final = re.compile(r"(\d{4})-(\d{2})")
_ISO_YEAR: Final = re.compile(r"(\d{4})")


def _iso(text: str, cal: _Calendar) -> TimeWindow | None:
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
            moment = moment.astimezone(UTC)
            return TimeWindow(moment, moment + timedelta(microseconds=1))
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
    r"(?:the )?week before last|recently|lately",
    rf"(?:last|this) {_WEEKDAY}|{_WEEKDAY} (?:last|this) week|(?:on|since) {_WEEKDAY}",
    rf"(?:last|this) {_SEASON}|in (?:the )?{_SEASON}(?: \d{{4}})?",
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
