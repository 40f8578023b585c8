"""``MemoryCapability``: memory composed into an agent's per-conversation instantiate hook.

Configure it once with a store and the session-scope fields that partition memory;
call :meth:`MemoryCapability.instantiate` when a conversation starts to get that
conversation's toolbox and recall, bound to its scope. :func:`memory_prompt` gives the
same turn-1 prompt text without the plumbing, e.g. to snapshot-test it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo

from recallstore.context import call_context
from recallstore.errors import ConfigurationError
from recallstore.learning import DEFAULT_LEARNED_BUDGET_CHARS, Learned, assemble_learned
from recallstore.prompt import render_recall
from recallstore.recall import (
    DEFAULT_BUDGET_CHARS,
    DEFAULT_PROFILE_LIMIT,
    DEFAULT_RECALL_LIMIT,
    Recall,
    assemble_recall,
)
from recallstore.store import Clock, MemoryStore
from recallstore.toolbox import MemoryToolbox
from recallstore.toolset import MEMORY_TOOLS, MemoryToolSpec, check_toolset
from recallstore.values import canonical_scope

__all__ = ["MemoryCapability", "MemoryInstance", "memory_prompt"]

_REMEMBERED_CONVERSATIONS = 1_024
"""How many conversations' recall handles a capability keeps for :meth:`toolbox`."""


@dataclass(frozen=True, slots=True)
class MemoryInstance:
    """One conversation's memory: its scoped toolbox, its recall and the rendered block."""

    scope: dict[str, str]
    conversation_id: str
    run_id: str | None
    toolbox: MemoryToolbox
    recall: Recall
    recall_block: str | None
    """The recall block for the system prompt; None when nothing was recalled."""
    learned: Learned | None = None
    """The promoted records of the scope rendered as standing instructions, with each
    line's source (:class:`~recallstore.learning.Learned`)."""

    @property
    def learned_block(self) -> str | None:
        """The ``<learned_instructions>`` block; None when nothing is learned."""
        return None if self.learned is None else self.learned.block

    @property
    def manual(self) -> str:
        """The standing memory instruction for the system prompt."""
        return self.toolbox.manual

    @property
    def instructions(self) -> str:
        """The manual, the learned block and the recall block (each when there is one),
        ready for a prompt."""
        return _instructions(self.manual, self.recall_block, self.learned_block)


class MemoryCapability:
    """Memory for an agent, instantiated per conversation.

    ``scope_fields`` names the session-scope fields that form the memory scope, e.g.
    ``("tenant", "user")``; other session fields are ignored. A session missing any of
    them is refused with :class:`~recallstore.errors.ConfigurationError` — never an
    unscoped toolbox. ``tools`` are the tool specs every conversation's toolbox offers
    (default :data:`~recallstore.toolset.MEMORY_TOOLS`), checked here, once.

    The recall block names its entries by handle (``m1``, ``m2``, …); the conversation's
    toolbox accepts a handle wherever a tool takes an id. ``instantiate`` returns that
    toolbox, and :meth:`toolbox` with the same ``conversation_id`` rebuilds it while
    the capability remembers the conversation (its last 1,024, in this process); after
    that, or elsewhere, a handle is an unknown id and the full id still works.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        scope_fields: Sequence[str],
        tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
        budget_chars: int = DEFAULT_BUDGET_CHARS,
        recall_limit: int = DEFAULT_RECALL_LIMIT,
        profile_limit: int = DEFAULT_PROFILE_LIMIT,
        author: str | None = None,
        learned_budget_chars: int = DEFAULT_LEARNED_BUDGET_CHARS,
    ) -> None:
        if isinstance(scope_fields, str):
            raise ConfigurationError(
                f"scope_fields must be a sequence of field names, not the string {scope_fields!r}"
            )
        fields = tuple(scope_fields)
        if not fields:
            raise ConfigurationError("scope_fields must name at least one session-scope field")
        bad = [f for f in fields if not isinstance(f, str) or not f.strip()]
        if bad:
            raise ConfigurationError(f"scope_fields must be non-empty strings, got {bad!r}")
        if len(set(fields)) != len(fields):
            raise ConfigurationError(f"scope_fields has duplicates: {list(fields)!r}")
        if min(budget_chars, recall_limit, profile_limit, learned_budget_chars) < 0:
            raise ConfigurationError(
                "budget_chars, recall_limit, profile_limit and learned_budget_chars must be "
                f">= 0, got {budget_chars}, {recall_limit}, {profile_limit}, "
                f"{learned_budget_chars}"
            )
        self.store = store
        self.scope_fields = fields
        self.specs = check_toolset(tools)
        self.budget_chars = budget_chars
        self.recall_limit = recall_limit
        self.profile_limit = profile_limit
        self.author = author
        self.learned_budget_chars = learned_budget_chars
        self._handles: OrderedDict[tuple[str, str], dict[str, str]] = OrderedDict()

    def scope_for(self, session_scope: Mapping[str, str]) -> dict[str, str]:
        """The memory scope of a session; raises ConfigurationError naming missing fields."""
        missing = [
            field
            for field in self.scope_fields
            if not isinstance(session_scope.get(field), str) or not session_scope[field].strip()
        ]
        if missing:
            raise ConfigurationError(
                f"session scope is missing memory scope field(s) {missing!r} "
                f"(required: {list(self.scope_fields)!r}, got keys: {sorted(session_scope)!r}); "
                "refusing to build an unscoped memory toolbox"
            )
        return {field: session_scope[field] for field in self.scope_fields}

    async def instantiate(
        self,
        session_scope: Mapping[str, str],
        *,
        conversation_id: str,
        first_user_text: str,
        run_id: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> MemoryInstance:
        """The toolbox and turn-1 recall for one conversation of a session; ``time_zone``
        (the user's, an IANA name) is what "yesterday" and "last week" are read in, and
        ``clock`` is the conversation's "now" they are read against, by the recall and
        the toolbox alike (default: the store's clock,
        :func:`~recallstore.store.store_clock`, the wall clock unless the store was given
        one). A date the calendar cannot hold ("9999-12-31" in the first message) is
        searched as text."""
        toolbox, recall, recall_block = await self._turn_one(
            self.scope_for(session_scope),
            first_user_text,
            conversation_id,
            run_id,
            time_zone,
            clock,
        )
        learned = await self._learned(toolbox, conversation_id, run_id)
        return MemoryInstance(
            scope=toolbox.scope,
            conversation_id=conversation_id,
            run_id=run_id,
            toolbox=toolbox,
            recall=recall,
            recall_block=recall_block,
            learned=learned,
        )

    async def _learned(
        self, toolbox: MemoryToolbox, conversation_id: str | None, run_id: str | None
    ) -> Learned:
        """The scope's promoted records as the learned block (in the conversation's
        call context, on its clock)."""
        with call_context(conversation_id=conversation_id, run_id=run_id):
            return await assemble_learned(
                self.store,
                toolbox.scope,
                budget_chars=self.learned_budget_chars,
                now=toolbox.now(),
            )

    def toolbox(
        self,
        session_scope: Mapping[str, str],
        *,
        conversation_id: str | None = None,
        run_id: str | None = None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> MemoryToolbox:
        """A session's toolbox without the recall, e.g. for a tool call in a later turn;
        ``time_zone`` and ``clock`` as for :meth:`instantiate`; it resolves the handles of
        the conversation's recall block when this capability instantiated
        ``conversation_id`` for the same scope."""
        scope = self.scope_for(session_scope)
        handles = (
            None
            if conversation_id is None
            else self._handles.get((repr(sorted(scope.items())), conversation_id))
        )
        return self._toolbox(scope, conversation_id, run_id, time_zone, clock, handles)

    def _toolbox(
        self,
        scope: dict[str, str],
        conversation_id: str | None,
        run_id: str | None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
        handles: Mapping[str, str] | None = None,
    ) -> MemoryToolbox:
        return MemoryToolbox(
            self.store,
            scope,
            tools=self.specs,
            conversation_id=conversation_id,
            run_id=run_id,
            author=self.author,
            time_zone=time_zone,
            clock=clock,
            handles=handles,
        )

    async def _turn_one(
        self,
        scope: dict[str, str],
        first_user_text: str,
        conversation_id: str | None,
        run_id: str | None,
        time_zone: str | tzinfo | None = None,
        clock: Clock | None = None,
    ) -> tuple[MemoryToolbox, Recall, str | None]:
        """The toolbox, the recall and its rendered block: what both public paths share,
        on one clock (the recall reads it once, the toolbox at each call)."""
        toolbox = self._toolbox(scope, conversation_id, run_id, time_zone, clock)
        recall = await assemble_recall(
            self.store,
            scope,
            first_user_text,
            budget_chars=self.budget_chars,
            limit=self.recall_limit,
            profile_limit=self.profile_limit,
            conversation_id=conversation_id,
            run_id=run_id,
            time_zone=toolbox.time_zone,
            now=toolbox.now(),
        )
        handles = recall.handles
        if conversation_id is not None:
            key = (repr(sorted(scope.items())), conversation_id)
            self._handles.pop(key, None)  # a new turn one: the old block's handles go
            if handles:
                self._handles[key] = handles
            while len(self._handles) > _REMEMBERED_CONVERSATIONS:
                self._handles.popitem(last=False)
        toolbox = self._toolbox(scope, conversation_id, run_id, time_zone, clock, handles)
        return toolbox, recall, render_recall(recall)


async def memory_prompt(
    store: MemoryStore,
    scope: Mapping[str, str],
    first_user_text: str,
    *,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    recall_limit: int = DEFAULT_RECALL_LIMIT,
    profile_limit: int = DEFAULT_PROFILE_LIMIT,
    conversation_id: str | None = None,
    run_id: str | None = None,
    clock: Clock | None = None,
) -> str:
    """The turn-1 memory part of a system prompt: the Manual, then the recall block.

    The same text as ``MemoryCapability(store, scope_fields=scope.keys(), ...)``
    ``.instantiate(scope, ...).instructions`` — put it in a system prompt, or pin it with
    a snapshot test. ``scope`` must be non-empty (ConfigurationError otherwise);
    ``clock`` as for :meth:`MemoryCapability.instantiate`.
    """
    scope = canonical_scope(scope)
    if not scope:
        raise ConfigurationError(
            "memory_prompt needs a non-empty scope (e.g. {'user': 'u_42'}); "
            "an unscoped recall would show every user's memories"
        )
    capability = MemoryCapability(
        store,
        scope_fields=tuple(scope),
        budget_chars=budget_chars,
        recall_limit=recall_limit,
        profile_limit=profile_limit,
    )
    toolbox, _, recall_block = await capability._turn_one(
        capability.scope_for(scope), first_user_text, conversation_id, run_id, clock=clock
    )
    learned = await capability._learned(toolbox, conversation_id, run_id)
    return _instructions(toolbox.manual, recall_block, learned.block)


def _instructions(manual: str, recall_block: str | None, learned_block: str | None = None) -> str:
    # The learned block stands apart from the recall block and before it: instructions
    # the host promoted, then notes. Without one the text is exactly what it was.
    parts = [manual, learned_block, recall_block]
    return "\n\n".join(part for part in parts if part is not None)
