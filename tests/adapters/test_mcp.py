"""The MCP adapter, driven by real MCP clients: in-process (most cases) and over stdio.

The scope is fixed by the server's builder (or CLI flags); these tests try to leave it
from the client side and check the answers are the toolbox's structured errors.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from recallstore.adapters.mcp import (
    MANUAL_PROMPT,
    MANUAL_URI,
    RECALL_PROMPT,
    RECALL_URI,
    RECALL_URI_TEMPLATE,
    create_mcp_server,
)
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.errors import ConfigurationError
from recallstore.prompt import RECALL_OPEN, Manual
from recallstore.records import MAX_LIMIT, MemoryRecord, MemorySearchQuery, MemoryWriteInput
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import mcp_tool
from recallstore.toolset import MEMORY_TOOLS

SCOPE = {"tenant": "acme", "user": "u1"}
OTHER = {"tenant": "acme", "user": "u2"}
TIMEOUT = 15  # seconds: every client exchange is bounded
TOOL_NAMES = {spec.name for spec in MEMORY_TOOLS}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteMemoryStore]:
    async with SqliteMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


@pytest.fixture
async def bobs_record(store: SqliteMemoryStore) -> MemoryRecord:
    """A record in another user's scope that the u1 server must never see or touch."""
    (record,) = await store.write(
        [MemoryWriteInput(scope=OTHER, content="U2 secret plan: move to Oslo in spring.")]
    )
    return record


@asynccontextmanager
async def connect(store: SqliteMemoryStore) -> AsyncIterator[Client]:
    """An official MCP client connected to an in-process server bound to SCOPE."""
    server = create_mcp_server(store, SCOPE, conversation_id="conv-1", run_id="run-1")
    async with Client(server, read_timeout_seconds=TIMEOUT) as client:
        yield client


def payload(result: types.CallToolResult) -> dict[str, Any]:
    """The structured result, after checking the JSON text says exactly the same."""
    structured = result.structured_content
    assert isinstance(structured, dict)
    assert len(result.content) == 1
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert json.loads(text.text) == structured
    return structured


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """A model mistake: an isError result whose structured error the model acts on."""
    assert result.is_error is True
    body = payload(result)
    assert body["ok"] is False
    error: dict[str, Any] = body["error"]
    return error


async def all_records(store: SqliteMemoryStore) -> list[MemoryRecord]:
    hits = await store.search(
        MemorySearchQuery(include_invalidated=True, include_expired=True, limit=MAX_LIMIT)
    )
    return [hit.record for hit in hits]


async def test_lists_the_toolbox_tools_exactly(store: SqliteMemoryStore) -> None:
    expected = {tool.name: mcp_tool(tool) for tool in MemoryToolbox(store, SCOPE).tools}
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == TOOL_NAMES
    for tool in listed:
        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert wire["inputSchema"] == expected[tool.name]["inputSchema"]
        # The success shape, widened to the {"ok": false, "error": ...} answer.
        success = dict(expected[tool.name]["outputSchema"])
        definitions = success.pop("$defs", None)
        output = wire["outputSchema"]
        assert output["type"] == "object"
        assert output["anyOf"][0] == success
        assert output["anyOf"][1]["properties"]["ok"] == {"const": False}
        assert output.get("$defs") == definitions
        assert wire["description"] == expected[tool.name]["description"]
        assert wire["annotations"] == expected[tool.name]["annotations"]
        assert "scope" not in wire["inputSchema"]["properties"]
    hints = {tool.name: tool.annotations for tool in listed}
    assert hints["memory_search"] is not None
    assert hints["memory_search"].read_only_hint is True
    assert hints["memory_list"] is not None
    assert hints["memory_list"].read_only_hint is True
    invalidate = hints["memory_invalidate"]
    assert invalidate is not None
    assert invalidate.destructive_hint is True
    assert invalidate.idempotent_hint is True
    assert invalidate.read_only_hint is False
    save = hints["memory_save"]
    assert save is not None
    assert save.destructive_hint is False
    assert save.read_only_hint is False


async def test_save_then_search_is_stamped_with_the_bound_scope(store: SqliteMemoryStore) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            saved = await client.call_tool(
                "memory_save",
                {"content": "Prefers window seats on long flights.", "kind": "preference"},
            )
            found = await client.call_tool("memory_search", {"query": "window seat"})
    assert saved.is_error is False
    memory = payload(saved)["memory"]
    assert memory["kind"] == "preference"
    assert found.is_error is False
    assert [m["id"] for m in payload(found)["memories"]] == [memory["id"]]
    record = await store.get(memory["id"])
    assert record is not None
    assert record.scope == SCOPE
    assert record.provenance is not None
    assert record.provenance.conversation_id == "conv-1"
    assert record.provenance.run_id == "run-1"


async def test_reads_never_show_another_scope(
    store: SqliteMemoryStore, bobs_record: MemoryRecord
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            searched = await client.call_tool("memory_search", {"query": "secret plan Oslo"})
            listed = await client.call_tool("memory_list", {})
    assert payload(searched) == {"ok": True, "count": 0, "memories": [], "window": None}
    assert payload(listed) == {"ok": True, "count": 0, "memories": [], "window": None}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("memory_save", {"content": "Lives in Porto.", "scope": OTHER}),
        ("memory_search", {"query": "plan", "scope": OTHER}),
        ("memory_list", {"scope": {}}),
    ],
)
async def test_a_scope_argument_is_refused(
    store: SqliteMemoryStore, bobs_record: MemoryRecord, tool: str, arguments: dict[str, Any]
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            result = await client.call_tool(tool, arguments)
    error = error_of(result)
    assert error["code"] == "invalid_arguments"
    assert error["fields"] == ["scope"]
    assert "unknown argument" in error["message"]
    assert [r.id for r in await all_records(store)] == [bobs_record.id]


async def test_another_scopes_id_is_answered_like_a_missing_id(
    store: SqliteMemoryStore, bobs_record: MemoryRecord
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            foreign = await client.call_tool("memory_invalidate", {"id": bobs_record.id})
            missing = await client.call_tool("memory_invalidate", {"id": "no-such-id"})
            superseding = await client.call_tool(
                "memory_save", {"content": "Moving to Rome.", "supersedes": bobs_record.id}
            )
    foreign_error, missing_error = error_of(foreign), error_of(missing)
    assert foreign_error["code"] == missing_error["code"] == "not_found"
    assert foreign_error["message"] == missing_error["message"].replace(
        "no-such-id", bobs_record.id
    )
    assert error_of(superseding)["code"] == "not_found"
    assert await all_records(store) == [bobs_record]


async def test_model_mistakes_come_back_as_structured_errors(store: SqliteMemoryStore) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            unknown = await client.call_tool("memory_delete", {"id": "x"})
            bad_limit = await client.call_tool("memory_list", {"limit": 0})
            no_content = await client.call_tool("memory_save", {})
    assert error_of(unknown)["code"] == "unknown_tool"
    assert "memory_save" in error_of(unknown)["message"]
    assert error_of(bad_limit)["fields"] == ["limit"]
    assert error_of(no_content)["fields"] == ["content"]
    assert await all_records(store) == []


async def test_invalidate_then_it_is_no_longer_listed(store: SqliteMemoryStore) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            saved = payload(await client.call_tool("memory_save", {"content": "Owns a cat."}))
            record_id = saved["memory"]["id"]
            first = await client.call_tool(
                "memory_invalidate", {"id": record_id, "reason": "The cat was rehomed."}
            )
            again = await client.call_tool("memory_invalidate", {"id": record_id})
            listed = payload(await client.call_tool("memory_list", {}))
    assert payload(first) == {"ok": True, "id": record_id, "invalidated": True}
    assert payload(again) == {"ok": True, "id": record_id, "invalidated": True}
    assert listed["count"] == 0
    record = await store.get(record_id)
    assert record is not None
    assert record.invalid_reason == "The cat was rehomed."


async def test_a_store_failure_tells_the_model_memory_is_unavailable(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "memory.db")
    async with store:
        server = create_mcp_server(store, SCOPE)
    # The store is closed now: every call fails at the store, not in the model's input.
    with anyio.fail_after(TIMEOUT):
        async with Client(server, read_timeout_seconds=TIMEOUT) as client:
            result = await client.call_tool("memory_save", {"content": "Likes tea."})
    # Not the model's mistake: a real failure, so isError.
    assert result.is_error is True
    body = payload(result)
    assert body["ok"] is False
    error = body["error"]
    assert error["code"] == "unavailable"
    assert str(tmp_path) not in error["message"]


async def test_prompts_offer_the_manual_and_the_recall(
    store: SqliteMemoryStore, bobs_record: MemoryRecord
) -> None:
    await store.write([MemoryWriteInput(scope=SCOPE, content="Is planning a trip to Kyoto.")])
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            prompts = (await client.list_prompts()).prompts
            manual = await client.get_prompt(MANUAL_PROMPT)
            recall = await client.get_prompt(RECALL_PROMPT, {"user_text": "trip plan Kyoto"})
            nothing = await client.get_prompt(RECALL_PROMPT, {"user_text": "zebra"})
            with pytest.raises(MCPError, match="user_text"):
                await client.get_prompt(RECALL_PROMPT, {})
            with pytest.raises(MCPError, match="no prompt named"):
                await client.get_prompt("memory_everything")
    assert {p.name: [a.name for a in p.arguments or []] for p in prompts} == {
        MANUAL_PROMPT: [],
        RECALL_PROMPT: ["user_text"],
    }
    (message,) = manual.messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == Manual.render()
    (message,) = recall.messages
    assert isinstance(message.content, types.TextContent)
    assert RECALL_OPEN in message.content.text
    assert "Kyoto" in message.content.text
    assert "Oslo" not in message.content.text
    (message,) = nothing.messages
    assert isinstance(message.content, types.TextContent)
    assert RECALL_OPEN not in message.content.text


def test_an_empty_scope_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="non-empty scope"):
        create_mcp_server(SqliteMemoryStore(tmp_path / "memory.db"), {})


async def test_resources_offer_the_manual_and_the_recall(
    store: SqliteMemoryStore, bobs_record: MemoryRecord
) -> None:
    await store.write(
        [
            MemoryWriteInput(scope=SCOPE, kind="profile", content="Name: Ana."),
            MemoryWriteInput(scope=SCOPE, content="Is planning a trip to Kyoto."),
        ]
    )
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            manual = await client.read_resource(MANUAL_URI)
            profile = await client.read_resource(RECALL_URI)
            for_message = await client.read_resource(RECALL_URI + "?query=trip%20plan%20Kyoto")
            with pytest.raises(MCPError, match="no resource"):
                await client.read_resource("recallstore://memory/everything")
            with pytest.raises(MCPError, match="only a 'query'"):
                await client.read_resource(RECALL_URI + "?scope=tenant")
    assert [(r.uri, r.mime_type) for r in resources] == [
        (MANUAL_URI, "text/plain"),
        (RECALL_URI, "text/plain"),
    ]
    assert [t.uri_template for t in templates] == [RECALL_URI_TEMPLATE]

    def text_of(result: types.ReadResourceResult) -> str:
        (content,) = result.contents
        assert isinstance(content, types.TextResourceContents)
        return content.text

    assert text_of(manual) == Manual.render()
    assert RECALL_OPEN in text_of(profile)
    assert "Name: Ana." in text_of(profile)
    assert "Kyoto" not in text_of(profile)
    assert "Name: Ana." in text_of(for_message)
    assert "Kyoto" in text_of(for_message)
    assert "Oslo" not in text_of(for_message)


async def test_two_model_mistakes_in_a_row_are_ordinary_results(store: SqliteMemoryStore) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            results = [
                await client.call_tool("memory_invalidate", {"id": f"missing-{n}"})
                for n in range(2)
            ]
    assert [result.is_error for result in results] == [True, True]
    assert [error_of(result)["code"] for result in results] == ["not_found", "not_found"]
