"""The scope charts on the records page, as geometry for inline SVG (no script, no
library): records by kind over time, and how full recent recall blocks were.

Pure functions of records and events; the template draws the rectangles. Every
number a person might want is also in each shape's tooltip (``title``) and in the
chart's caption, so the charts add a picture, never a fact only the picture holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from recallstore.events import MemoryEvent, MemoryRecallData
from recallstore.records import MEMORY_KINDS, MemoryRecord

__all__ = ["Chart", "kinds_over_time", "recall_fullness"]

WIDTH: Final = 460
HEIGHT: Final = 150
_LEFT, _RIGHT, _TOP, _BOTTOM = 34, 8, 10, 22
MAX_BUCKETS: Final = 24
"""Most bars the kinds chart draws: the bucket is the smallest unit that fits."""
MAX_RECALLS: Final = 24
"""Recall blocks the fullness chart shows, the newest."""
_UNITS: Final = (
    (timedelta(seconds=1), "%H:%M:%S", "second"),
    (timedelta(seconds=10), "%H:%M:%S", "10 seconds"),
    (timedelta(minutes=1), "%H:%M", "minute"),
    (timedelta(minutes=10), "%H:%M", "10 minutes"),
    (timedelta(hours=1), "%m-%d %H:%M", "hour"),
    (timedelta(hours=6), "%m-%d %H:%M", "6 hours"),
    (timedelta(days=1), "%Y-%m-%d", "day"),
    (timedelta(days=7), "%Y-%m-%d", "week"),
    (timedelta(days=30), "%Y-%m-%d", "30 days"),
    (timedelta(days=365), "%Y-%m-%d", "365 days"),
)
_EPOCH: Final = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Bar:
    """One rectangle: position and size in the chart's coordinates, its CSS class and
    its tooltip."""

    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True, slots=True)
class Label:
    """A text in the chart: position, anchor (start, middle, end) and the text."""

    x: float
    y: float
    anchor: str
    text: str


@dataclass(frozen=True, slots=True)
class Chart:
    """What the template draws: bars, axis labels, optional guide line, a legend and a
    caption in words."""

    bars: tuple[Bar, ...]
    labels: tuple[Label, ...]
    legend: tuple[tuple[str, str], ...]
    """(CSS class, text) pairs."""
    caption: str
    guide_y: float | None = None
    width: int = WIDTH
    height: int = HEIGHT


def _plot_height() -> int:
    return HEIGHT - _TOP - _BOTTOM


def _unit_for(span: timedelta) -> tuple[timedelta, str, str]:
    for unit in _UNITS:
        if span < unit[0] * MAX_BUCKETS:
            return unit
    return _UNITS[-1]


def kinds_over_time(records: Sequence[MemoryRecord]) -> Chart | None:
    """Records by when they were said (``observed_at``) per time bucket, stacked by
    kind: the shape of a scope's memory over time; None for no records."""
    if not records:
        return None
    stamps = [record.observed_at.astimezone(UTC) for record in records]
    unit, pattern, unit_name = _unit_for(max(stamps) - min(stamps))
    first = _EPOCH + ((min(stamps) - _EPOCH) // unit) * unit
    buckets = int((max(stamps) - first) // unit) + 1
    counts: list[Counter[str]] = [Counter() for _ in range(buckets)]
    for record, stamp in zip(records, stamps, strict=True):
        counts[int((stamp - first) // unit)][record.kind] += 1
    tallest = max(sum(bucket.values()) for bucket in counts)
    plot_width = WIDTH - _LEFT - _RIGHT
    slot = plot_width / max(buckets, 6)
    scale = _plot_height() / tallest
    bars = []
    for index, bucket in enumerate(counts):
        start = first + unit * index
        base: float = HEIGHT - _BOTTOM
        for kind in MEMORY_KINDS:
            if not bucket[kind]:
                continue
            height = bucket[kind] * scale
            base -= height
            bars.append(
                Bar(
                    x=round(_LEFT + index * slot + slot * 0.12, 2),
                    y=round(base, 2),
                    width=round(slot * 0.76, 2),
                    height=round(height, 2),
                    css=f"kind-{kind}",
                    title=f"said {start.strftime(pattern)} UTC: {bucket[kind]} {kind}",
                )
            )
    last = first + unit * (buckets - 1)
    labels = [
        Label(_LEFT - 4, _TOP + 8, "end", str(tallest)),
        Label(_LEFT - 4, HEIGHT - _BOTTOM, "end", "0"),
        Label(_LEFT, HEIGHT - 6, "start", first.strftime(pattern)),
    ]
    if buckets > 1:
        labels.append(Label(WIDTH - _RIGHT, HEIGHT - 6, "end", last.strftime(pattern) + " UTC"))
    total = Counter(record.kind for record in records)
    legend = tuple(
        (f"kind-{kind}", f"{kind} {total[kind]}") for kind in MEMORY_KINDS if total[kind]
    )
    caption = (
        f"{len(records)} records by the {unit_name} they were said, by kind: "
        + ", ".join(f"{total[kind]} {kind}" for kind in MEMORY_KINDS if total[kind])
        + "."
    )
    return Chart(tuple(bars), tuple(labels), legend, caption)


def recall_fullness(events: Sequence[MemoryEvent]) -> Chart | None:
    """The newest recall blocks' size against their budget, oldest left; None for none."""
    recalls = [event for event in events if isinstance(event.data, MemoryRecallData)]
    recalls = sorted(recalls, key=lambda event: (event.timestamp, event.id))[-MAX_RECALLS:]
    if not recalls:
        return None
    plot_width = WIDTH - _LEFT - _RIGHT
    slot = plot_width / max(len(recalls), 8)
    bars = []
    shares = []
    truncated = 0
    for index, event in enumerate(recalls):
        data = event.data
        assert isinstance(data, MemoryRecallData)
        share = data.chars / data.budget_chars if data.budget_chars else 1.0
        shares.append(min(share, 1.0))
        height = max(min(share, 1.0) * _plot_height(), 1.0)
        truncated += data.truncated
        when = event.timestamp.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        state = "truncated" if data.truncated else "complete"
        bars.append(
            Bar(
                x=round(_LEFT + index * slot + slot * 0.15, 2),
                y=round(HEIGHT - _BOTTOM - height, 2),
                width=round(slot * 0.7, 2),
                height=round(height, 2),
                css="recall-truncated" if data.truncated else "recall-complete",
                title=f"{when} UTC: {data.chars} / {data.budget_chars} chars, {state}",
            )
        )
    labels = (
        Label(_LEFT - 4, _TOP + 8, "end", "100%"),
        Label(_LEFT - 4, HEIGHT - _BOTTOM, "end", "0"),
        Label(_LEFT, HEIGHT - 6, "start", "older"),
        Label(WIDTH - _RIGHT, HEIGHT - 6, "end", "newest"),
    )
    legend = (("recall-complete", "complete"), ("recall-truncated", "truncated"))
    mean = sum(shares) / len(shares)
    caption = (
        f"{len(recalls)} recent recall blocks, each against its budget: on average "
        f"{round(mean * 100)}% full; {truncated} truncated."
    )
    return Chart(bars=tuple(bars), labels=labels, legend=legend, caption=caption, guide_y=_TOP)
