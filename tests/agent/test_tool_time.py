"""memory_search and memory_list with ``since`` / ``until``: phrases read in the user's
zone against the host's clock, the window echoed, unknown phrases refused by name, and
the observed day shown where it is not the day of saving."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from recallstore import InMemoryMemoryStore, MemoryCapability, MemoryToolbox, MemoryWriteInput
from recallstore.errors import ConfigurationError
from recallstore.recall import assemble_recall

NOW = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)  # Friday 11:00 in Berlin, after Feb 29
USER = {"user": "ana"}
LISBON = "trip to Lisbon booked, with flights and a flat near the river in Alfama"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def _stocked() -> InMemoryMemoryStore:
    store = InMemoryMemoryStore(clock=lambda: NOW)
    await store.write(
        [
            MemoryWriteInput(scope=USER, content=LISBON, observed_at=_at("2024-02-20T09:00")),
            MemoryWriteInput(
                scope=USER, content="trip budget is 900 euros", observed_at=_at("2024-02-29T12:00")
            ),
            MemoryWriteInput(
                scope=USER, content="trip idea: Porto in May", observed_at=_at("2024-01-10T08:00")
            ),
            MemoryWriteInput(scope=USER, content="trip with the dog today"),
            MemoryWriteInput(
                scope={"user": "bo"}, content="trip to Oslo", observed_at=_at("2024-02-21T09:00")
            ),
        ]
    )
    return store


def _contents(result: dict[str, Any]) -> list[str]:
    assert result["ok"] is True, result
    return [memory["content"] for memory in result["memories"]]


async def test_search_since_and_until_last_week_finds_what_was_said_last_week() -> None:
    toolbox = MemoryToolbox(await _stocked(), USER, time_zone="Europe/Berlin", clock=lambda: NOW)
    result = await toolbox.call(
        "memory_search", {"query": "trip", "since": "last week", "until": "last week"}
    )
    assert _contents(result) == [LISBON]
    assert result["window"] == {
        "since": "2024-02-19T00:00:00+01:00",
        "until": "2024-02-26T00:00:00+01:00",
        "time_zone": "Europe/Berlin",
        "from_query": None,
    }
    plain = await toolbox.call("memory_search", {"query": "trip"})
    assert len(_contents(plain)) == 4
    assert plain["window"] is None


async def test_list_since_yesterday_is_read_in_the_users_zone() -> None:
    store = await _stocked()
    berlin = MemoryToolbox(store, USER, time_zone="Europe/Berlin", clock=lambda: NOW)
    listed = await berlin.call("memory_list", {"since": "yesterday"})
    assert _contents(listed) == ["trip with the dog today", "trip budget is 900 euros"]
    assert listed["window"]["since"] == "2024-02-29T00:00:00+01:00"
    assert listed["window"]["until"] is None
    # In Honolulu (UTC-10) March 1 began at 10:00 UTC: only what was said since is today.
    honolulu = MemoryToolbox(store, USER, time_zone="Pacific/Honolulu", clock=lambda: NOW)
    assert _contents(await honolulu.call("memory_list", {"since": "today"})) == [
        "trip with the dog today"
    ]


async def test_an_unknown_phrase_is_invalid_arguments_naming_it_with_examples() -> None:
    toolbox = MemoryToolbox(await _stocked(), USER, clock=lambda: NOW)
    result = await toolbox.call("memory_search", {"query": "trip", "until": "the other day"})
    assert result["ok"] is False
    error = result["error"]
    assert error["code"] == "invalid_arguments"
    assert "'the other day'" in error["message"]
    assert '"last week"' in error["message"]
    assert "until" in error["message"]


async def test_an_empty_window_is_invalid_arguments() -> None:
    toolbox = MemoryToolbox(await _stocked(), USER, clock=lambda: NOW)
    result = await toolbox.call("memory_list", {"since": "today", "until": "last week"})
    assert result["ok"] is False
    assert result["error"]["code"] == "invalid_arguments"


async def test_the_observed_day_is_shown_where_it_is_not_the_day_of_saving() -> None:
    toolbox = MemoryToolbox(await _stocked(), USER, clock=lambda: NOW)
    result = await toolbox.call("memory_list", {})
    views = {memory["content"]: memory for memory in result["memories"]}
    assert views[LISBON]["observed"] == "2024-02-20"
    assert views[LISBON]["date"] == "2024-03-01"
    assert views["trip with the dog today"]["observed"] is None


def test_a_time_zone_that_does_not_exist_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="Mars/Olympus"):
        MemoryToolbox(InMemoryMemoryStore(), USER, time_zone="Mars/Olympus")


async def test_a_time_phrase_in_the_query_ranks_its_window_first_and_is_echoed() -> None:
    toolbox = MemoryToolbox(await _stocked(), USER, time_zone="Europe/Berlin", clock=lambda: NOW)
    result = await toolbox.call("memory_search", {"query": "what about the trip last week"})
    contents = _contents(result)
    assert contents[0] == LISBON
    # A boost, not a filter: the other trips still follow.
    assert set(contents[1:]) == {
        "trip budget is 900 euros",
        "trip idea: Porto in May",
        "trip with the dog today",
    }
    assert result["window"]["from_query"] == "last week"
    assert result["window"]["since"] == "2024-02-19T00:00:00+01:00"
    plain = _contents(await toolbox.call("memory_search", {"query": "what about the trip"}))
    assert plain[0] != LISBON


async def test_recall_puts_what_the_first_message_dates_first() -> None:
    store = await _stocked()
    recall = await assemble_recall(
        store, USER, "remind me what I said last week about the trip", limit=2, now=NOW
    )
    assert [record.content for record in recall.entries] == [
        LISBON,
        "trip with the dog today",
    ]
    undated = await assemble_recall(store, USER, "remind me about the trip", limit=2, now=NOW)
    assert LISBON not in [record.content for record in undated.entries]


async def test_the_capability_passes_the_sessions_time_zone_to_tools_and_recall() -> None:
    capability = MemoryCapability(await _stocked(), scope_fields=["user"])
    instance = await capability.instantiate(
        USER,
        conversation_id="c1",
        first_user_text="hello",
        time_zone="Asia/Tokyo",
    )
    assert str(instance.toolbox.time_zone) == "Asia/Tokyo"
    later = capability.toolbox(USER, time_zone="Asia/Tokyo")
    assert str(later.time_zone) == "Asia/Tokyo"
