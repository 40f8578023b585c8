"""The calendar that time phrases are read on: a window, its edges, the user's days.

:class:`TimeWindow` is a half-open ``[start, end)`` in UTC. :class:`Calendar` does the
arithmetic of :mod:`recallstore._when` in the user's zone (midnight, Monday, the first
of the month are theirs) and answers in UTC, cut at the calendar's edges:
:data:`EARLIEST` and :data:`LATEST`. Past them it raises ``OverflowError`` or
``ValueError`` (a day before the year 1 or after 9999), which the resolver turns into
"no window".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import cached_property
from typing import Final

from recallstore.values import FIRST_YEAR

__all__ = ["EARLIEST", "LATEST", "Calendar", "TimeWindow", "add_months", "later"]

EARLIEST: Final = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
"""The earliest bound a window has: stores keep no time before the year
:data:`~recallstore.values.FIRST_YEAR` (1000)."""
LATEST: Final = datetime.max.replace(tzinfo=UTC)
"""The latest bound a window has: the last instant a ``datetime`` holds."""


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open window ``[start, end)`` in UTC; None is unbounded on that side."""

    start: datetime | None
    end: datetime | None

    def local(self, zone: tzinfo | None) -> tuple[str | None, str | None]:
        """The two bounds as ISO 8601 in ``zone`` (UTC when None), for showing."""
        shown = zone or UTC
        return _shown(self.start, shown), _shown(self.end, shown)


def _shown(moment: datetime | None, zone: tzinfo) -> str | None:
    if moment is None:
        return None
    try:
        return moment.astimezone(zone).isoformat()
    except OverflowError:
        # LATEST east of UTC is in the year 10000: the same instant, shown in UTC.
        return moment.isoformat()


def later(moment: datetime) -> datetime:
    """One microsecond after ``moment``, or :data:`LATEST` at the end of the calendar."""
    return LATEST if moment >= LATEST else moment + timedelta(microseconds=1)


def add_months(day: date, months: int) -> date:
    """The first of the month ``months`` after ``day``'s month."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


class Calendar:
    """Calendar arithmetic in the user's zone, answering in UTC."""

    def __init__(self, now: datetime, zone: tzinfo) -> None:
        self.now = now.astimezone(UTC)
        self.zone = zone

    @cached_property
    def today(self) -> date:
        """The user's date now; ``OverflowError`` when that is past 9999-12-31 (a clock
        at the calendar's end, read east of UTC), which only relative phrases need."""
        return self.now.astimezone(self.zone).date()

    def at(self, day: date, hour: int = 0) -> datetime:
        """Local ``hour`` o'clock of ``day`` as UTC (zoneinfo picks the offset in force);
        the calendar's edge when that instant lies beyond it."""
        try:
            return datetime.combine(day, time(hour), tzinfo=self.zone).astimezone(UTC)
        except OverflowError:
            # 0001-01-01 east of UTC, or 9999-12-31 west of it: before or after datetime.
            return EARLIEST if day.year < 5000 else LATEST

    def after(self, first: date, *, days: int = 0, months: int = 0) -> datetime:
        """The start of the day ``days`` days (or the month ``months`` months) after
        ``first``: where a window starting at ``first`` ends; :data:`LATEST` past 9999."""
        try:
            return self.at(add_months(first, months) if months else first + timedelta(days=days))
        except (OverflowError, ValueError):
            return self.end_of_calendar()

    def end_of_calendar(self) -> datetime:
        """Local midnight after 9999-12-31 as UTC, :data:`LATEST` when that is past it:
        east of UTC the user's last day ends inside ``datetime``'s range."""
        offset = self.zone.utcoffset(datetime.max) or timedelta(0)
        if offset <= timedelta(0):
            return LATEST
        return (datetime.max - offset + timedelta(microseconds=1)).replace(tzinfo=UTC)

    def days(self, first: date, count: int = 1) -> TimeWindow:
        """``count`` days from ``first``'s local midnight."""
        return TimeWindow(self.at(first), self.after(first, days=count))

    def week_of(self, day: date) -> date:
        """The Monday of ``day``'s week."""
        return day - timedelta(days=day.weekday())

    def months(self, first: date, count: int = 1) -> TimeWindow:
        """``count`` months from the first of ``first``'s month."""
        return TimeWindow(self.at(first), self.after(first, months=count))

    def year(self, year: int) -> TimeWindow:
        """The whole of ``year``."""
        first = date(year, 1, 1)
        return TimeWindow(self.at(first), self.after(first, months=12))

    def instant(self, moment: datetime) -> TimeWindow:
        """The window of one microsecond at ``moment`` (UTC)."""
        return TimeWindow(moment, later(moment))

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
        if which == "last" and add_months(start, 3) > self.today:
            start = date(start.year - 1, first_month, 1)
        return self.months(start, 3)
