"""Prompt text produced by memory: the recall block and the Manual, rendered purely.

Templates live in ``recallstore/prompt/templates`` and ship as package data.
"""

from recallstore.prompt._excerpt import excerpt as excerpt_of
from recallstore.prompt._render import (
    RECALL_CLOSE,
    RECALL_OPEN,
    Awareness,
    Manual,
    RenderContext,
    entry_handle,
    escape_memory_text,
    recall_entry_size,
    recall_frame_size,
    render_recall,
)

__all__ = [
    "RECALL_CLOSE",
    "RECALL_OPEN",
    "Awareness",
    "Manual",
    "RenderContext",
    "entry_handle",
    "escape_memory_text",
    "excerpt_of",
    "recall_entry_size",
    "recall_frame_size",
    "render_recall",
]
