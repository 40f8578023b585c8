"""Dates at the calendar's edges through every surface that reads one (issue 36 item 2).

Before: a first message holding "9999-12-31" made ``MemoryCapability.instantiate``
raise ``OverflowError``; ``memory_search`` / ``memory_list`` with such a ``since`` or
``until`` raised out of ``toolbox.call`` (over MCP a JSON-RPC error, not an
``isError`` result); the lens answered 500; ``recallstore capture`` printed a
traceback. Each edge phrase below (the year 1, the year 9999, ±14/12-hour offsets,
DST gaps and overlaps, a day a zone skipped, leap days, huge numbers), in each of
five zones and at clocks near both ends of the calendar, must be a window, plain text
to search, a tool error the model can act on, or a 4xx naming the parameter.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, types
from tests.agent.test_time_edges import PHRASES
from tests.cli.conftest import run_process

from recallstore import MemoryCapability, MemoryToolbox, MemoryWriteInput
from recallstore._when import LATEST
from recallstore.adapters.mcp import RECALL_PROMPT, create_mcp_server
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.dashboard import create_dashboard_app
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.testing.pytest_plugin import FrozenClock

SCOPE = {"user": "u1"}
TIMEOUT = 30  # seconds, for each MCP session

EDGE_PHRASES = [
    "9999-12-31",
    "0001-01-01",
    "9999-12-31T23:59:59+00:00",
    "9999-12-31T23:00:00-12:00",
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T00:00:00+01:00",
    "in December 9999",
    "9999",
    "since 9999-12-31",
    "until 0001-01-01",
    "before 1000-01-01",
    "0999-12-31",
    "2024-02-29",
    "February 29",
    "2023-02-29",
    "2024-03-10T02:30",
    "2024-11-03T01:30",
    "2011-12-30",
    "10**30 days ago",
    "1000000000000000000000000000000 days ago",
    "999 years ago",
    "in 99999 years",
    "99999-01-01",
    "last week",
]
ZONES = [None, "Etc/GMT-14", "Etc/GMT+12", "America/New_York", "Pacific/Apia"]  # +14, -12
CLOCKS = [
    None,  # the store's, the wall clock
    FrozenClock(datetime(1, 1, 1, 5, tzinfo=UTC)),
    FrozenClock(datetime(1000, 1, 1, tzinfo=UTC)),
    FrozenClock(LATEST - timedelta(hours=1)),
    FrozenClock(LATEST),
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        await opened.write(
            [
                MemoryWriteInput(scope=SCOPE, content="the kettle party is on 9999-12-31"),
                MemoryWriteInput(
                    scope=SCOPE,
                    content="the kettle descaler",
                    observed_at=datetime(2024, 2, 29, 12, tzinfo=UTC),
                ),
            ]
        )
        yield opened


def _tool_answer(result: dict[str, Any], phrase: str, field: str) -> None:
    """A window (ok, echoed) or an invalid_arguments error naming the field and phrase."""
    if result["ok"]:
        assert "window" in result, result
        return
    error = result["error"]
    assert error["code"] == "invalid_arguments", result
    assert field in error["message"], result
    bare = phrase.removeprefix("since ").removeprefix("until ")
    assert repr(bare) in error["message"] or repr(phrase) in error["message"], result


def _tool_calls(phrase: str) -> list[tuple[str, dict[str, Any], str]]:
    return [
        ("memory_search", {"query": "kettle", "since": phrase}, "since"),
        ("memory_search", {"query": "kettle", "until": phrase}, "until"),
        ("memory_search", {"query": "kettle", "since": phrase, "until": phrase}, "since"),
        ("memory_list", {"since": phrase}, "since"),
        ("memory_list", {"until": phrase}, "until"),
    ]


@pytest.mark.parametrize("zone", ZONES)
async def test_instantiate_and_both_tools(store: SqliteMemoryStore, zone: str | None) -> None:
    capability = MemoryCapability(store, scope_fields=["user"])
    for clock in CLOCKS:
        for phrase in EDGE_PHRASES:
            instance = await capability.instantiate(
                SCOPE,
                conversation_id="c1",
                first_user_text=f"what about the kettle {phrase}",
                time_zone=zone,
                clock=clock,
            )
            assert instance.recall.hits  # the text was searched, window or not
            for tool, arguments, field in _tool_calls(phrase):
                result = await instance.toolbox.call(tool, arguments)
                if field == "since" and "until" in arguments and not result["ok"]:
                    field = result["error"]["message"].split(":")[0]
                _tool_answer(result, phrase, field)
            boosted = await instance.toolbox.call("memory_search", {"query": f"kettle {phrase}"})
            assert boosted["ok"] is True, boosted


async def test_over_mcp_a_tool_error_never_a_protocol_error(store: SqliteMemoryStore) -> None:
    server = create_mcp_server(store, SCOPE, conversation_id="c1")
    with anyio.fail_after(TIMEOUT):
        async with Client(server, read_timeout_seconds=TIMEOUT) as client:
            for phrase in EDGE_PHRASES:
                for tool, arguments, field in _tool_calls(phrase):
                    result = await client.call_tool(tool, arguments)
                    body = result.structured_content
                    assert isinstance(body, dict), result
                    assert result.is_error is (not body["ok"])
                    if not body["ok"]:
                        field = body["error"]["message"].split(":")[0]
                    _tool_answer(body, phrase, field)
                prompt = await client.get_prompt(RECALL_PROMPT, {"user_text": f"kettle {phrase}"})
                message = prompt.messages[0].content
                assert isinstance(message, types.TextContent)
                assert "kettle" in message.text


async def test_the_lens_answers_a_window_or_a_4xx_naming_the_parameter(tmp_path: Path) -> None:
    bus = EventBus()
    async with SqliteMemoryStore(tmp_path / "lens.db") as raw:
        store = ObservedMemoryStore(raw, bus)
        app = create_dashboard_app(store, bus, token="lens-token")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            assert (await client.get("/", params={"token": "lens-token"})).status_code == 303
            for phrase in EDGE_PHRASES:
                for name in ("since", "until", "as_of"):
                    paths = ("/api/records", "/records") + (("/person",) if name == "as_of" else ())
                    for path in paths:
                        response = await client.get(path, params={"scope": "user=u1", name: phrase})
                        assert response.status_code in (200, 400, 422), (path, name, phrase)
                        if response.status_code != 200:
                            assert name in response.text
                recall = await client.get(
                    "/recall", params={"scope": "user=u1", "text": f"kettle {phrase}"}
                )
                assert recall.status_code == 200, (phrase, recall.text[-500:])


def test_the_cli_reads_edge_dates_without_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    lines = [
        {"role": "user", "content": f"about {moment}", "time": moment}
        for moment in (
            "9999-12-31T23:00:00-05:00",
            "0001-01-01T00:00:00+01:00",
            "0001-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59.999999-00:01",
        )
    ]
    for index, line in enumerate(lines):
        transcript = tmp_path / f"t{index}.jsonl"
        transcript.write_text(json.dumps(line) + "\n", encoding="utf-8")
        result = run_process("capture", "--db", db, "--scope", "user=u1", transcript)
        assert result.code == 2, result
        assert "Traceback" not in result.err
        assert result.err.count("\n") == 1, result.err
        assert repr(line["time"]) in result.err
    assert not db.exists()  # a refused capture creates nothing
    kettle = tmp_path / "kettle.jsonl"
    kettle.write_text(json.dumps({"role": "user", "content": "the kettle"}) + "\n", "utf-8")
    assert run_process("capture", "--db", db, "--scope", "user=u1", kettle).code == 0
    found = run_process("search", "--db", db, "--scope", "user=u1", "on 9999-12-31 the kettle")
    assert found.code == 0, found
    assert "Traceback" not in found.err


FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@FUZZ
@given(
    phrase=PHRASES,
    zone=st.sampled_from(ZONES),
    clock=st.sampled_from(CLOCKS),
)
async def test_fuzzed_phrases_through_instantiate_and_the_tools(
    store: SqliteMemoryStore, phrase: str, zone: str | None, clock: FrozenClock | None
) -> None:
    capability = MemoryCapability(store, scope_fields=["user"])
    instance = await capability.instantiate(
        SCOPE, conversation_id="c1", first_user_text=f"kettle {phrase}", time_zone=zone, clock=clock
    )
    assert instance.recall.hits
    for tool, arguments, _ in _tool_calls(phrase):
        result = await instance.toolbox.call(tool, arguments)
        assert result["ok"] or result["error"]["code"] == "invalid_arguments", result
    toolbox = MemoryToolbox(store, SCOPE, time_zone=zone, clock=clock)
    result = await toolbox.call("memory_search", {"query": f"kettle {phrase}"})
    assert result["ok"] is True, result
