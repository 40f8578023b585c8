"""Prompt text memory produces, rendered purely: the recall and learned blocks, the Manual.

Templates live in ``recallstore/prompt/templates`` and ship as package data.
"""

from recallstore.prompt._excerpt import excerpt as excerpt_of
from recallstore.prompt._learned import (
    LEARNED_CLOSE,
    LEARNED_HEADINGS,
    LEARNED_OPEN,
    LearnedLine,
    RenderedLearned,
    render_learned,
)
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
    "LEARNED_CLOSE",
    "LEARNED_HEADINGS",
    "LEARNED_OPEN",
    "RECALL_CLOSE",
    "RECALL_OPEN",
    "Awareness",
    "LearnedLine",
    "Manual",
    "RenderContext",
    "RenderedLearned",
    "entry_handle",
    "escape_memory_text",
    "excerpt_of",
    "recall_entry_size",
    "recall_frame_size",
    "render_learned",
    "render_recall",
]
