"""``recallstore mcp`` driven by langchain-mcp-adapters over stdio.

langchain-mcp-adapters (0.3.2, its current release) pins ``mcp<2`` and its 0.3.1 does
not import with mcp 2, so it cannot live in recallstore's dev environment (mcp 2.x).
It runs from its own environment instead, ``.venv-langchain`` (``make
.venv-langchain/.installed``; ``make test`` builds it), against the server started from this one:
an mcp 1.x client talking to the mcp 2.x server, as users mixing both will do. The
interpreter may be given as $RECALLSTORE_LANGCHAIN_MCP_PYTHON; without one the test is
skipped unless $RECALLSTORE_REQUIRE_LANGCHAIN_MCP=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recallstore.adapters.mcp import MANUAL_URI, RECALL_URI
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.prompt import RECALL_OPEN, Manual
from recallstore.records import MemoryRecord, MemoryWriteInput
from recallstore.toolset import MEMORY_TOOLS

_REPO = Path(__file__).resolve().parents[2]
_CLIENT = Path(__file__).with_name("_langchain_mcp_client.py")


def _langchain_python() -> str:
    configured = os.environ.get("RECALLSTORE_LANGCHAIN_MCP_PYTHON")
    candidate = Path(configured) if configured else _REPO / ".venv-langchain" / "bin" / "python"
    if candidate.exists():
        return str(candidate)
    if os.environ.get("RECALLSTORE_REQUIRE_LANGCHAIN_MCP") == "1":
        pytest.fail(f"no langchain-mcp-adapters environment at {candidate}")
    pytest.skip(
        f"no langchain-mcp-adapters environment at {candidate} (make .venv-langchain/.installed)"
    )


async def _write_foreign(db: Path) -> MemoryRecord:
    async with SqliteMemoryStore(db) as disk:
        (foreign,) = await disk.write(
            [MemoryWriteInput(scope={"tenant": "globex", "user": "u1"}, content="Globex plan.")]
        )
    return foreign


async def _read(db: Path, record_id: str) -> MemoryRecord | None:
    async with SqliteMemoryStore(db) as disk:
        return await disk.get(record_id)


@pytest.mark.slow
def test_langchain_mcp_adapters_drive_the_server(tmp_path: Path) -> None:
    python = _langchain_python()
    db = tmp_path / "memory.db"
    foreign = asyncio.run(_write_foreign(db))
    server = [sys.executable, "-m", "recallstore", "mcp", "--db", str(db)]
    server += ["--scope", "tenant=acme", "--scope", "user=u1", "--scope-fields", "tenant,user"]
    done = subprocess.run(
        # -P: not this folder on sys.path, where tests/adapters/langgraph/ would pass for
        # the langgraph package that langchain-mcp-adapters probes for.
        [python, "-P", str(_CLIENT), foreign.id, *server],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)

    assert seen["tools"] == [spec.name for spec in MEMORY_TOOLS]
    for spec in MEMORY_TOOLS:
        schema = seen["schemas"][spec.name]
        assert schema["properties"] == spec.input_schema()["properties"]
        assert "scope" not in schema["properties"]
        metadata = seen["metadata"][spec.name]
        assert metadata["readOnlyHint"] is spec.read_only
        assert metadata["destructiveHint"] is spec.destructive
        assert metadata["openWorldHint"] is False

    assert '"ok": true' in seen["saved"]
    assert "Prefers aisle seats." in seen["listed"]
    assert "Globex" not in seen["listed"]
    (foreign_answer,) = seen["foreign_invalidate"]
    assert '"code": "not_found"' in foreign_answer
    # The same mistake in-process is a ToolMessage with status="error"
    # (tests/adapters/test_langchain.py); over MCP it must read the same.
    message = seen["foreign_invalidate_message"]
    assert message["status"] == "error"
    assert '"code": "not_found"' in message["content"]
    (prompt,) = seen["prompt"]
    assert RECALL_OPEN in prompt
    assert "Prefers aisle seats." in prompt
    assert seen["resources"][MANUAL_URI] == Manual.render()
    assert "Prefers aisle seats." not in seen["resources"][RECALL_URI]  # profile tier only

    assert asyncio.run(_read(db, foreign.id)) == foreign
