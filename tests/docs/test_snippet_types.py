"""Every Python snippet of the docs passes ``mypy --strict`` as pasted.

docs/integrations.md's snippets are checked by heading; the other pages' (listed in
``OTHER_PAGES``, every page with Python a reader pastes into an application) by
position.

A reader pastes a snippet into a typed codebase; a snippet that only runs is not enough.
Each snippet is checked with the few names the page says the reader brings (``store``,
``model``, ``client``), declared with their types ahead of it. A snippet that cannot
type-check in isolation must be listed in ``UNCHECKED`` with the reason, never skipped
silently; a new snippet without its names fails until someone decides.
"""

from __future__ import annotations

import re
import subprocess
import sys
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
}
"""What the reader brings to each snippet, by heading."""

_MCP_TOOLSET = "from pydantic_ai.mcp import MCPToolset\nmemory: MCPToolset\n"
_USER = "user_id: str\n"

OTHER_PAGES: dict[str, dict[int, str]] = {
    "README.md": {0: "", 1: ""},
    "docs/adapters.md": {0: _USER + "model: str\n", 1: _MCP_TOOLSET, 2: _USER, 3: ""},
    "docs/langgraph.md": {},
    "docs/quickstart.md": {0: ""},
}
"""The other pages' snippets, by position, with what the reader brings to each; a page's
snippets missing here fail the check until someone decides."""

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
        path.write_text(f"# docs/integrations.md: {heading}\n{_STORE}{GIVEN[heading]}{code}")
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


def test_every_snippet_of_the_other_pages_is_listed() -> None:
    for page, given in OTHER_PAGES.items():
        blocks = _python_blocks(page)
        listed = given if given else dict.fromkeys(range(len(blocks)), "")
        assert set(listed) == set(range(len(blocks))), page


@pytest.mark.slow
def test_every_snippet_of_the_other_pages_passes_mypy_strict(tmp_path: Path) -> None:
    files: list[str] = []
    for page, given in OTHER_PAGES.items():
        for index, code in enumerate(_python_blocks(page)):
            path = tmp_path / f"{Path(page).stem.replace('-', '_')}_{index}.py"
            path.write_text(f"# {page} [{index}]\n{given.get(index, '')}{code}")
            files.append(str(path))
    assert files
    mypy = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml")]
    result = subprocess.run(
        [*mypy, *files], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
