"""``--as-of``, ``--since``, ``--until`` and ``--time-zone`` of ``list`` and ``search``.

The values are read as the memory tools read their ``since`` / ``until`` arguments
(:mod:`recallstore._when`): an ISO date or time, or a phrase ("last week",
"yesterday", "in March", "two days ago"), its calendar (midnight, Monday, the first of
the month) the ``--time-zone``'s, relative phrases read against the store's clock.
``--since`` / ``--until`` bound the day a thing was said (``observed_at``, which is
``created_at`` when the writer gave none), half-open as the store's filter is;
``--as-of`` asks the store as it stood at the end of the period named.

A value that cannot be read is a usage error naming the flag and the value, raised
before the store is opened, so nothing is read or changed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from recallstore._command.errors import EXIT_USAGE, CliError
from recallstore._command.main import CommandParser
from recallstore._when import (
    TimeWindow,
    UnknownTimePhrase,
    last_instant,
    resolve_since_until,
)
from recallstore.cli._output import local_time

__all__ = ["TimeFilter", "read_time_filter", "time_options", "zone_name"]

_MAX_PHRASE_CHARS = 64
"""As for the tools' ``since`` / ``until``: a phrase is a few words."""


def zone_name(text: str) -> tzinfo:
    """An argparse ``type=`` taking an IANA zone name (``Europe/Berlin``, ``UTC``)."""
    try:
        if not text or "\x00" in text:
            raise ValueError(text)
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an IANA time zone name (e.g. 'Europe/Berlin' or 'UTC')"
        ) from None


zone_name.__name__ = "IANA time zone name"  # what argparse names in its own messages


def time_options() -> CommandParser:
    """The four options, as a parent parser."""
    parent = CommandParser(add_help=False)
    phrase = "an ISO date or time, or words such as 'yesterday', 'last week', 'in March'"
    parent.add_argument(
        "--as-of",
        metavar="TIME",
        help=f"memory as it stood at the end of TIME ({phrase}): what was valid then",
    )
    parent.add_argument(
        "--since",
        metavar="TIME",
        help="only things said from the start of TIME on (the day a thing was said, "
        "else the day it was saved)",
    )
    parent.add_argument("--until", metavar="TIME", help="only things said up to the end of TIME")
    parent.add_argument(
        "--time-zone",
        type=zone_name,
        default=None,
        metavar="ZONE",
        help="the IANA zone the times are read and shown in (default UTC)",
    )
    return parent


@dataclass(frozen=True, slots=True)
class TimeFilter:
    """What the four options asked for, read: the search's ``as_of`` and observed window."""

    zone: tzinfo | None
    as_of: datetime | None
    said: TimeWindow

    @property
    def given(self) -> bool:
        """True when a filter or a zone was asked for: the table says which then."""
        return self.zone is not None or self.as_of is not None or self.said != _ALWAYS

    def describe(self) -> str:
        """The line above a table: the moment and the window searched, and the zone the
        times are read and shown in."""
        parts = []
        if self.as_of is not None:
            parts.append(f"as of {_iso(self.as_of, self.zone)}")
        start, end = self.said.start, self.said.end
        if start is not None and end is not None:
            parts.append(f"said from {_iso(start, self.zone)} until before {_iso(end, self.zone)}")
        elif start is not None:
            parts.append(f"said from {_iso(start, self.zone)} on")
        elif end is not None:
            parts.append(f"said before {_iso(end, self.zone)}")
        zone = f"time zone {_zone_text(self.zone)}"
        return f"{'; '.join(parts)} ({zone})" if parts else f"times in {zone}"


_ALWAYS = TimeWindow(None, None)


def _iso(moment: datetime, zone: tzinfo | None) -> str:
    return local_time(moment, zone).isoformat(sep=" ")


def _zone_text(zone: tzinfo | None) -> str:
    return "UTC" if zone is None else str(zone)


def _phrase(flag: str, value: str | None) -> str | None:
    """``value`` when given; an empty or overlong one is refused, naming ``flag``."""
    if value is None:
        return None
    if not value.strip():
        raise CliError(
            f"{flag} needs a time (e.g. 2026-11-01 or 'last week'), got {value!r}", EXIT_USAGE
        )
    if len(value) > _MAX_PHRASE_CHARS:
        raise CliError(
            f"{flag}: {value[:20]!r}... is {len(value)} characters; a time is at most "
            f"{_MAX_PHRASE_CHARS}",
            EXIT_USAGE,
        )
    return value


def read_time_filter(args: argparse.Namespace, now: datetime) -> TimeFilter:
    """The filter ``args`` ask for, read at ``now`` (the store's clock) in
    ``args.time_zone``; :class:`CliError` (exit 2) naming the flag and its value for a
    value that names no time, and for ``--since`` not before ``--until``."""
    zone: tzinfo | None = args.time_zone
    as_of_text = _phrase("--as-of", args.as_of)
    since = _phrase("--since", args.since)
    until = _phrase("--until", args.until)
    for flag, value in (("--since", since), ("--until", until)):
        if value is None:
            continue
        try:
            if flag == "--since":
                bound = resolve_since_until(value, None, now, zone).start
            else:
                bound = resolve_since_until(None, value, now, zone).end
        except UnknownTimePhrase as exc:
            raise CliError(f"{flag}: {exc}", EXIT_USAGE) from None
        if bound is None:
            # "before March" as --since, "since Monday" as --until: no bound at all.
            side = "start" if flag == "--since" else "end"
            raise CliError(f"{flag} {value!r} names no {side}; give a day or a period", EXIT_USAGE)
    try:
        said = resolve_since_until(since, until, now, zone)
    except ValueError:
        raise CliError(
            f"--since {since!r} is not before --until {until!r}: no time is said between them "
            f"(read in {_zone_text(zone)})",
            EXIT_USAGE,
        ) from None
    as_of = None if as_of_text is None else _as_of(as_of_text, now, zone)
    return TimeFilter(zone=zone, as_of=as_of, said=said)


def _as_of(value: str, now: datetime, zone: tzinfo | None) -> datetime:
    """The last instant of the period ``value`` names ("2026-11-01": the end of that
    day; "now" or an exact time: that instant)."""
    try:
        end = last_instant(value, now, zone)
    except UnknownTimePhrase as exc:
        raise CliError(f"--as-of: {exc}", EXIT_USAGE) from None
    if end is None:
        raise CliError(
            f"--as-of {value!r} names no end (it runs on to now); give a day, a period or "
            "an exact time",
            EXIT_USAGE,
        )
    return end.astimezone(UTC)
