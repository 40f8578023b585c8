"""``memory_invalidate``: mark one of the scope's memories as no longer true."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from recallstore.tools import ToolArguments, ToolResult, ToolSpec
from recallstore.toolset._common import MAX_TOOL_REASON_CHARS
from recallstore.values import MAX_ID_CHARS

__all__ = ["MEMORY_INVALIDATE", "InvalidateArguments", "InvalidateResult"]

if TYPE_CHECKING:
    # Only for types: the specs bind to no store, so the pure Manual may import them.
    from recallstore.scoped_memory import ScopedMemory


class InvalidateArguments(ToolArguments):
    """Arguments of memory_invalidate."""

    id: str = Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The id (or recall handle, e.g. m2) of the memory to invalidate.",
    )
    reason: str | None = Field(
        default=None,
        max_length=MAX_TOOL_REASON_CHARS,
        description=(
            f"Why it stopped being true, at most {MAX_TOOL_REASON_CHARS} characters. Default: null."
        ),
    )


class InvalidateResult(ToolResult):
    """What memory_invalidate returns (also when the memory was already invalid)."""

    id: str
    invalidated: Literal[True] = True


async def _invalidate(memory: ScopedMemory, args: InvalidateArguments) -> InvalidateResult:
    await memory.invalidate(args.id, args.reason)
    return InvalidateResult(id=args.id)


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
