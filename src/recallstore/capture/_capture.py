"""``capture``: a conversation stored verbatim as ``episode`` records, idempotently."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from recallstore.capture._chunks import split_text
from recallstore.capture._dicts import from_mapping, from_tuple
from recallstore.capture._frameworks import from_object
from recallstore.capture._message import ROLE_NAMES, Message, field_name
from recallstore.errors import ConfigurationError, MemoryValidationError
from recallstore.records import MAX_CONTENT_CHARS, MemoryRecord, MemoryWriteInput, Provenance
from recallstore.store import IDEMPOTENCY_EXTENSION, MemoryStore
from recallstore.values import MAX_ID_CHARS, canonical_scope, normalise_tags

ToolCalls = Literal["skip", "text"]

DEFAULT_ROLES: Final = ("user", "assistant")
"""The roles ``capture`` keeps unless told otherwise: what the user and the assistant said."""
DEFAULT_MAX_CHUNK_CHARS: Final = 2_000
"""The longest chunk ``capture`` stores by default (about 400 words); longer messages
are split at sentence boundaries."""
CAPTURE_TAG: Final = "captured"
"""The tag every captured record carries (besides the caller's ``tags``)."""
_KEY_PREFIX: Final = "capture"
_LABEL_ROOM: Final = MAX_ID_CHARS + 2
"""Room kept in a record for the ``"name: "`` label before the chunk's text."""


@dataclass(frozen=True, slots=True)
class CaptureResult:
    """What one ``capture`` call stored.

    ``records`` holds one record per stored chunk, in transcript order, whether this
    call created it or found it already captured; ``added`` counts the ones it created.
    ``messages`` is how many messages the transcript held, ``kept`` how many of them
    the options kept (each one record or more).
    """

    conversation_id: str
    records: tuple[MemoryRecord, ...]
    added: int
    messages: int
    kept: int


def read_transcript(transcript: Iterable[Any]) -> list[Message]:
    """Every item of ``transcript`` in the one internal shape, validated; the first item
    no converter knows raises :class:`MemoryValidationError` naming ``transcript[i]``."""
    if isinstance(transcript, str | bytes | Mapping):
        raise MemoryValidationError(
            "transcript", "must be a sequence of messages", type(transcript).__name__
        )
    messages: list[Message] = []
    for index, item in enumerate(transcript):
        try:
            converted = _converted(item, index)
        except RecursionError:  # tool results within tool results, thousands deep
            raise MemoryValidationError(
                field_name(index), "is nested too deeply to read", item
            ) from None
        if converted is None:
            raise MemoryValidationError(
                field_name(index),
                f"is a {type(item).__name__}, not a message shape capture knows "
                "(see docs/capture.md)",
                item,
            )
        messages.extend(converted)
    return messages


def _converted(item: Any, index: int) -> list[Message] | None:
    if isinstance(item, Mapping):
        return from_mapping(item, index)
    if isinstance(item, tuple | list):
        return from_tuple(item, index)
    return from_object(item, index)


async def capture(
    store: MemoryStore,
    scope: Mapping[str, str],
    transcript: Iterable[Any],
    *,
    conversation_id: str,
    roles: Collection[str] = DEFAULT_ROLES,
    tool_calls: ToolCalls = "skip",
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
    label: bool = True,
    tags: Sequence[str] = (),
) -> CaptureResult:
    """Store ``transcript`` in ``scope`` as verbatim ``episode`` records, one write.

    Idempotent per conversation and message: capturing the same transcript again, or a
    longer one, adds only the messages not yet captured (each record's idempotency key
    names the conversation, the message and what it says). Capture only adds: it never
    deletes, supersedes or invalidates anything. ``roles`` picks the messages kept
    (default user and assistant); ``tool_calls="text"`` keeps tool calls and results as
    text, ``"skip"`` (the default) leaves them out. A message longer than
    ``max_chunk_chars`` is split at sentence boundaries into linked chunks. With
    ``label`` each record reads ``"<speaker>: <text>"``. The store needs the
    ``"idempotency"`` extension (every bundled backend has it).
    """
    options = _Options.checked(conversation_id, roles, tool_calls, max_chunk_chars)
    _check_tags(tags)
    all_tags = (CAPTURE_TAG, *tags)  # as given: the idempotency keys cover them
    scope = canonical_scope(scope)
    if IDEMPOTENCY_EXTENSION not in store.capabilities().extensions:
        raise ConfigurationError(
            f"capture needs a store with the {IDEMPOTENCY_EXTENSION!r} extension; "
            f"{type(store).__name__} does not declare it"
        )
    messages = read_transcript(transcript)
    kept = [message for message in messages if options.keeps(message)]
    run_id = f"capture-{uuid.uuid4().hex}"
    provenance = {
        role: Provenance(conversation_id=conversation_id, run_id=run_id, author=role)
        for role in ("user", "assistant", "system", "tool")
    }
    inputs = [
        entry
        for message in kept
        for entry in _entries(message, scope, options, provenance[message.role], all_tags, label)
    ]
    records = await store.write(inputs) if inputs else []
    added = sum(1 for record in records if record.provenance and record.provenance.run_id == run_id)
    return CaptureResult(conversation_id, tuple(records), added, len(messages), len(kept))


@dataclass(frozen=True, slots=True)
class _Options:
    conversation_id: str
    roles: frozenset[str]
    tool_calls: ToolCalls
    max_chunk_chars: int

    @classmethod
    def checked(
        cls, conversation_id: Any, roles: Any, tool_calls: Any, max_chunk_chars: Any
    ) -> _Options:
        if not isinstance(conversation_id, str) or not conversation_id.strip():
            raise MemoryValidationError(
                "conversation_id", "must be non-empty text", conversation_id
            )
        if len(conversation_id) > MAX_ID_CHARS * 2:
            raise MemoryValidationError(
                "conversation_id", f"is longer than {MAX_ID_CHARS * 2} characters", conversation_id
            )
        if isinstance(roles, str) or not all(role in ROLE_NAMES.values() for role in roles):
            raise MemoryValidationError(
                "roles", "must be a collection of 'user', 'assistant', 'system', 'tool'", roles
            )
        if tool_calls not in ("skip", "text"):
            raise MemoryValidationError("tool_calls", "must be 'skip' or 'text'", tool_calls)
        limit = MAX_CONTENT_CHARS - _LABEL_ROOM
        if (
            isinstance(max_chunk_chars, bool)  # an int to Python, never a length
            or not isinstance(max_chunk_chars, int)
            or not 1 <= max_chunk_chars <= limit
        ):
            raise MemoryValidationError(
                "max_chunk_chars", f"must be an integer from 1 to {limit}", max_chunk_chars
            )
        return cls(conversation_id, frozenset(roles), tool_calls, max_chunk_chars)

    def keeps(self, message: Message) -> bool:
        if message.tool:
            return self.tool_calls == "text"
        return message.role in self.roles


def _check_tags(tags: Any) -> None:
    """The caller's tags, checked before anything is read: one string is not a list of
    tags (``"abc"`` would be the tags a, b and c)."""
    if isinstance(tags, str) or not isinstance(tags, Sequence | frozenset | set):
        raise MemoryValidationError("tags", "must be a list of strings", tags)
    try:
        normalise_tags(list(tags))
    except ValueError as exc:
        raise MemoryValidationError("tags", str(exc), tags) from None


def _entries(
    message: Message,
    scope: dict[str, str],
    options: _Options,
    provenance: Provenance,
    tags: tuple[str, ...],
    label: bool,
) -> list[MemoryWriteInput]:
    chunks = split_text(message.text, options.max_chunk_chars)
    speaker = message.name or message.role
    entries = []
    for number, chunk in enumerate(chunks):
        payload: dict[str, Any] = {"conversation_id": options.conversation_id}
        # A message's own id names it wherever it sits (ADK events added in pieces).
        if message.id is not None:
            payload["message_id"] = message.id
        else:
            payload["message"] = message.index
        payload |= {
            "part": message.part,
            "role": message.role,
            "chunk": number,
            "chunks": len(chunks),
        }
        if message.name is not None:
            payload["name"] = message.name
        if message.tool:
            payload["tool"] = True
        content = f"{speaker}: {chunk}" if label else chunk
        entries.append(
            MemoryWriteInput(
                scope=scope,
                kind="episode",
                content=content,
                tags=tags,
                provenance=provenance,
                payload=payload,
                observed_at=message.time,
                idempotency_key=_key(scope, content, tags, payload),
            )
        )
    return entries


def _key(scope: dict[str, str], content: str, tags: tuple[str, ...], payload: Any) -> str:
    """``capture/<message>.<part>.<chunk>/<digest>``: the digest covers everything the
    record says, so a key is only ever reused for the same record (never superseded)."""
    said = json.dumps([scope, content, tags, payload], ensure_ascii=False, sort_keys=True)
    digest = hashlib.sha256(said.encode("utf-8")).hexdigest()[:32]
    # The readable part is cut short: the digest, not it, makes the key unique.
    message = str(payload.get("message_id", payload.get("message")))[:96]
    return f"{_KEY_PREFIX}/{message}.{payload['part']}.{payload['chunk']}/{digest}"
