"""``MemoryToolbox``: the four memory tools a model gets, bound to one conversation's scope.

The scope is captured when the toolbox is built and no tool takes one: every write is
stamped with it, every read is filtered by it, and an id outside it is answered exactly
like an id that does not exist. There is no delete tool; forgetting is the host's call.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from recallstore.context import CallContext, call_context
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from recallstore.records import (
    MAX_TAG_CHARS,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryWriteInput,
    Provenance,
    check_invalid_reason,
)
from recallstore.store import MemoryStore, scope_matches
from recallstore.tools import (
    Tool,
    ToolArguments,
    ToolFailure,
    ToolResult,
    anthropic_tool,
    error_result,
    mcp_tool,
    openai_tool,
)

__all__ = [
    "DEFAULT_TOOL_LIMIT",
    "MAX_TOOL_CONTENT_CHARS",
    "MAX_TOOL_LIMIT",
    "MAX_TOOL_QUERY_CHARS",
    "MAX_TOOL_TAGS",
    "MemoryToolbox",
    "MemoryView",
]

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

    @classmethod
    def of(cls, record: MemoryRecord) -> MemoryView:
        """The view of ``record``."""
        return cls(
            id=record.id,
            kind=record.kind,
            content=record.content,
            tags=list(record.tags),
            date=record.created_at.strftime("%Y-%m-%d"),
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


class ListArguments(ToolArguments):
    """Arguments of memory_list."""

    kinds: _Kinds = None
    tags: _Tags = None
    limit: _Limit = DEFAULT_TOOL_LIMIT


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


class InvalidateResult(ToolResult):
    """What memory_invalidate returns (also when the memory was already invalid)."""

    id: str
    invalidated: Literal[True] = True


def _not_found(record_id: str, field: str) -> ToolFailure:
    # One message for "missing" and "outside your scope": the model learns nothing more.
    return ToolFailure(
        "not_found",
        f"No memory with id {record_id!r} exists in this memory. "
        "Use memory_search or memory_list to find the right id.",
        [field],
    )


class MemoryToolbox:
    """The memory tools for one conversation, bound to ``scope`` and stamped with provenance.

    ``scope`` must be non-empty: an unscoped toolbox would let a model read every
    user's memories. Store failures (``StoreUnavailableError``) raise to the host.
    """

    def __init__(
        self,
        store: MemoryStore,
        scope: Mapping[str, str],
        *,
        conversation_id: str | None = None,
        run_id: str | None = None,
        author: str | None = None,
    ) -> None:
        if not scope:
            raise ConfigurationError(
                "MemoryToolbox needs a non-empty scope (e.g. {'user': 'u_42'}); "
                "an unscoped toolbox would expose every user's memories"
            )
        # Validates and canonicalises the scope once, at the edge.
        self._scope: dict[str, str] = MemorySearchQuery(scope=dict(scope)).scope
        self.provenance = Provenance(conversation_id=conversation_id, run_id=run_id, author=author)
        self._store = store
        self.tools: tuple[Tool[Any, Any], ...] = (
            Tool(
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
                function=self._save,
            ),
            Tool(
                name="memory_search",
                title="Search memory",
                description=(
                    "Search saved memories about this user by keywords; best matches first. "
                    "Returns each memory's id, kind, content, tags and date."
                ),
                arguments=SearchArguments,
                result=MemoriesResult,
                function=self._search,
                read_only=True,
                idempotent=True,
            ),
            Tool(
                name="memory_list",
                title="List memories",
                description=(
                    "List saved memories about this user, newest first, optionally only some "
                    "kinds or tags."
                ),
                arguments=ListArguments,
                result=MemoriesResult,
                function=self._list,
                read_only=True,
                idempotent=True,
            ),
            Tool(
                name="memory_invalidate",
                title="Invalidate a memory",
                description=(
                    "Mark a memory as no longer true so it is not recalled again (it stays in "
                    "the audit trail). To replace it with a corrected fact, use memory_save with "
                    "`supersedes` instead."
                ),
                arguments=InvalidateArguments,
                result=InvalidateResult,
                function=self._invalidate,
                destructive=True,
                idempotent=True,
            ),
        )
        self._by_name = {tool.name: tool for tool in self.tools}

    @property
    def scope(self) -> dict[str, str]:
        """The scope every tool call is bound to (a copy: it cannot be changed)."""
        return dict(self._scope)

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Run tool ``name`` with the model's ``arguments``; a JSON-ready result or error result.

        Every adapter dispatches through here. The model's mistakes come back as
        ``{"ok": False, "error": {...}}``; store failures raise.
        """
        tool = self._by_name.get(name)
        if tool is None:
            return error_result(
                "unknown_tool",
                f"There is no tool named {name!r}; the memory tools are: "
                + ", ".join(self._by_name),
            )
        return await tool.invoke(arguments)

    def openai_tools(self, *, api: Literal["chat", "responses"] = "chat") -> list[dict[str, Any]]:
        """The tools as OpenAI strict function tools."""
        return [openai_tool(tool, api=api) for tool in self.tools]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tools as Anthropic tool definitions."""
        return [anthropic_tool(tool) for tool in self.tools]

    def mcp_tools(self) -> list[dict[str, Any]]:
        """The tools as MCP tool definitions."""
        return [mcp_tool(tool) for tool in self.tools]

    @property
    def manual(self) -> str:
        """The standing instruction telling the model it has memory and how to curate it."""
        from recallstore.prompt import Manual

        return Manual.render(tool.name for tool in self.tools)

    def _context(self) -> AbstractContextManager[CallContext]:
        return call_context(
            conversation_id=self.provenance.conversation_id, run_id=self.provenance.run_id
        )

    async def _get_in_scope(self, record_id: str, field: str) -> MemoryRecord:
        with self._context():
            record = await self._store.get(record_id)
        if record is None or not scope_matches(record.scope, self._scope):
            raise _not_found(record_id, field)
        return record

    async def _save(self, args: SaveArguments) -> SaveResult:
        if args.supersedes is not None:
            old = await self._get_in_scope(args.supersedes, "supersedes")
            if old.is_invalidated:
                raise ToolFailure(
                    "conflict",
                    f"Memory {old.id!r} is no longer valid, so it cannot be superseded; "
                    "search for the memory that replaced it.",
                    ["supersedes"],
                )
        try:
            entry = MemoryWriteInput(
                scope=self._scope,
                kind=args.kind,
                content=args.content,
                tags=tuple(args.tags),
                provenance=self.provenance,
                supersedes=args.supersedes,
            )
        except MemoryValidationError as exc:
            raise ToolFailure("invalid_arguments", str(exc), [exc.field]) from None
        try:
            with self._context():
                (record,) = await self._store.write([entry])
        except MemoryNotFoundError:
            # Deleted between the check and the write: still just "not found".
            raise _not_found(args.supersedes or "", "supersedes") from None
        except MemoryConflictError as exc:
            raise ToolFailure(
                "conflict",
                f"Memory {exc.record_id!r} was superseded or invalidated meanwhile; "
                "search again for the current memory.",
                ["supersedes"],
            ) from None
        return SaveResult(memory=MemoryView.of(record), superseded_id=args.supersedes)

    async def _find(
        self,
        query: str | None,
        kinds: list[MemoryKind] | None,
        tags: list[str] | None,
        limit: int,
    ) -> MemoriesResult:
        try:
            search = MemorySearchQuery(
                query=query,
                scope=self._scope,
                kinds=None if kinds is None else tuple(kinds),
                tags=None if tags is None else tuple(tags),
                limit=limit,
            )
        except MemoryValidationError as exc:
            raise ToolFailure("invalid_arguments", str(exc), [exc.field]) from None
        with self._context():
            hits = await self._store.search(search)
        views = [MemoryView.of(hit.record) for hit in hits]
        return MemoriesResult(count=len(views), memories=views)

    async def _search(self, args: SearchArguments) -> MemoriesResult:
        if not args.query.strip():
            raise ToolFailure(
                "invalid_arguments",
                "query must contain words to search for; use memory_list to see recent memories",
                ["query"],
            )
        return await self._find(args.query, args.kinds, args.tags, args.limit)

    async def _list(self, args: ListArguments) -> MemoriesResult:
        return await self._find(None, args.kinds, args.tags, args.limit)

    async def _invalidate(self, args: InvalidateArguments) -> InvalidateResult:
        try:
            check_invalid_reason(args.reason)
        except MemoryValidationError as exc:
            raise ToolFailure("invalid_arguments", str(exc), ["reason"]) from None
        await self._get_in_scope(args.id, "id")
        try:
            with self._context():
                await self._store.invalidate(args.id, args.reason)
        except MemoryNotFoundError:
            raise _not_found(args.id, "id") from None
        return InvalidateResult(id=args.id)
