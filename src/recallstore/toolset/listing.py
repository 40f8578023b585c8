"""``memory_list``: the scope's newest memories."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallstore.tools import ToolArguments, ToolSpec
from recallstore.toolset._common import (
    DEFAULT_TOOL_LIMIT,
    Kinds,
    Limit,
    MemoriesResult,
    Tags,
    memories_in_window,
)
from recallstore.toolset._time import Since, Until, searched_window

__all__ = ["MEMORY_LIST", "ListArguments"]

if TYPE_CHECKING:
    # Only for types: the specs bind to no store, so the pure Manual may import them.
    from recallstore.scoped_memory import ScopedMemory


class ListArguments(ToolArguments):
    """Arguments of memory_list."""

    kinds: Kinds = None
    tags: Tags = None
    limit: Limit = DEFAULT_TOOL_LIMIT
    since: Since = None
    until: Until = None


async def _list(memory: ScopedMemory, args: ListArguments) -> MemoriesResult:
    window = searched_window(memory, args.since, args.until)
    return await memories_in_window(
        memory, None, window, kinds=args.kinds, tags=args.tags, limit=args.limit
    )


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
