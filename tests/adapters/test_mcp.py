"""The MCP adapter, driven by real MCP clients: in-process (most cases) and over stdio.

The scope is fixed by the server's builder (or CLI flags); these tests try to leave it
from the client side and check the answers are the toolbox's structured errors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session

from recallstore.adapters.mcp import MANUAL_PROMPT, RECALL_PROMPT, create_mcp_server
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
async def connect(store: SqliteMemoryStore) -> AsyncIterator[ClientSession]:
    """An initialized client session with an in-process server bound to SCOPE."""
    server = create_mcp_server(store, SCOPE, conversation_id="conv-1", run_id="run-1")
    async with create_connected_server_and_client_session(
        server, read_timeout_seconds=timedelta(seconds=TIMEOUT)
    ) as session:
        yield session


def payload(result: types.CallToolResult) -> dict[str, Any]:
    """The structured result, after checking the JSON text says exactly the same."""
    assert result.structuredContent is not None
    assert len(result.content) == 1
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert json.loads(text.text) == result.structuredContent
    return result.structuredContent


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    assert result.isError is True
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
        assert wire["outputSchema"] == expected[tool.name]["outputSchema"]
        assert wire["description"] == expected[tool.name]["description"]
        assert wire["annotations"] == expected[tool.name]["annotations"]
        assert "scope" not in wire["inputSchema"]["properties"]
    hints = {tool.name: tool.annotations for tool in listed}
    assert hints["memory_search"] is not None
    assert hints["memory_search"].readOnlyHint is True
    assert hints["memory_list"] is not None
    assert hints["memory_list"].readOnlyHint is True
    invalidate = hints["memory_invalidate"]
    assert invalidate is not None
    assert invalidate.destructiveHint is True
    assert invalidate.idempotentHint is True
    assert invalidate.readOnlyHint is False
    save = hints["memory_save"]
    assert save is not None
    assert save.destructiveHint is False
    assert save.readOnlyHint is False


async def test_save_then_search_is_stamped_with_the_bound_scope(store: SqliteMemoryStore) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(store) as client:
            saved = await client.call_tool(
                "memory_save",
                {"content": "Prefers window seats on long flights.", "kind": "preference"},
            )
            found = await client.call_tool("memory_search", {"query": "window seat"})
    assert saved.isError is False
    memory = payload(saved)["memory"]
    assert memory["kind"] == "preference"
    assert found.isError is False
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
    assert payload(searched) == {"ok": True, "count": 0, "memories": []}
    assert payload(listed) == {"ok": True, "count": 0, "memories": []}


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
        async with create_connected_server_and_client_session(server) as client:
            result = await client.call_tool("memory_save", {"content": "Likes tea."})
    error = error_of(result)
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
            with pytest.raises(McpError, match="user_text"):
                await client.get_prompt(RECALL_PROMPT, {})
            with pytest.raises(McpError, match="no prompt named"):
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


# --- over stdio, the way an MCP client really starts it -------------------------------


async def test_stdio_server_end_to_end(tmp_path: Path, bobs_record_on_disk: str) -> None:
    db = tmp_path / "memory.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "recallstore.adapters.mcp",
            "--db",
            str(db),
            "--scope",
            "tenant=acme",
            "--scope",
            "user=u1",
            "--conversation-id",
            "conv-stdio",
        ],
        cwd=str(tmp_path),
    )
    errlog_path = tmp_path / "server-stderr.txt"
    with errlog_path.open("w") as errlog, anyio.fail_after(60):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=timedelta(seconds=TIMEOUT)) as client,
        ):
            hello = await client.initialize()
            tools = (await client.list_tools()).tools
            saved = await client.call_tool("memory_save", {"content": "Speaks Portuguese."})
            found = await client.call_tool("memory_search", {"query": "portuguese"})
            escape = await client.call_tool("memory_list", {"scope": OTHER})
            foreign = await client.call_tool("memory_invalidate", {"id": bobs_record_on_disk})
            manual = await client.get_prompt(MANUAL_PROMPT)
    assert hello.serverInfo.name == "recallstore"
    assert hello.instructions == Manual.render()
    assert {tool.name for tool in tools} == TOOL_NAMES
    memory = payload(saved)["memory"]
    assert [m["id"] for m in payload(found)["memories"]] == [memory["id"]]
    assert error_of(escape)["code"] == "invalid_arguments"
    assert error_of(foreign)["code"] == "not_found"
    assert isinstance(manual.messages[0].content, types.TextContent)
    assert manual.messages[0].content.text == Manual.render()
    assert "Traceback" not in errlog_path.read_text()
    async with SqliteMemoryStore(db) as reopened:
        mine = await reopened.get(memory["id"])
        bobs = await reopened.get(bobs_record_on_disk)
    assert mine is not None
    assert mine.scope == SCOPE
    assert mine.provenance is not None
    assert mine.provenance.conversation_id == "conv-stdio"
    assert bobs is not None
    assert not bobs.is_invalidated


@pytest.fixture
async def bobs_record_on_disk(tmp_path: Path) -> str:
    """Another user's record, written into the database file before the server starts."""
    async with SqliteMemoryStore(tmp_path / "memory.db") as disk:
        (record,) = await disk.write([MemoryWriteInput(scope=OTHER, content="U2 lives in Oslo.")])
    return record.id


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--db", "{tmp}/m.db"], "at least one --scope"),
        (["--db", "{tmp}/m.db", "--scope", "user"], "expects key=value, got 'user'"),
        (["--db", "{tmp}/m.db", "--scope", "user="], "'user' needs a non-empty value"),
        (["--db", "{tmp}/m.db", "--scope", "=u1"], "expects key=value, got '=u1'"),
        (["--db", "{tmp}/m.db", "--scope", "user=a", "--scope", "user=b"], "twice"),
        (["--db", "{tmp}/missing/m.db", "--scope", "user=u1"], "directory does not exist"),
        (["--db", "{tmp}", "--scope", "user=u1"], "is a directory"),
        (["--scope", "user=u1"], "--db"),
        (["--db", "nosuch://x", "--scope", "user=u1"], "unknown scheme"),
    ],
)
def test_cli_mistakes_are_one_line(tmp_path: Path, args: list[str], expected: str) -> None:
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    done = subprocess.run(
        [sys.executable, "-m", "recallstore.adapters.mcp", *argv],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode in (1, 2)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("python -m recallstore.adapters.mcp: error: ")
    assert expected in lines[0]
    assert list(tmp_path.iterdir()) == []


_WITHOUT_MCP = "import sys; sys.modules['mcp'] = None; "


def test_without_the_extra_the_command_says_how_to_install_it() -> None:
    code = _WITHOUT_MCP + (
        "import runpy; runpy.run_module('recallstore.adapters.mcp', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "python -m recallstore.adapters.mcp: error: the MCP adapter needs the 'mcp' extra: "
        "pip install 'recallstore[mcp]'"
    ]


def test_without_the_extra_the_import_raises_missing_dependency() -> None:
    code = _WITHOUT_MCP + (
        "from recallstore.errors import MissingDependencyError\n"
        "try:\n"
        "    import recallstore.adapters.mcp\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc.install_command)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "pip install 'recallstore[mcp]'")
