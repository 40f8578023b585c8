"""docs/framework-adapters.md's snippets, by heading (no framework imported here: the
CrewAI snippet's test runs in .venv-crewai, where the other frameworks are not)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "framework-adapters.md"
MAX_LINES = 10
"""Lines of glue a snippet may have, imports and the store's opening included."""


def snippets() -> dict[str, str]:
    """The one Python block under each second-level heading, by heading."""
    found: dict[str, str] = {}
    for section in re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        blocks = re.findall(r"```python\n(.*?)```", body, re.S)
        if blocks:
            [found[heading.strip()]] = blocks
    return found
