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
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from recallstore._tool_time import (
    SearchedWindow,
    Since,
    Until,
    search_with_query_time,
    searched_window,
)
from recallstore.errors import ConfigurationError
from recallstore.records import MAX_TAG_CHARS, MemoryHit, MemoryKind, MemoryRecord
from recallstore.tools import ToolArguments, ToolFailure, ToolResult, ToolSpec

if TYPE_CHECKING:
    # Only for types: the specs bind to no store, so the pure Manual may import them.
    from recallstore.scoped_memory import ScopedMemory

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

MemoryToolSpec: TypeAlias = ToolSpec["ScopedMemory", Any, Any]
"""A tool spec a :class:`~recallstore.toolbox.MemoryToolbox` can bind: ``run`` takes a
:class:`~recallstore.scoped_memory.ScopedMemory` and the validated arguments."""

MAX_TOOL_CONTENT_CHARS = 2_000
"""Longest memory a model may save: a memory is a short fact, not a document."""
MAX_TOOL_QUERY_CHARS = 500
MAX_TOOL_TAGS = 8
MAX_TOOL_REASON_CHARS = 500
DEFAULT_TOOL_LIMIT = 10
MAX_TOOL_LIMIT = 50
_MAX_ID_CHARS = 128

_Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]
_Kinds = Annotated[
    list[MemoryKind] | None,
    Field(description="Only memories of these kinds. Default: null (every kind)."),
]
_Tags = Annotated[
    list[_Tag] | None,
    Field(
        max_length=MAX_TOOL_TAGS,
        description="Only memories carrying every one of these tags. Default: null (no filter).",
    ),
]
_Limit = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_TOOL_LIMIT,
        description=(
            f"Most memories to return, 1 to {MAX_TOOL_LIMIT}. Default: {DEFAULT_TOOL_LIMIT}."
        ),
    ),
]


class MemoryView(BaseModel):
    """The compact, prompt-friendly form of a record a model sees."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: MemoryKind
    content: str
    tags: list[str]
    date: str = Field(description="The day the memory was saved (YYYY-MM-DD, UTC).")
    observed: str | None = Field(
        default=None,
        description="The day the remembered thing was said or happened, when not the day "
        "it was saved (YYYY-MM-DD, UTC).",
    )

    @classmethod
    def of(cls, record: MemoryRecord) -> MemoryView:
        """The view of ``record``."""
        saved, observed = (
            moment.strftime("%Y-%m-%d") for moment in (record.created_at, record.observed_at)
        )
        return cls(
            id=record.id,
            kind=record.kind,
            content=record.content,
            tags=list(record.tags),
            date=saved,
            observed=None if observed == saved else observed,
        )


class SaveArguments(ToolArguments):
    """Arguments of memory_save."""

    content: str = Field(
        min_length=1,
        max_length=MAX_TOOL_CONTENT_CHARS,
        description=(
            "The memory as one self-contained sentence, written so it makes sense in a later "
            f"conversation. At most {MAX_TOOL_CONTENT_CHARS} characters."
        ),
    )
    kind: MemoryKind = Field(
        default="fact",
        description=(
            "profile: a core, lasting fact about the user (name, role, location); "
            "preference: how the user likes things done; fact: anything else worth keeping; "
            "episode: something that happened. Default: fact."
        ),
    )
    tags: list[_Tag] = Field(
        default_factory=list,
        max_length=MAX_TOOL_TAGS,
        description=(
            f"Optional short labels to filter by later, at most {MAX_TOOL_TAGS} tags of at most "
            f"{MAX_TAG_CHARS} characters each. Default: none."
        ),
    )
    supersedes: str | None = Field(
        default=None,
        min_length=1,
        max_length=_MAX_ID_CHARS,
        description=(
            "The id of a memory this one corrects or updates; that memory stops being recalled. "
            "Use it instead of saving a contradicting memory. Default: null."
        ),
    )


class SearchArguments(ToolArguments):
    """Arguments of memory_search."""

    query: str = Field(
        min_length=1,
        max_length=MAX_TOOL_QUERY_CHARS,
        description=f"Words to look for in saved memories. At most {MAX_TOOL_QUERY_CHARS} chars.",
    )
    kinds: _Kinds = None
    tags: _Tags = None
    limit: _Limit = DEFAULT_TOOL_LIMIT
    since: Since = None
    until: Until = None


class ListArguments(ToolArguments):
    """Arguments of memory_list."""

    kinds: _Kinds = None
    tags: _Tags = None
    limit: _Limit = DEFAULT_TOOL_LIMIT
    since: Since = None
    until: Until = None


class InvalidateArguments(ToolArguments):
    """Arguments of memory_invalidate."""

    id: str = Field(
        min_length=1, max_length=_MAX_ID_CHARS, description="The id of the memory to invalidate."
    )
    reason: str | None = Field(
        default=None,
        max_length=MAX_TOOL_REASON_CHARS,
        description=(
            f"Why it stopped being true, at most {MAX_TOOL_REASON_CHARS} characters. Default: null."
        ),
    )


class SaveResult(ToolResult):
    """What memory_save returns: the saved memory and the id it superseded, if any."""

    memory: MemoryView
    superseded_id: str | None = None


class MemoriesResult(ToolResult):
    """What memory_search (best first) and memory_list (newest first) return."""

    count: int
    memories: list[MemoryView]
    window: SearchedWindow | None = None
    """The time window searched, when ``since`` or ``until`` was given."""

    @classmethod
    def of(cls, hits: Iterable[MemoryHit], window: SearchedWindow | None = None) -> MemoriesResult:
        """The result listing ``hits`` in order (searched within ``window``)."""
        views = [MemoryView.of(hit.record) for hit in hits]
        return cls(count=len(views), memories=views, window=window)


class InvalidateResult(ToolResult):
    """What memory_invalidate returns (also when the memory was already invalid)."""

    id: str
    invalidated: Literal[True] = True


async def _save(memory: ScopedMemory, args: SaveArguments) -> SaveResult:
    record = await memory.save(
        args.content, kind=args.kind, tags=args.tags, supersedes=args.supersedes
    )
    return SaveResult(memory=MemoryView.of(record), superseded_id=args.supersedes)


async def _search(memory: ScopedMemory, args: SearchArguments) -> MemoriesResult:
    if not args.query.strip():
        raise ToolFailure(
            "invalid_arguments",
            "query must contain words to search for; use memory_list to see recent memories",
            ["query"],
        )
    window, echo = searched_window(memory, args.since, args.until)
    if echo is None:
        # No window asked for: a time phrase in the query itself ranks its window first.
        found, echo = await search_with_query_time(
            memory, args.query, kinds=args.kinds, tags=args.tags, limit=args.limit
        )
        return MemoriesResult.of(found, echo)
    hits = await memory.search(
        args.query,
        kinds=args.kinds,
        tags=args.tags,
        limit=args.limit,
        observed_after=window.start,
        observed_before=window.end,
    )
    return MemoriesResult.of(hits, echo)


async def _list(memory: ScopedMemory, args: ListArguments) -> MemoriesResult:
    window, echo = searched_window(memory, args.since, args.until)
    hits = await memory.search(
        kinds=args.kinds,
        tags=args.tags,
        limit=args.limit,
        observed_after=window.start,
        observed_before=window.end,
    )
    return MemoriesResult.of(hits, echo)


async def _invalidate(memory: ScopedMemory, args: InvalidateArguments) -> InvalidateResult:
    await memory.invalidate(args.id, args.reason)
    return InvalidateResult(id=args.id)


MEMORY_SAVE: ToolSpec[ScopedMemory, SaveArguments, SaveResult] = ToolSpec(
    name="memory_save",
    title="Save a memory",
    description=(
        "Save something worth remembering in later conversations with this user. "
        "Search first so you do not save a duplicate; to correct or update a memory, "
        "pass its id as `supersedes`. Never save secrets (passwords, keys, card "
        "numbers)."
    ),
    arguments=SaveArguments,
    result=SaveResult,
    run=_save,
    manual_use=(
        'Save what will matter later: who the user is (kind "profile"), how they like things '
        'done ("preference"), facts about their situation ("fact") and notable events '
        '("episode").',
    ),
    manual_rules=(
        "Search before saving, so you do not store a duplicate.",
        "When a saved memory is wrong or out of date, save the corrected memory with "
        "`supersedes` set to the old memory's id. Never save a contradicting memory next to "
        "the old one.",
    ),
)
"""memory_save: save a memory in the scope, optionally superseding one."""

MEMORY_SEARCH: ToolSpec[ScopedMemory, SearchArguments, MemoriesResult] = ToolSpec(
    name="memory_search",
    title="Search memory",
    description=(
        "Search saved memories about this user by keywords; best matches first. "
        "Returns each memory's id, kind, content, tags and date."
    ),
    arguments=SearchArguments,
    result=MemoriesResult,
    run=_search,
    read_only=True,
    idempotent=True,
    manual_use=(
        "When the user refers to something from before that is not in front of you, search memory.",
    ),
)
"""memory_search: the scope's memories matching keywords, best first."""

MEMORY_LIST: ToolSpec[ScopedMemory, ListArguments, MemoriesResult] = ToolSpec(
    name="memory_list",
    title="List memories",
    description=(
        "List saved memories about this user, newest first, optionally only some kinds or tags."
    ),
    arguments=ListArguments,
    result=MemoriesResult,
    run=_list,
    read_only=True,
    idempotent=True,
)
"""memory_list: the scope's newest memories."""

MEMORY_INVALIDATE: ToolSpec[ScopedMemory, InvalidateArguments, InvalidateResult] = ToolSpec(
    name="memory_invalidate",
    title="Invalidate a memory",
    description=(
        "Mark a memory as no longer true so it is not recalled again (it stays in "
        "the audit trail). To replace it with a corrected fact, use memory_save with "
        "`supersedes` instead."
    ),
    arguments=InvalidateArguments,
    result=InvalidateResult,
    run=_invalidate,
    destructive=True,
    idempotent=True,
    manual_rules=(
        "When a memory simply stopped being true, invalidate it with memory_invalidate and "
        "a short reason.",
    ),
)
"""memory_invalidate: mark one of the scope's memories as no longer true."""

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
        if "scope" in spec.input_schema().get("properties", {}):
            raise ConfigurationError(
                f"tool {spec.name!r} takes a 'scope' argument; the scope is bound by the "
                "toolbox and must never come from the model"
            )
    return specs
