"""A synthetic multi-week diary whose questions name relative times (issue 26).

Eight weeks of one user's notes, three a day, on six recurring topics; each topic's
notes share its words every week, so only *when* tells them apart. Each question asks
about one topic at a relative time ("what did I say last week about the garden") and
its evidence is that topic's notes observed in the window the phrase names, read at
:data:`NOW` in UTC. Deterministic: the same notes and questions on every run.
Used by ``benchmarks/time_recall.py`` and ``tests/agent/test_time_queries.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from recallstore._when import resolve_phrase
from recallstore.records import MemoryWriteInput

NOW = datetime(2026, 3, 20, 18, 0, tzinfo=UTC)  # a Friday evening
SCOPE = {"user": "diarist"}
TOPICS = {
    "trip": ["train tickets for the trip", "packing list for the trip", "hotel for the trip"],
    "garden": ["planted in the garden", "watered the garden beds", "weeds in the garden"],
    "budget": ["went over the budget", "budget spreadsheet updated", "saved money, budget ok"],
    "gym": ["leg day at the gym", "gym class with Sam", "skipped the gym, tired"],
    "project": ["project deadline moved", "demo of the project went well", "project bug fixed"],
    "dinner": ["dinner with Priya", "cooked dinner at home", "dinner at the Thai place"],
}
_DETAILS = (
    "felt good about it",
    "need to follow up",
    "Priya agreed",
    "it rained all day",
    "took longer than planned",
    "cheaper than expected",
    "will tell Sam",
    "remember for next time",
)
PHRASES = (
    "yesterday",
    "three days ago",
    "last week",
    "two weeks ago",
    "three weeks ago",
    "last month",
    "in February",
    "earlier this week",
)


@dataclass(frozen=True)
class DiaryQuestion:
    text: str
    phrase: str
    topic: str
    evidence: frozenset[int]
    """Indexes into the notes (the order :func:`diary` writes them)."""


def diary(seed: int = 26) -> tuple[list[MemoryWriteInput], list[DiaryQuestion]]:
    """The notes (oldest first, each with its observed time) and the questions."""
    rng = random.Random(seed)
    notes: list[MemoryWriteInput] = []
    topics: list[str] = []
    first_day = (NOW - timedelta(weeks=8)).date()
    for offset in range(8 * 7 + 1):
        day = first_day + timedelta(days=offset)
        for slot, hour in enumerate((8, 13, 20)):
            moment = datetime(day.year, day.month, day.day, hour, rng.randrange(60), tzinfo=UTC)
            if moment > NOW:
                break
            topic = rng.choice(sorted(TOPICS))
            text = f"{rng.choice(TOPICS[topic])}; {rng.choice(_DETAILS)}"
            notes.append(
                MemoryWriteInput(
                    scope=SCOPE,
                    kind="episode",
                    content=text,
                    observed_at=moment,
                    tags=(f"s{slot}",),
                )
            )
            topics.append(topic)
    questions = []
    for phrase in PHRASES:
        window = resolve_phrase(phrase, NOW)
        for topic in sorted(TOPICS):
            evidence = frozenset(
                index
                for index, (note, note_topic) in enumerate(zip(notes, topics, strict=True))
                if note_topic == topic
                and note.observed_at is not None
                and (window.start is None or note.observed_at >= window.start)
                and (window.end is None or note.observed_at < window.end)
            )
            if evidence:
                questions.append(
                    DiaryQuestion(
                        f"what did I say {phrase} about the {topic}", phrase, topic, evidence
                    )
                )
    return notes, questions
