"""``recallstore distil``: no model without the host's, a dry run, --apply, --list and
--revert on a real SQLite file with a FunctionModel from the host's own module."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from tests.cli.conftest import read_all

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.capture import capture
from recallstore.cli._distil import NO_MODEL

ANA = {"tenant": "acme", "user": "ana"}
SCOPE = ["--scope", "tenant=acme", "--scope", "user=ana"]

HOST_MODULE = """
import re

from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

LINE = re.compile(r"^- id=(\\S+) conversation=\\S+ turn=\\S+ said \\S+: (.*)$", re.M)


def respond(messages, info):
    prompt = str(messages[-1].parts[-1].content)
    cites = [i for i, text in LINE.findall(prompt) if "9 am" in text]
    fact = {"content": "Ana never flies before 9 am.", "kind": "preference",
            "cites": cites, "reason": "she said it twice"}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"facts": [fact]})])


model = FunctionModel(respond)
not_a_model = 42
"""


def _seed(path: Path) -> None:
    async def go() -> None:
        async with SqliteMemoryStore(path) as store:
            for n in (1, 2):
                said = [("user", "Book Porto."), ("user", "Never before 9 am, please.")]
                await capture(store, ANA, said, conversation_id=f"c-{n}")

    asyncio.run(go())


@pytest.fixture
def host_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "host_models_l39.py").write_text(textwrap.dedent(HOST_MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "host_models_l39"


def test_without_a_model_it_says_how_to_plug_one_in(process, tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    before = read_all(path)
    result = process("distil", "--db", path, *SCOPE)
    assert result.code == 2
    assert NO_MODEL in result.err
    assert "--model" in result.err
    assert "--distiller MODULE:ATTRIBUTE" in result.err
    assert read_all(path) == before


def test_dry_run_apply_list_and_revert(cli, tmp_path: Path, host_module: str) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    before = read_all(path)
    model = ["--distiller", f"{host_module}:model"]

    dry = cli("distil", "--db", path, *SCOPE, *model)
    assert dry.code == 0, dry.err
    assert "+ [preference] Ana never flies before 9 am." in dry.out
    assert dry.out.count("user: Never before 9 am, please.") == 2
    assert dry.out.rstrip().endswith("dry run: nothing changed (add --apply to apply this plan)")
    assert read_all(path) == before

    as_json = cli("distil", "--db", path, *SCOPE, *model, "--json")
    assert as_json.code == 0, as_json.err
    document = json.loads(as_json.out)
    assert [f["content"] for f in document["facts"]] == ["Ana never flies before 9 am."]
    assert [c["conversation_id"] for c in document["facts"][0]["citations"]] == ["c-1", "c-2"]
    assert "dry run" in as_json.err

    applied = cli("distil", "--db", path, *SCOPE, *model, "--apply")
    assert applied.code == 0, applied.err
    plan_id = applied.out.rstrip().rsplit("--revert ", 1)[1]
    (added,) = [r for r in read_all(path) if r.id not in {b.id for b in before}]
    assert [s.conversation_id for s in added.supports] == ["c-1", "c-2"]

    listed = cli("distil", "--db", path, "--list")
    assert listed.out.strip() == f"{plan_id} applied 1 fact(s)"

    reverted = cli("distil", "--db", path, "--revert", plan_id)
    assert reverted.code == 0, reverted.err
    assert reverted.out.strip() == (
        f"reverted {plan_id}: 1 fact(s) invalidated, 0 corroboration(s) withdrawn"
    )
    after = {r.id: r for r in read_all(path)}
    assert after[added.id].is_invalidated
    assert [after[b.id] for b in before] == before
    assert cli("distil", "--db", path, "--list").out.strip() == f"{plan_id} reverted 1 fact(s)"
    again = cli("distil", "--db", path, "--revert", plan_id)
    assert again.code == 1
    assert "reverted already" in again.err


def test_a_distiller_that_is_not_one_is_refused(cli, tmp_path: Path, host_module: str) -> None:
    path = tmp_path / "memory.db"
    _seed(path)
    wrong = cli("distil", "--db", path, *SCOPE, "--distiller", f"{host_module}:not_a_model")
    assert wrong.code == 2
    assert "names a value of type int, neither a pydantic-ai model nor a distiller" in wrong.err
    missing = cli("distil", "--db", path, *SCOPE, "--distiller", f"{host_module}:nothing")
    assert missing.code == 2
    assert "nothing" in missing.err
