"""Every Python snippet of the docs passes ``mypy --strict`` as pasted.

docs/integrations.md's snippets are checked by heading; the other pages' (listed in
``OTHER_PAGES``: every other page of docs/ and the README with a Python snippet) by
position.

A reader pastes a snippet into a typed codebase; a snippet that only runs is not enough.
Each snippet is checked with the few names the page says the reader brings (``store``,
``model``, ``client``), declared with their types ahead of it. A snippet that cannot
type-check in isolation must be listed in ``UNCHECKED`` with the reason, never skipped
silently; a new snippet without its names fails until someone decides.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.docs.test_integrations import snippets

ROOT = Path(__file__).resolve().parents[2]

_STORE = "from recallstore.store import MemoryStore\nstore: MemoryStore\n"
_CHAT_MODEL = "from langchain_core.language_models import BaseChatModel\nmodel: BaseChatModel\n"
_ANTHROPIC = "from anthropic import AsyncAnthropic\nclient: AsyncAnthropic\nmodel: str\n"

GIVEN: dict[str, str] = {
    "pydantic-ai": "from pydantic_ai.models import Model\nmodel: Model\n",
    "OpenAI Agents SDK": "from agents import Model\nmodel: Model\n",
    "Google ADK": "from google.adk.models import BaseLlm\nmodel: BaseLlm\n",
    "LangChain": _CHAT_MODEL,
    "LangChain create_agent": _CHAT_MODEL,
    "LangGraph store": _CHAT_MODEL,
    "Anthropic SDK": _ANTHROPIC,
    "Anthropic memory tool": _ANTHROPIC,
    "pydantic-ai: run_sync": "from pydantic_ai.models import Model\nmodel: Model\n",
    "OpenAI Agents SDK: Runner.run_sync": "from agents import Model\nmodel: Model\n",
    "Google ADK: Runner.run": "from google.adk.models import BaseLlm\nmodel: BaseLlm\n",
    "LangChain: invoke": _CHAT_MODEL,
    "LangGraph store: invoke": _CHAT_MODEL,
    "smolagents": "from smolagents import Model\nmodel: Model\n",
    "DSPy": "",
}
"""What the reader brings to each snippet, by heading."""

_MCP_TOOLSET = "from pydantic_ai.mcp import MCPToolset\nmemory: MCPToolset\n"
_USER = "user_id: str\n"
_SCOPE = "scope: dict[str, str]\n"
_MY_STORE = (
    "from collections.abc import Callable\nfrom pathlib import Path\nimport pytest\n"
    "from recallstore.store import MemoryStore\n"
    "from recallstore.testing import MemoryStoreConformance\n"
    "from my_package import MyMemoryStore\n"
)
_STORE_MODELS = (
    "from collections.abc import Sequence\nfrom typing import Protocol\n"
    "from recallstore.records import MemoryHit, MemoryRecord, MemorySearchQuery, "
    "MemoryStoreCapabilities, MemoryWriteInput\n"
)
IN_ASYNC_FUNCTION = "# in an async function\n"
"""Marks a snippet a reader pastes into the body of an ``async def`` (it awaits at its top
level): it is checked there, indented, after the names declared above the marker."""

OTHER_PAGES: dict[str, dict[int, str]] = {
    "README.md": {0: "", 1: ""},
    "docs/adapters.md": {0: _USER + "model: str\n", 1: _MCP_TOOLSET, 2: _USER, 3: ""},
    "docs/agent-surface.md": {
        0: _STORE + "session_scope: dict[str, str]\nuser_message: str\n" + IN_ASYNC_FUNCTION,
        1: "",
        2: _STORE
        + "from typing import Any\nfrom recallstore import ScopedMemory, ToolSpec\n"
        + "scope_from_the_run: dict[str, str]\nspec: ToolSpec[Any, Any, Any]\n"
        + "arguments: dict[str, Any]\n"
        + IN_ASYNC_FUNCTION,
        3: _STORE + _SCOPE,
        4: "from recallstore import MemoryInstance\nmemory: MemoryInstance\n" + IN_ASYNC_FUNCTION,
    },
    "docs/backends.md": {0: "", 1: "", 2: "", 3: ""},
    "docs/capture.md": {0: ""},
    "docs/conformance.md": {0: "", 1: _MY_STORE, 2: _MY_STORE},
    "docs/consolidation.md": {0: ""},
    "docs/learning.md": {0: ""},
    "docs/contributing.md": {
        0: _STORE + _SCOPE + "from recallstore import ToolSpec\nfrom typing import Any\n"
        "MEMORY_GET: ToolSpec[Any, Any, Any]\n",
        1: "",
        2: "from typing import Any, Final\nfrom recallstore.events._event_type import EventType\n"
        "from recallstore.events.catalogue import BUILT_IN_EVENT_TYPES\n"
        "READ_EVENT: EventType[Any]\n",
    },
    "docs/dashboard.md": {
        0: "",
        1: "from recallstore.store import MemoryStore\nraw_store: MemoryStore\nsecret: str\n",
    },
    "docs/framework-adapters.md": {
        0: "from typing import Any\nfrom agent_framework import SupportsChatGetResponse\n"
        "client: SupportsChatGetResponse[Any]\n",
        1: "from llama_index.core.llms.function_calling import FunctionCallingLLM\n"
        "llm: FunctionCallingLLM\n",
        2: "",  # CrewAI: not installed beside mypy (.venv-crewai), so its names are Any here
    },
    "docs/hybrid-search.md": {
        0: "from recallstore.embedding import Embedder\nmy_embedder: Embedder\n",
        1: "from recallstore import SqliteMemoryStore\n",
        2: "from typing import Protocol\n"
        "class EmbeddingClient(Protocol):  # the reader's API client\n"
        "    async def embed(self, texts: list[str]) -> list[list[float]]: ...\n"
        "my_client: EmbeddingClient\n",
    },
    "docs/langgraph.md": {},
    "docs/native-memory.md": {
        0: "from strands.models import Model\nmodel: Model\n",
        1: "from strands.models import Model\nmodel: Model\n",
        2: "from agno.models.base import Model\nmodel: Model\n",
        3: "",
    },
    "docs/observability.md": {0: "", 1: "from recallstore import SqliteMemoryStore\n", 2: ""},
    "docs/postgres.md": {0: "", 1: "", 2: "", 3: "", 4: ""},
    "docs/quickstart.md": {0: ""},
    "docs/sqlite.md": {0: ""},
    "docs/store-protocol.md": {0: _STORE_MODELS, 1: _STORE_MODELS, 2: ""},
    "docs/testing.md": {0: "", 1: "", 2: ""},
}
"""Every page's snippets, by position, with what the reader brings to each; a page with a
Python snippet that is missing here, or a snippet missing from its page's entry, fails the
check until someone decides."""

MY_PACKAGE = (
    "from recallstore.backends.sqlite import SqliteMemoryStore\n\n\n"
    "class MyMemoryStore(SqliteMemoryStore):\n"
    '    """The reader\'s own store (docs/conformance.md imports it from my_package)."""\n'
)
"""``my_package``, the reader's own backend package that docs/conformance.md imports."""

UNCHECKED: dict[str, str] = {}
"""Snippets exempt from the check, by heading, each with the reason (none today)."""


def test_every_snippet_is_checked_or_exempt_with_a_reason() -> None:
    assert set(snippets()) == set(GIVEN) | set(UNCHECKED)
    assert not set(GIVEN) & set(UNCHECKED)
    assert all(reason.strip() for reason in UNCHECKED.values())


@pytest.mark.slow
def test_every_snippet_passes_mypy_strict(tmp_path: Path) -> None:
    checked = {heading: code for heading, code in snippets().items() if heading in GIVEN}
    files: list[str] = []
    for index, (heading, code) in enumerate(checked.items()):
        path = tmp_path / f"snippet_{index}.py"
        # A blocking form opens its own SyncMemoryStore: the reader brings no store.
        store = "" if "SyncMemoryStore(" in code else _STORE
        path.write_text(f"# docs/integrations.md: {heading}\n{store}{GIVEN[heading]}{code}")
        files.append(str(path))
    mypy = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml")]
    result = subprocess.run(
        [*mypy, *files],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.S)


def test_every_page_with_python_is_listed() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    with_python = {
        str(path.relative_to(ROOT)) for path in pages if _python_blocks(str(path.relative_to(ROOT)))
    }
    assert with_python - {"docs/integrations.md"} == set(OTHER_PAGES)


def test_every_snippet_of_the_other_pages_is_listed() -> None:
    for page, given in OTHER_PAGES.items():
        blocks = _python_blocks(page)
        listed = given if given else dict.fromkeys(range(len(blocks)), "")
        assert set(listed) == set(range(len(blocks))), page


def as_checked(given: str, code: str) -> str:
    """The file mypy checks: the names the reader brings, then the snippet (inside an
    ``async def`` when the page pastes it there)."""
    names, marker, _ = given.partition(IN_ASYNC_FUNCTION)
    if not marker:
        return given + code
    return f"{names}\n\nasync def _reader_code() -> None:\n{textwrap.indent(code, '    ')}"


def test_a_snippet_pasted_into_an_async_function_is_checked_there() -> None:
    checked = as_checked("x: int\n" + IN_ASYNC_FUNCTION, "await f(x)\n")
    assert checked == "x: int\n\n\nasync def _reader_code() -> None:\n    await f(x)\n"


@pytest.mark.slow
def test_every_snippet_of_the_other_pages_passes_mypy_strict(tmp_path: Path) -> None:
    (tmp_path / "my_package.py").write_text(MY_PACKAGE)
    files: list[str] = [str(tmp_path / "my_package.py")]
    for page, given in OTHER_PAGES.items():
        for index, code in enumerate(_python_blocks(page)):
            path = tmp_path / f"{Path(page).stem.replace('-', '_')}_{index}.py"
            path.write_text(f"# {page} [{index}]\n{as_checked(given.get(index, ''), code)}")
            files.append(str(path))
    mypy = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml")]
    result = subprocess.run(
        [*mypy, *files],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": f"{ROOT / 'src'}{os.pathsep}{tmp_path}"},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
