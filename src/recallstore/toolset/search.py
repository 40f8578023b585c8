"""``memory_search``: the scope's memories matching keywords, best first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from recallstore.tools import ToolArguments, ToolFailure, ToolSpec
from recallstore.toolset._common import (
    DEFAULT_TOOL_LIMIT,
    MAX_TOOL_QUERY_CHARS,
    Kinds,
    Limit,
    MemoriesResult,
    Tags,
    memories_in_window,
)
from recallstore.toolset._time import Since, Until, search_with_query_time, searched_window

__all__ = ["MEMORY_SEARCH", "SearchArguments"]

if TYPE_CHECKING:
    # Only for types: the specs bind to no store, so the pure Manual may import them.
    from recallstore.scoped_memory import ScopedMemory


class SearchArguments(ToolArguments):
    """Arguments of memory_search."""

    query: str = Field(
        min_length=1,
        max_length=MAX_TOOL_QUERY_CHARS,
        description=f"Words to look for in saved memories. At most {MAX_TOOL_QUERY_CHARS} chars.",
    )
    kinds: Kinds = None
    tags: Tags = None
    limit: Limit = DEFAULT_TOOL_LIMIT
    since: Since = None
    until: Until = None


async def _search(memory: ScopedMemory, args: SearchArguments) -> MemoriesResult:
    if not args.query.strip():
        raise ToolFailure(
            "invalid_arguments",
            "query must contain words to search for; use memory_list to see recent memories",
            ["query"],
        )
    window = searched_window(memory, args.since, args.until)
    if window[1] is None:
        # No window asked for: a time phrase in the query itself boosts its window.
        found, echo = await search_with_query_time(
            memory, args.query, kinds=args.kinds, tags=args.tags, limit=args.limit
        )
        return MemoriesResult.of(found, echo)
    return await memories_in_window(
        memory, args.query, window, kinds=args.kinds, tags=args.tags, limit=args.limit
    )


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
