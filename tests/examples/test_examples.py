"""Every example runs offline as `python examples/X.py` and does what it says."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.records import MemorySearchQuery

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ANA = {"tenant": "acme", "user": "ana"}


def run_example(name: str, *args: str | Path) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *(str(arg) for arg in args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Traceback" not in completed.stderr
    return completed.stdout


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end, text.index(start))]


def test_every_example_is_tested() -> None:
    tested = {
        "agent_beside_the_lens.py",  # also driven beside `recallstore serve` in tests/dashboard
        "agent_loop.py",
        "host_with_sse.py",
        "two_conversations.py",
    }
    assert {path.name for path in EXAMPLES.glob("*.py")} <= tested


@pytest.mark.slow
def test_agent_loop_recalls_the_corrected_fact(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    out = run_example("agent_loop.py", db)
    first, second = out.split("=== conversation-2 ===")
    assert "(nothing recalled)" in first
    assert '"supersedes"' in first
    block = _between(second, "<recalled_memories>", "</recalled_memories>")
    assert "Works on the payments team." in block
    assert "billing" not in block
    assert "Prefers metric units." in block
    assert "'payments team' in its system prompt: True" in out
    assert "'billing team' in its system prompt:  False" in out
    assert db.is_file()


@pytest.mark.slow
def test_agent_loop_leaves_the_chain_in_the_database(tmp_path: Path) -> None:
    import json

    db = tmp_path / "memory.db"
    run_example("agent_loop.py", db)
    listed = subprocess.run(
        [sys.executable, "-m", "recallstore", "list", "--db", str(db), "--all", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    records = {r["content"]: r for r in json.loads(listed.stdout)}
    billing = records["Works on the billing team."]
    payments = records["Works on the payments team."]
    assert billing["superseded_by"] == payments["id"]
    assert payments["provenance"]["conversation_id"] == "conversation-1"


@pytest.mark.slow
def test_host_with_sse_streams_events_to_an_authorised_client() -> None:
    out = run_example("host_with_sse.py")
    assert "GET /health -> {'ok': True}" in out
    assert "without the token -> 401" in out
    assert "with the token -> 200, streaming:" in out
    events = re.findall(r"event #(\d+): (agent\.memory\.\w+)\s+conversation=(\S+)", out)
    kinds = {kind for _, kind, _ in events}
    assert kinds == {"agent.memory.write", "agent.memory.search", "agent.memory.recall"}
    assert {conversation for _, _, conversation in events} == {"conversation-1", "conversation-2"}
    ids = [int(number) for number, _, _ in events]
    assert ids == sorted(ids)
    assert "recalled ['My favourite editor is Helix.']" in out
    assert "'Helix' in any event: False" in out


@pytest.mark.slow
def test_two_conversations_example_recalls_the_correction(tmp_path: Path) -> None:
    db = tmp_path / "example.db"
    out = run_example("two_conversations.py", db)
    prompt = out.split("conversation 2, the system prompt the model saw:")[1]
    block = _between(prompt, "<recalled_memories>", "</recalled_memories>")
    assert "The user's name is Ana." in block
    assert "Ana is allergic to peanuts." in block
    assert "Ana lives in Lisbon (she moved from Berlin)." in block
    assert "Ana lives in Berlin." not in block  # superseded, so not recalled
    assert db.exists()


async def _valid_contents(db: Path) -> list[str]:
    async with SqliteMemoryStore(db) as store:
        hits = await store.search(MemorySearchQuery(scope=ANA, limit=100))
    return sorted(hit.record.content for hit in hits)


@pytest.mark.slow
def test_two_conversations_example_is_repeatable_on_one_file(tmp_path: Path) -> None:
    db = tmp_path / "example.db"
    outputs = [run_example("two_conversations.py", db) for _ in range(3)]
    assert asyncio.run(_valid_contents(db)) == [
        "Ana is allergic to peanuts.",
        "Ana lives in Lisbon (she moved from Berlin).",
        "The user's name is Ana.",
    ]
    # Each run recalls the same three memories for conversation 2.
    blocks = [
        _between(out.split("the system prompt the model saw:")[1], "Profile:", "</recalled")
        for out in outputs
    ]
    without_ids = [re.sub(r"id=\w+", "id=…", block) for block in blocks]
    assert without_ids == [without_ids[0]] * 3


@pytest.mark.slow
def test_agent_beside_the_lens_journals_each_conversation(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_beside_the_lens.py"), str(db)],
        input="Lives in Paris\nLikes green tea\n\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert answers[0] == {"ready": True}
    saved = [answer["saved"] for answer in answers[1:]]
    assert len(saved) == 2
    tail = subprocess.run(
        [sys.executable, "-m", "recallstore", "events", "tail", "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    events = [json.loads(line) for line in tail.stdout.splitlines()]
    writes = [e for e in events if e["type"] == "agent.memory.write"]
    assert [w["data"]["record_ids"] for w in writes] == [[record_id] for record_id in saved]
    # Each conversation's turn-1 recall (two searches and the recall itself), then its
    # save's look for an equal memory (write-time deduplication).
    kinds = [e["type"].rsplit(".", 1)[-1] for e in events if e["type"] != "agent.memory.write"]
    assert kinds == ["search", "search", "recall", "search"] * 2
    assert [e["id"] for e in events] == sorted({e["id"] for e in events})


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py")))
def test_help_prints_usage_and_creates_nothing(tmp_path: Path, example: str) -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / example), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f"usage: {example} [-h]")
    assert list(tmp_path.iterdir()) == []


def test_the_server_extra_brings_what_the_sse_example_imports() -> None:
    import tomllib

    project = tomllib.loads((EXAMPLES.parent / "pyproject.toml").read_text(encoding="utf-8"))
    server = {
        re.split(r"[<>=\[ ;]", dep)[0]
        for dep in project["project"]["optional-dependencies"]["server"]
    }
    source = (EXAMPLES / "host_with_sse.py").read_text(encoding="utf-8")
    imported = set(re.findall(r"^(?:import|from) (\w+)", source, flags=re.MULTILINE))
    third_party = imported - set(sys.stdlib_module_names) - {"recallstore", "__future__"}
    names = {"sse_starlette": "sse-starlette"}
    assert {names.get(name, name) for name in third_party} <= server
