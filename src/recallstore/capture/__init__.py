"""Capture: a whole conversation stored verbatim as ``episode`` records, idempotently.

``capture(store, scope, transcript, conversation_id=...)`` takes the message shapes
hosts hold — ``(role, text, time)`` tuples, OpenAI chat messages and Responses items,
Anthropic messages, pydantic-ai ``ModelMessage``s, LangChain messages, ADK events —
turns them into one internal shape, validated once, and writes one record per message
(or per chunk of a long one) in one store write. Capturing the same or a longer
transcript again adds only what is new. See docs/capture.md.
"""

from __future__ import annotations

from recallstore.capture._capture import (
    CAPTURE_TAG,
    DEFAULT_MAX_CHUNK_CHARS,
    DEFAULT_ROLES,
    CaptureResult,
    ToolCalls,
    capture,
    read_transcript,
)
from recallstore.capture._chunks import split_text
from recallstore.capture._message import Message, Role

__all__ = [
    "CAPTURE_TAG",
    "DEFAULT_MAX_CHUNK_CHARS",
    "DEFAULT_ROLES",
    "CaptureResult",
    "Message",
    "Role",
    "ToolCalls",
    "capture",
    "read_transcript",
    "split_text",
]
