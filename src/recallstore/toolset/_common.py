"""What every memory tool shares: the model's limits, argument types and the views of records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from recallstore._when import TimeWindow
from recallstore.records import MAX_TAG_CHARS, MemoryHit, MemoryKind, MemoryRecord
from recallstore.tools import ToolResult, ToolSpec
from recallstore.toolset._time import SearchedWindow
from recallstore.values import model_date

__all__ = [
    "DEFAULT_TOOL_LIMIT",
    "MAX_TOOL_CONTENT_CHARS",
    "MAX_TOOL_LIMIT",
    "MAX_TOOL_QUERY_CHARS",
    "MAX_TOOL_REASON_CHARS",
    "MAX_TOOL_TAGS",
    "Kinds",
    "Limit",
    "MemoriesResult",
    "MemoryToolSpec",
    "MemoryView",
    "Tag",
    "Tags",
]

if TYPE_CHECKING:
    # Only for types: the specs bind to no store, so the pure Manual may import them.
    from recallstore.scoped_memory import ScopedMemory

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

Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]
Kinds = Annotated[
    list[MemoryKind] | None,
    Field(description="Only memories of these kinds. Default: null (every kind)."),
]
Tags = Annotated[
    list[Tag] | None,
    Field(
        max_length=MAX_TOOL_TAGS,
        description="Only memories carrying every one of these tags. Default: null (no filter).",
    ),
]
Limit = Annotated[
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
        saved, observed = model_date(record.created_at), model_date(record.observed_at)
        return cls(
            id=record.id,
            kind=record.kind,
            content=record.content,
            tags=list(record.tags),
            date=saved,
            observed=None if observed == saved else observed,
        )


async def memories_in_window(
    memory: ScopedMemory,
    query: str | None,
    window: tuple[TimeWindow, SearchedWindow | None],
    *,
    kinds: list[MemoryKind] | None,
    tags: list[str] | None,
    limit: int,
) -> MemoriesResult:
    """The scope's memories matching ``query`` (newest first without one) observed in
    ``window`` (what :func:`~recallstore.toolset._time.searched_window` read), echoed."""
    within, echo = window
    hits = await memory.search(
        query,
        kinds=kinds,
        tags=tags,
        limit=limit,
        observed_after=within.start,
        observed_before=within.end,
    )
    return MemoriesResult.of(hits, echo)


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
