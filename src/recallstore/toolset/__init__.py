"""The memory tools, declared once and bound to no store or scope: :data:`MEMORY_TOOLS`.

Each tool is a :class:`~recallstore.tools.ToolSpec` whose ``run`` receives a
:class:`~recallstore.scoped_memory.ScopedMemory` — one scope's memory — and the
validated arguments. A framework that declares its tools when the agent is built reads
names, schemas, descriptions and hints from these specs; a
:class:`~recallstore.toolbox.MemoryToolbox` binds them to a conversation's scope. A host
adds or removes tools by passing its own sequence of specs to the toolbox.
"""

from __future__ import annotations

from collections.abc import Iterable

from recallstore.errors import ConfigurationError
from recallstore.tools import ToolSpec
from recallstore.toolset._common import (
    DEFAULT_TOOL_LIMIT,
    MAX_TOOL_CONTENT_CHARS,
    MAX_TOOL_LIMIT,
    MAX_TOOL_QUERY_CHARS,
    MAX_TOOL_REASON_CHARS,
    MAX_TOOL_TAGS,
    MemoriesResult,
    MemoryToolSpec,
    MemoryView,
)
from recallstore.toolset.invalidate import (
    MEMORY_INVALIDATE,
    InvalidateArguments,
    InvalidateResult,
)
from recallstore.toolset.listing import MEMORY_LIST, ListArguments
from recallstore.toolset.save import MEMORY_SAVE, SaveArguments, SaveResult
from recallstore.toolset.search import MEMORY_SEARCH, SearchArguments

__all__ = [
    "DEFAULT_TOOL_LIMIT",
    "MAX_TOOL_CONTENT_CHARS",
    "MAX_TOOL_LIMIT",
    "MAX_TOOL_QUERY_CHARS",
    "MAX_TOOL_REASON_CHARS",
    "MAX_TOOL_TAGS",
    "MEMORY_INVALIDATE",
    "MEMORY_LIST",
    "MEMORY_SAVE",
    "MEMORY_SEARCH",
    "MEMORY_TOOLS",
    "InvalidateArguments",
    "InvalidateResult",
    "ListArguments",
    "MemoriesResult",
    "MemoryToolSpec",
    "MemoryView",
    "SaveArguments",
    "SaveResult",
    "SearchArguments",
    "check_toolset",
]

MEMORY_TOOLS: tuple[MemoryToolSpec, ...] = (
    MEMORY_SAVE,
    MEMORY_SEARCH,
    MEMORY_LIST,
    MEMORY_INVALIDATE,
)
"""The default memory tools, in the order they are offered. There is no delete tool:
forgetting is the host's call."""


def check_toolset(tools: Iterable[MemoryToolSpec]) -> tuple[MemoryToolSpec, ...]:
    """``tools`` as a tuple, after checking a toolbox can offer them safely.

    Raises :class:`~recallstore.errors.ConfigurationError` naming the problem: no tools,
    something that is not a :class:`~recallstore.tools.ToolSpec` (a bound ``Tool``
    would reach its store without the toolbox's scope), a repeated name, or an argument
    named ``scope`` (the scope is the host's, never the model's).
    """
    if isinstance(tools, str | bytes | ToolSpec):
        raise ConfigurationError(f"tools must be a sequence of tool specs, got {tools!r}")
    specs = tuple(tools)
    if not specs:
        raise ConfigurationError("a memory toolbox needs at least one tool (e.g. MEMORY_TOOLS)")
    seen: set[str] = set()
    for spec in specs:
        if not isinstance(spec, ToolSpec):
            raise ConfigurationError(
                f"tools must be ToolSpec instances (e.g. from MEMORY_TOOLS), got {spec!r}"
            )
        if spec.name in seen:
            raise ConfigurationError(f"two tools are named {spec.name!r}; tool names must differ")
        seen.add(spec.name)
        if "scope" in spec.argument_names():
            raise ConfigurationError(
                f"tool {spec.name!r} takes a 'scope' argument; the scope is bound by the "
                "toolbox and must never come from the model"
            )
    return specs
