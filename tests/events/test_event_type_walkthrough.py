"""docs/contributing.md's "Adding an event type", followed word for word.

The package is copied to a temporary folder; the page's module block becomes
``events/read.py`` and its catalogue line replaces ``EVENT_CATALOGUE`` — the only two
edits the page names. A subprocess importing the copy then checks that the new type is
everywhere the catalogue reaches: the observed store emits it after a ``get``, the
parser reads it back, the manifest lists it with its lens view, and the dashboard's
feed page carries that view for lens.js.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
SECTION = PAGE[PAGE.index("## Adding an event type") :]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)

_PROBE = r"""
import asyncio, json
import httpx
from recallstore.dashboard import create_dashboard_app
from recallstore import InMemoryMemoryStore, MemoryWriteInput
from recallstore.events import EVENT_TYPES, EventBus, ObservedMemoryStore
from recallstore.events.catalogue import EVENT_LENS, parse_event
from recallstore.events.manifest import build_manifest

TOKEN = "walkthrough-token-0123456789"

async def main():
    bus = EventBus()
    seen = []
    bus.add_listener(seen.append)
    async with ObservedMemoryStore(InMemoryMemoryStore(), bus) as store:
        [record] = await store.write([MemoryWriteInput(scope={"user": "u1"}, content="tea")])
        await store.get(record.id)
        await store.get("no-such-record")
    reads = [event for event in seen if event.type == "agent.memory.read"]
    manifest = build_manifest()
    app = create_dashboard_app(InMemoryMemoryStore(), EventBus(), token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        page = (await http.get("/", headers=headers)).text
    return {
        "reads": [event.model_dump(mode="json") for event in reads],
        "parsed": parse_event(reads[0].model_dump_json()).type,
        "types": list(EVENT_TYPES),
        "lens": manifest["events"]["agent.memory.read"].get("lens"),
        "catalogue_lens": {name: view.summary for name, view in EVENT_LENS.items()},
        "record_id": record.id,
        "page": page,
    }

print(json.dumps(asyncio.run(main())))
"""


def _follow_the_walkthrough(package: Path) -> None:
    module, line = BLOCKS
    (package / "events" / "read.py").write_text(module, encoding="utf-8")
    catalogue = package / "events" / "catalogue.py"
    text = catalogue.read_text(encoding="utf-8")
    old = re.search(r"^EVENT_CATALOGUE: .*$", text, re.M)
    assert old is not None
    text = text.replace(old.group(0), line.strip())
    # "with READ_EVENT imported beside the other imports"
    text = text.replace(
        "from recallstore.events.models import (",
        "from recallstore.events.read import READ_EVENT\nfrom recallstore.events.models import (",
        1,
    )
    catalogue.write_text(text, encoding="utf-8")


@pytest.mark.slow
def test_the_walkthrough_adds_an_event_type_everywhere(tmp_path: Path) -> None:
    assert len(BLOCKS) == 2, "the section has the module block and the catalogue line"
    source = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "recallstore", source / "recallstore")
    _follow_the_walkthrough(source / "recallstore")
    env = {**os.environ, "PYTHONPATH": str(source)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    found, missing = result["reads"]
    assert found["data"] == {"record_id": result["record_id"], "found": True}
    assert found["scope"] == {"user": "u1"}
    assert missing["data"] == {"record_id": "no-such-record", "found": False}
    assert result["parsed"] == "agent.memory.read"
    assert "agent.memory.read" in result["types"]
    assert result["lens"] == {"summary": "read · {record_id}", "details": ["found"]}
    assert result["catalogue_lens"] == {"agent.memory.read": "read · {record_id}"}
    # The feed page hands the view to lens.js, which renders the type from it.
    [lens_attribute] = re.findall(r"data-event-lens='([^']*)'", result["page"])
    assert json.loads(html.unescape(lens_attribute)) == {"agent.memory.read": result["lens"]}


def test_the_real_catalogue_holds_no_walkthrough_type() -> None:
    # The walk-through changes a copy only; the shipped catalogue is the built-in types.
    from recallstore.events.catalogue import BUILT_IN_EVENT_TYPES, EVENT_CATALOGUE

    assert EVENT_CATALOGUE == BUILT_IN_EVENT_TYPES
    assert not (ROOT / "src" / "recallstore" / "events" / "read.py").exists()
