"""recallstore: cross-session memory for LLM agents.

Scoped per tenant and user, invalidated instead of overwritten, local-first on a
bundled SQLite FTS5 store, and observable over SSE and OpenTelemetry.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from recallstore._version import __version__
from recallstore.backends.base import BaseMemoryStore, StoreDescription
from recallstore.backends.registry import bundled_backend_classes as _bundled_backend_classes
from recallstore.backends.registry import describe_store, register_backend
from recallstore.capability import MemoryCapability, MemoryInstance, memory_prompt
from recallstore.capture import CaptureResult, capture
from recallstore.chain import ChainLink, SupersedeChain, supersede_chain
from recallstore.context import CallContext, call_context, current_call_context
from recallstore.embedding import Embedder, InProcessEmbedder, QueryEmbedder
from recallstore.errors import (
    AlteredDependencyError,
    ConfigurationError,
    EmbedderFailedError,
    EmbedderMismatchError,
    EmbedderSwitchedError,
    IncompatibleDependencyError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    MissingDependencyError,
    RecallstoreError,
    StoreIncompatibleError,
    StoreUnavailableError,
)
from recallstore.events import EVENT_TYPES, EventBus, MemoryEvent, ObservedMemoryStore
from recallstore.learning import Learned, assemble_learned
from recallstore.load import load_memory_store
from recallstore.prompt import (
    Awareness,
    LearnedLine,
    Manual,
    RenderContext,
    render_learned,
    render_recall,
)
from recallstore.recall import Recall, RecallObserver, assemble_recall
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
from recallstore.scope_text import format_scope, parse_scope_text
from recallstore.scoped_memory import ScopedMemory
from recallstore.scripted import Reply, ScriptedConversation, ScriptedModel, ToolCall
from recallstore.store import (
    PROMOTE_EXTENSION,
    PROMOTION_KINDS,
    Corroboration,
    LedgerEntry,
    MemoryStore,
    Promotion,
    PromotionGate,
    PromotionRefusedError,
    SupportsPromotion,
    deterministic_ids,
)
from recallstore.sync import SyncMemoryCapability, SyncMemoryStore, SyncToolbox
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import (
    Tool,
    ToolArguments,
    ToolFailure,
    ToolResult,
    ToolSpec,
    anthropic_tool,
    mcp_tool,
    openai_tool,
)
from recallstore.toolset import MEMORY_TOOLS, MemoryToolSpec

if TYPE_CHECKING:
    from recallstore.backends.memory import InMemoryMemoryStore
    from recallstore.backends.postgres import PostgresMemoryStore
    from recallstore.backends.sqlite import SqliteMemoryStore

# The backends are imported on first use, so ``import recallstore`` loads none of them.
_BACKENDS = _bundled_backend_classes()


def __getattr__(name: str) -> Any:
    module = _BACKENDS.get(name)
    if module is None:
        raise AttributeError(f"module 'recallstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_BACKENDS})


__all__ = [
    "DEFAULT_LIMIT",
    "EVENT_TYPES",
    "MAX_CONTENT_CHARS",
    "MAX_LIMIT",
    "MEMORY_KINDS",
    "MEMORY_TOOLS",
    "PROMOTE_EXTENSION",
    "PROMOTION_KINDS",
    "AlteredDependencyError",
    "Awareness",
    "BaseMemoryStore",
    "CallContext",
    "CaptureResult",
    "ChainLink",
    "ConfigurationError",
    "Corroboration",
    "Embedder",
    "EmbedderFailedError",
    "EmbedderMismatchError",
    "EmbedderSwitchedError",
    "EventBus",
    "InMemoryMemoryStore",
    "InProcessEmbedder",
    "IncompatibleDependencyError",
    "Learned",
    "LearnedLine",
    "LedgerEntry",
    "Manual",
    "MemoryCapability",
    "MemoryConflictError",
    "MemoryEvent",
    "MemoryHit",
    "MemoryInstance",
    "MemoryKind",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemorySearchQuery",
    "MemoryStore",
    "MemoryStoreCapabilities",
    "MemoryTarget",
    "MemoryToolSpec",
    "MemoryToolbox",
    "MemoryValidationError",
    "MemoryWriteInput",
    "MissingDependencyError",
    "ObservedMemoryStore",
    "PostgresMemoryStore",
    "Promotion",
    "PromotionGate",
    "PromotionRefusedError",
    "Provenance",
    "QueryEmbedder",
    "Recall",
    "RecallObserver",
    "RecallstoreError",
    "RenderContext",
    "Reply",
    "ScopedMemory",
    "ScriptedConversation",
    "ScriptedModel",
    "SqliteMemoryStore",
    "StoreDescription",
    "StoreIncompatibleError",
    "StoreUnavailableError",
    "SupersedeChain",
    "SupportsPromotion",
    "SyncMemoryCapability",
    "SyncMemoryStore",
    "SyncToolbox",
    "Tool",
    "ToolArguments",
    "ToolCall",
    "ToolFailure",
    "ToolResult",
    "ToolSpec",
    "__version__",
    "anthropic_tool",
    "assemble_learned",
    "assemble_recall",
    "call_context",
    "capture",
    "current_call_context",
    "describe_store",
    "deterministic_ids",
    "format_scope",
    "load_memory_store",
    "mcp_tool",
    "memory_prompt",
    "openai_tool",
    "parse_scope_text",
    "register_backend",
    "render_learned",
    "render_recall",
    "supersede_chain",
]
