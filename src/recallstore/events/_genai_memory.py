"""The OpenTelemetry GenAI memory conventions, as recallstore speaks them: the one place
their names are written.

The conventions (semantic-conventions-genai, ``model/gen-ai/spans.yaml``, span type
``gen_ai.memory.client``, development stability) name a memory span after its
operation and give it ``gen_ai.operation.name`` (required), ``gen_ai.memory.store.id``
(conditionally required, if applicable), ``gen_ai.memory.record.id`` (conditionally
required, when the operation applies to one record), ``gen_ai.memory.record.count``
(recommended: the records a search returned, or a create, update, upsert or delete
attempted) and, opt-in only, ``gen_ai.memory.query.text`` and ``gen_ai.memory.records``.
No constants package has them yet, so they are written here and nowhere else.

Which operation each store call is (:data:`OPERATION_NAMES`): a plain write asks for
new records (``create_memory``); a write with an idempotency key may create or return
or supersede without the caller choosing (``upsert_memory``); a supersede and an
invalidate modify known records (``update_memory``); a delete and a ``forget(scope)``
delete (``delete_memory``, the forget with no record id); a search and a get by id
read (``search_memory``). A batch that supersedes anything is an ``update_memory``, and
so are a corroborate, a promote and a demote (they modify one known record's standing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, Literal

from recallstore.events.models import WriteOperation

__all__ = [
    "CALL_ATTRIBUTES",
    "CAPTURE_CONTENT_ENV",
    "CAPTURE_CONTENT_VALUES",
    "CREATE_MEMORY",
    "DELETE_MEMORY",
    "ERROR_TYPE",
    "GEN_AI_CONVERSATION_ID",
    "GEN_AI_MEMORY_QUERY_TEXT",
    "GEN_AI_MEMORY_RECORDS",
    "GEN_AI_MEMORY_RECORD_COUNT",
    "GEN_AI_MEMORY_RECORD_ID",
    "GEN_AI_MEMORY_STORE_ID",
    "GEN_AI_OPERATION_NAME",
    "OPERATION_NAMES",
    "SEARCH_MEMORY",
    "SPAN_NAME",
    "UPDATE_MEMORY",
    "UPSERT_MEMORY",
    "StoreOperation",
    "capture_content_from_env",
]

# Operation names (gen_ai.operation.name values).
CREATE_MEMORY: Final = "create_memory"
UPDATE_MEMORY: Final = "update_memory"
UPSERT_MEMORY: Final = "upsert_memory"
DELETE_MEMORY: Final = "delete_memory"
SEARCH_MEMORY: Final = "search_memory"

# Attributes.
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_MEMORY_STORE_ID: Final = "gen_ai.memory.store.id"
GEN_AI_MEMORY_RECORD_ID: Final = "gen_ai.memory.record.id"
GEN_AI_MEMORY_RECORD_COUNT: Final = "gen_ai.memory.record.count"
GEN_AI_MEMORY_QUERY_TEXT: Final = "gen_ai.memory.query.text"
GEN_AI_MEMORY_RECORDS: Final = "gen_ai.memory.records"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
ERROR_TYPE: Final = "error.type"

SPAN_NAME: Final = "{gen_ai.operation.name}"
"""The memory span's name: its operation, nothing appended."""

StoreOperation = Literal[
    WriteOperation, "upsert", "forget", "search", "get", "corroborate", "promote", "demote"
]
"""The store calls ``ObservedMemoryStore`` traces: the write operations (the values of
``agent.memory.write``'s ``data.operation``), ``upsert`` (a write with an idempotency
key), ``forget`` (every record of a scope), ``search`` and ``get`` (which has a span
but no event), and the ``"promote"`` extension's ``corroborate``, ``promote`` and
``demote`` (``agent.memory.learn``)."""

OPERATION_NAMES: Final[Mapping[StoreOperation, str]] = {
    "write": CREATE_MEMORY,
    "upsert": UPSERT_MEMORY,
    "supersede": UPDATE_MEMORY,
    "invalidate": UPDATE_MEMORY,
    "delete": DELETE_MEMORY,
    "forget": DELETE_MEMORY,
    "search": SEARCH_MEMORY,
    "get": SEARCH_MEMORY,
    "corroborate": UPDATE_MEMORY,
    "promote": UPDATE_MEMORY,
    "demote": UPDATE_MEMORY,
}
"""``gen_ai.operation.name`` for each store call; the span is named the same."""

CALL_ATTRIBUTES: Final[Mapping[str, str]] = {
    GEN_AI_MEMORY_STORE_ID: "the store's id (store_id: a hash of the instant its schema was "
    "first created; docs/observability.md), on every span of a store that has one",
    GEN_AI_MEMORY_RECORD_ID: "the id the call names (get, invalidate, delete), or the one "
    "record a write created",
    GEN_AI_MEMORY_RECORD_COUNT: "records returned (search, get) or attempted (a write's "
    "inputs; 1 for invalidate and delete; what a forget deleted)",
    GEN_AI_MEMORY_QUERY_TEXT: "the search text; only with capture_content (opt-in: "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, SPAN_ONLY or SPAN_AND_EVENT)",
    GEN_AI_MEMORY_RECORDS: "JSON of the records written, found or got (id, content, score, "
    "metadata.kind); only with capture_content, as the query text",
}
"""The convention's attributes ``recallstore.events.otel`` sets from the store call (not
from its event), and what they hold: what the manifest documents."""

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable by which a user opts in to content in GenAI telemetry."""
CAPTURE_CONTENT_VALUES: Final = frozenset({"true", "span_only", "span_and_event"})
"""Its values (any case, spaces around ignored) that put content on spans.

OpenTelemetry's GenAI instrumentations read it two ways: as a boolean (``true``, the
OpenAI v2 instrumentation and Microsoft.Extensions.AI) and, in
``opentelemetry-util-genai``, as a mode (``NO_CONTENT``, ``SPAN_ONLY``, ``EVENT_ONLY``,
``SPAN_AND_EVENT``). The memory content attributes are span attributes, so the values
that mean "on spans" turn them on; unset, ``false``, ``NO_CONTENT``, ``EVENT_ONLY`` and
anything else leave them off."""


def capture_content_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether :data:`CAPTURE_CONTENT_ENV` asks for content on spans."""
    value = (os.environ if environ is None else environ).get(CAPTURE_CONTENT_ENV, "")
    return value.strip().lower() in CAPTURE_CONTENT_VALUES
