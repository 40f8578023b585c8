"""``recallstore mcp`` over stdio, started the way an MCP client really starts it.

The official ``mcp`` client drives a real subprocess on a real SQLite file: tools with
schemas and annotations, the recall prompt and resource, ``--scope-fields``, another
tenant's records out of reach, and a client hang-up ending in exit 0, silently.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from recallstore.adapters.mcp import MANUAL_URI, RECALL_PROMPT, RECALL_URI
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.cli import main
from recallstore.prompt import RECALL_OPEN, Manual
from recallstore.records import MemoryRecord, MemorySearchQuery, MemoryWriteInput
from recallstore.toolset import MEMORY_TOOLS

SCOPE = {"tenant": "acme", "user": "u1"}
OTHER_TENANT = {"tenant": "globex", "user": "u1"}
OTHER_USER = {"tenant": "acme", "user": "u2"}
SCOPE_ARGS = ["--scope", "tenant=acme", "--scope", "user=u1", "--scope-fields", "tenant,user"]
TIMEOUT = 30
# Generous: on a loaded machine, starting the interpreter alone can take many seconds.
EXIT_TIMEOUT = 120


def mcp_command(db: Path, *extra: str) -> list[str]:
    """The argv of ``recallstore mcp`` for ``db``, run by this interpreter."""
    return [sys.executable, "-m", "recallstore", "mcp", "--db", str(db), *extra]


def server_params(db: Path, *extra: str) -> StdioServerParameters:
    command, *args = mcp_command(db, *extra)
    return StdioServerParameters(command=command, args=args, cwd=str(db.parent))


@pytest.fixture
async def foreign_records(tmp_path: Path) -> list[MemoryRecord]:
    """Records of another tenant (same user id) and another user, written before startup."""
    async with SqliteMemoryStore(tmp_path / "memory.db") as disk:
        return await disk.write(
            [
                MemoryWriteInput(scope=OTHER_TENANT, content="Globex u1: moving to Oslo."),
                MemoryWriteInput(scope=OTHER_USER, content="Acme u2: moving to Oslo too."),
            ]
        )


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.slow
async def test_the_official_client_drives_the_whole_surface(
    tmp_path: Path, foreign_records: list[MemoryRecord]
) -> None:
    db = tmp_path / "memory.db"
    params = server_params(db, *SCOPE_ARGS, "--conversation-id", "conv-stdio")
    with anyio.fail_after(TIMEOUT):
        async with Client(params, read_timeout_seconds=TIMEOUT) as client:
            instructions = client.instructions
            tools = (await client.list_tools()).tools
            saved = await client.call_tool(
                "memory_save", {"content": "Plans a move to Oslo next spring."}
            )
            searched = await client.call_tool("memory_search", {"query": "moving Oslo"})
            listed = await client.call_tool("memory_list", {})
            invalidated = [
                await client.call_tool("memory_invalidate", {"id": record.id})
                for record in foreign_records
            ]
            prompts = (await client.list_prompts()).prompts
            recall = await client.get_prompt(RECALL_PROMPT, {"user_text": "move to Oslo"})
            resources = (await client.list_resources()).resources
            recall_resource = await client.read_resource(RECALL_URI + "?query=move%20Oslo")

    assert instructions == Manual.render()
    assert [tool.name for tool in tools] == [spec.name for spec in MEMORY_TOOLS]
    for tool in tools:
        assert tool.input_schema["type"] == "object"
        assert "scope" not in tool.input_schema.get("properties", {})
        assert tool.output_schema is not None
        assert tool.annotations is not None
        assert tool.annotations.open_world_hint is False
    hints = {tool.name: tool.annotations for tool in tools}
    assert hints["memory_search"] is not None
    assert hints["memory_search"].read_only_hint is True
    invalidate_hints = hints["memory_invalidate"]
    assert invalidate_hints is not None
    assert invalidate_hints.destructive_hint is True

    mine = structured(saved)["memory"]["id"]
    # Another tenant's record for the same user id, and another user's, stay invisible.
    assert [m["id"] for m in structured(searched)["memories"]] == [mine]
    assert [m["id"] for m in structured(listed)["memories"]] == [mine]
    for result in invalidated:
        assert result.is_error is True
        assert structured(result)["error"]["code"] == "not_found"

    assert {prompt.name for prompt in prompts} == {"memory_manual", RECALL_PROMPT}
    (message,) = recall.messages
    assert isinstance(message.content, types.TextContent)
    assert RECALL_OPEN in message.content.text
    assert "next spring" in message.content.text
    assert "Globex" not in message.content.text
    assert "Acme u2" not in message.content.text
    assert {resource.uri for resource in resources} == {MANUAL_URI, RECALL_URI}
    (content,) = recall_resource.contents
    assert isinstance(content, types.TextResourceContents)
    assert "next spring" in content.text
    assert "Oslo too" not in content.text
    assert "Globex" not in content.text

    async with SqliteMemoryStore(db) as reopened:
        saved_record = await reopened.get(mine)
        foreign_now = [await reopened.get(record.id) for record in foreign_records]
    assert saved_record is not None
    assert saved_record.scope == SCOPE
    assert saved_record.provenance is not None
    assert saved_record.provenance.conversation_id == "conv-stdio"
    assert foreign_now == foreign_records


def run_command(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize(
    ("scope_args", "expected"),
    [
        (["--scope", "user=u1"], "pins the scope keys to tenant, user but --scope gives user"),
        (
            ["--scope", "tenant=acme", "--scope", "user=u1", "--scope", "team=t"],
            "--scope gives team, tenant, user",
        ),
    ],
)
@pytest.mark.slow
def test_scope_fields_refuse_another_shape_of_scope(
    tmp_path: Path, scope_args: list[str], expected: str
) -> None:
    done = run_command(
        mcp_command(tmp_path / "memory.db", *scope_args, "--scope-fields", "tenant,user")
    )
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("recallstore mcp: error: --scope-fields ")
    assert expected in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--db", "{tmp}/m.db"], "at least one --scope"),
        (["--db", "{tmp}/m.db", "--scope", "user"], "expects key=value, got 'user'"),
        (["--db", "{tmp}/m.db", "--scope", "user="], "'user' needs a non-empty value"),
        (["--db", "{tmp}/m.db", "--scope", "user=a", "--scope", "user=b"], "twice"),
        (["--db", "{tmp}/m.db", "--scope", "user=a", "--scope-fields", "user,"], "comma"),
        (["--db", "{tmp}/m.db", "--scope", "user=a", "--scope-fields", "tenant,user"], "pins"),
        (["--db", "{tmp}/m.db", "--scope", "user=a", "--token", "t"], "only with --http"),
        (["--db", "{tmp}/m.db", "--scope", "user=a", "--http", "--port", "70000"], "--port"),
        (["--db", "{tmp}/missing/m.db", "--scope", "user=u1"], "directory does not exist"),
        (["--db", "{tmp}", "--scope", "user=u1"], "is a directory"),
        (["--db", "nosuch://x", "--scope", "user=u1"], "unknown scheme"),
    ],
)
@pytest.mark.slow
def test_command_line_mistakes_are_one_line(
    tmp_path: Path, args: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    status = main(["mcp", *argv])
    out, err = capsys.readouterr()
    assert status in (1, 2)
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(("recallstore mcp: error: ", "recallstore: error: "))
    assert expected in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_python_dash_m_reports_mistakes_the_same_way(tmp_path: Path) -> None:
    done = run_command([sys.executable, "-m", "recallstore.adapters.mcp", "--db", "x.db"])
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "recallstore mcp: error: at least one --scope KEY=VALUE is required "
        "(e.g. --scope user=u_42); an unscoped memory server would expose every user's memories"
    ]


@pytest.mark.slow
async def test_python_dash_m_still_serves(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "recallstore.adapters.mcp", "--db", str(tmp_path / "m.db"), *SCOPE_ARGS],
    )
    with anyio.fail_after(TIMEOUT):
        async with Client(params, read_timeout_seconds=TIMEOUT) as client:
            tools = (await client.list_tools()).tools
    assert len(tools) == len(MEMORY_TOOLS)


# --- a client hanging up ----------------------------------------------------------------

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hangup-test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _hang_up_once(db: Path, how: str) -> tuple[int, str]:
    """Start the server, send tool calls, hang up mid-call as ``how`` says; (status, stderr)."""
    process = subprocess.Popen(
        mcp_command(db, *SCOPE_ARGS),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    # stderr is drained while the server runs: a server that has something to say must
    # not block on a full pipe (and hold the database) while the test waits for its exit.
    said: list[bytes] = []
    drain = threading.Thread(target=lambda: said.append(process.stderr.read()), daemon=True)  # type: ignore[union-attr]
    drain.start()
    lines = [INITIALIZE, INITIALIZED] + [
        _call(2 + n, "memory_save", {"content": f"Fact number {n}."}) for n in range(5)
    ]
    process.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    process.stdin.flush()
    process.stdout.readline()  # the initialize answer: the server is serving
    if how == "sigterm-idle":
        # Every answer read: the server waits for the next line when the signal comes.
        for _ in range(5):
            process.stdout.readline()
    if how.startswith("sigterm"):
        process.send_signal(signal.SIGTERM)
    else:
        # Stop reading and writing: the answers still in flight meet a closed pipe.
        process.stdout.close()
        process.stdin.close()
    try:
        status = process.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        drain.join(EXIT_TIMEOUT)
        stderr = b"".join(said).decode(errors="replace")
        return -1, f"still running {EXIT_TIMEOUT}s after the hang-up ({how}); stderr: {stderr}"
    drain.join(EXIT_TIMEOUT)
    return status, b"".join(said).decode()


@pytest.mark.slow
def test_a_client_hang_up_is_a_clean_exit_twenty_times_out_of_twenty(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    ways = ["close-pipes", "sigterm-mid-call", "sigterm-idle"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda n: _hang_up_once(db, ways[n % 3]), range(20)))
    assert outcomes == [(0, "")] * 20


async def _close_normally_once(db: Path, errlog: Path, number: int) -> None:
    """One session of the official client, closed the way it always closes its server."""
    with errlog.open("w") as stderr:
        transport = stdio_client(server_params(db, *SCOPE_ARGS), errlog=stderr)
        async with Client(transport, read_timeout_seconds=TIMEOUT) as client:
            await client.list_tools()
            saved = await client.call_tool("memory_save", {"content": f"Fact {number}."})
            assert structured(saved)["ok"] is True


@pytest.mark.slow
async def test_a_normal_client_close_prints_nothing_twenty_times_out_of_twenty(
    tmp_path: Path,
) -> None:
    # The client's stderr is the user's terminal: a normal close must leave nothing there.
    db = tmp_path / "memory.db"
    errlogs = [tmp_path / f"stderr-{number}.txt" for number in range(20)]
    two_at_a_time = anyio.CapacityLimiter(2)

    async def session(number: int) -> None:
        async with two_at_a_time:
            await _close_normally_once(db, errlogs[number], number)

    with anyio.fail_after(EXIT_TIMEOUT * 2):
        async with anyio.create_task_group() as sessions:
            for number in range(20):
                sessions.start_soon(session, number)
    assert [errlog.read_text() for errlog in errlogs] == [""] * 20
    async with SqliteMemoryStore(db) as reopened:
        saved = await reopened.search(MemorySearchQuery(scope=SCOPE, limit=50))
    assert len(saved) == 20


@pytest.mark.slow
def test_an_incompatible_mcp_sdk_is_named_with_both_versions(tmp_path: Path) -> None:
    # A distribution record for an old SDK ahead of the real one on the path, as a stale
    # install leaves it: the check must name it, not claim the extra is missing.
    fake = tmp_path / "site" / "mcp-1.26.0.dist-info"
    fake.mkdir(parents=True)
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp\nVersion: 1.26.0\n")
    done = run_command(
        mcp_command(tmp_path / "m.db", *SCOPE_ARGS), PYTHONPATH=str(tmp_path / "site")
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "recallstore: error: the MCP adapter needs mcp>=2,<3, but mcp 1.26.0 is installed: "
        "pip install 'recallstore[mcp]' (from a clone: pip install -e '.[mcp]')"
    ]


_WITHOUT_MCP = "import sys; sys.modules['mcp'] = None; "


@pytest.mark.slow
def test_without_the_extra_python_dash_m_says_how_to_install_it() -> None:
    code = _WITHOUT_MCP + (
        "import runpy; runpy.run_module('recallstore.adapters.mcp', run_name='__main__')"
    )
    done = run_command([sys.executable, "-c", code])
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "recallstore mcp: error: the MCP adapter needs the 'mcp' extra: "
        "pip install 'recallstore[mcp]' (from a clone: pip install -e '.[mcp]')"
    ]


@pytest.mark.slow
def test_without_the_extra_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    code = _WITHOUT_MCP + (
        "from recallstore.cli import main; "
        f"sys.exit(main(['mcp', '--db', {str(tmp_path / 'm.db')!r}, '--scope', 'user=u1']))"
    )
    done = run_command([sys.executable, "-c", code])
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "recallstore: error: the MCP adapter needs the 'mcp' extra: "
        "pip install 'recallstore[mcp]' (from a clone: pip install -e '.[mcp]')"
    ]


def test_without_the_extra_the_import_raises_missing_dependency() -> None:
    code = _WITHOUT_MCP + (
        "from recallstore.errors import MissingDependencyError\n"
        "try:\n"
        "    import recallstore.adapters.mcp\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc.install_command)\n"
    )
    done = run_command([sys.executable, "-c", code])
    assert (done.returncode, done.stdout.strip()) == (0, "pip install 'recallstore[mcp]'")
