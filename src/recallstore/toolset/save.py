"""``memory_save``: save a memory in the scope, optionally superseding one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from recallstore.records import MAX_TAG_CHARS, MemoryKind
from recallstore.tools import ToolArguments, ToolResult, ToolSpec
from recallstore.toolset._common import MAX_TOOL_CONTENT_CHARS, MAX_TOOL_TAGS, MemoryView, Tag
from recallstore.values import MAX_ID_CHARS

__all__ = ["ALREADY_REMEMBERED", "MEMORY_SAVE", "SaveArguments", "SaveResult"]

if TYPE_CHECKING:
    # Only for types: the specs bind to no store, so the pure Manual may import them.
    from recallstore.scoped_memory import ScopedMemory


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
    tags: list[Tag] = Field(
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
        max_length=MAX_ID_CHARS,
        description=(
            "The id (or recall handle, e.g. m2) of a memory this one corrects or updates; that "
            "memory stops being recalled. "
            "Use it instead of saving a contradicting memory. Default: null."
        ),
    )


ALREADY_REMEMBERED = (
    "Already remembered: an equal memory was saved before, so nothing new was written. "
    "To change it, save the corrected memory with `supersedes` set to its id."
)
"""The note of a memory_save whose content equals a valid memory of the scope."""


class SaveResult(ToolResult):
    """What memory_save returns: the saved memory and the id it superseded, if any."""

    memory: MemoryView
    superseded_id: str | None = None
    already_remembered: bool = False
    note: str | None = None


async def _save(memory: ScopedMemory, args: SaveArguments) -> SaveResult:
    record, already = await memory.remember(
        args.content, kind=args.kind, tags=args.tags, supersedes=args.supersedes
    )
    if already:
        return SaveResult(
            memory=MemoryView.of(record), already_remembered=True, note=ALREADY_REMEMBERED
        )
    # The id, not the recall block's handle the model may have passed.
    superseded = None if args.supersedes is None else memory.resolve(args.supersedes)
    return SaveResult(memory=MemoryView.of(record), superseded_id=superseded)


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
