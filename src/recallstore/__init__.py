"""recallstore: cross-session memory for LLM agents.

Scoped per tenant and user, invalidated instead of overwritten, local-first on a
bundled SQLite FTS5 store, and observable.
"""

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.context import CallContext, call_context, current_call_context
from recallstore.errors import (
    ConfigurationError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    MissingDependencyError,
    RecallstoreError,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.records import (
    DEFAULT_LIMIT,
    MAX_CONTENT_CHARS,
    MAX_LIMIT,
    MEMORY_KINDS,
    MemoryHit,
    MemoryKind,
    MemoryRecord,
    MemorySearchQuery,
    MemoryStoreCapabilities,
    MemoryTarget,
    MemoryWriteInput,
    Provenance,
)
from recallstore.store import MemoryStore

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_CONTENT_CHARS",
    "MAX_LIMIT",
    "MEMORY_KINDS",
    "CallContext",
    "ConfigurationError",
    "InMemoryMemoryStore",
    "MemoryConflictError",
    "MemoryHit",
    "MemoryKind",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemorySearchQuery",
    "MemoryStore",
    "MemoryStoreCapabilities",
    "MemoryTarget",
    "MemoryValidationError",
    "MemoryWriteInput",
    "MissingDependencyError",
    "Provenance",
    "RecallstoreError",
    "StoreIncompatibleError",
    "StoreUnavailableError",
    "__version__",
    "call_context",
    "current_call_context",
]
