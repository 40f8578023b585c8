"""Framework objects: pydantic-ai ``ModelMessage``, LangChain ``BaseMessage``, ADK ``Event``.

Read by their attributes, so capture imports no framework: a pydantic-ai message has
``kind`` and ``parts``, an ADK event ``author`` and ``invocation_id``, a LangChain
message a ``type`` such as ``"human"`` and ``content``. Any other object with ``role``
and ``content`` (an Anthropic SDK ``Message``) is read as the mapping it would dump to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from recallstore.capture._dicts import from_mapping
from recallstore.capture._message import (
    Message,
    Role,
    call_text,
    name_of,
    result_text,
    role_of,
    text_of,
    time_of,
)

_LANGCHAIN_TYPES: Final[dict[str, str]] = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
}


def from_object(item: Any, index: int) -> list[Message] | None:
    """The messages of a framework object, or None when it is no shape capture knows."""
    kind = getattr(item, "kind", None)
    if kind in ("request", "response") and hasattr(item, "parts"):
        return _pydantic_ai(item, kind, index)
    if hasattr(item, "author") and hasattr(item, "invocation_id"):
        return _adk_event(item, index)
    message_type = getattr(item, "type", None)
    if isinstance(message_type, str) and hasattr(item, "content"):
        if message_type in _LANGCHAIN_TYPES:
            return _langchain(item, _LANGCHAIN_TYPES[message_type], index)
        if message_type == "chat":
            return _langchain(item, getattr(item, "role", None), index)
    if hasattr(item, "role") and hasattr(item, "content"):
        fields = {"role": item.role, "content": item.content, "name": getattr(item, "name", None)}
        return from_mapping(fields, index)
    return None


def _pydantic_ai(item: Any, kind: str, index: int) -> list[Message]:
    messages: list[Message] = []

    def add(role: Role, text: str, time: Any, *, tool: bool = False) -> None:
        if text:
            messages.append(
                Message(index, len(messages), role, text, time_of(time, index), None, tool)
            )

    if kind == "response":
        time = getattr(item, "timestamp", None)
        texts = [
            text_of(part.content, index)
            for part in item.parts
            if getattr(part, "part_kind", None) == "text"
        ]
        add("assistant", "\n".join(text for text in texts if text), time)
        for part in item.parts:
            if getattr(part, "part_kind", None) == "tool-call":
                add(
                    "assistant",
                    text_of(call_text(part.tool_name, part.args), index),
                    time,
                    tool=True,
                )
        return messages
    for part in item.parts:
        part_kind = getattr(part, "part_kind", None)
        time = getattr(part, "timestamp", None) or getattr(item, "timestamp", None)
        if part_kind == "system-prompt":
            add("system", text_of(part.content, index), time)
        elif part_kind == "user-prompt":
            content = part.content
            if not isinstance(content, str):
                content = "\n".join(piece for piece in content if isinstance(piece, str))
            add("user", text_of(content, index), time)
        elif part_kind in ("tool-return", "retry-prompt"):
            add("tool", text_of(result_text(part.content), index), time, tool=True)
    return messages


def _adk_event(item: Any, index: int) -> list[Message]:
    author = getattr(item, "author", None)
    role: Role = "user" if author == "user" else "assistant"
    name = None if author == "user" else name_of(author, index)
    time = time_of(getattr(item, "timestamp", None), index)
    content = getattr(item, "content", None)
    parts = getattr(content, "parts", None) or ()
    texts = [
        text_of(part.text, index)
        for part in parts
        if getattr(part, "text", None) and not getattr(part, "thought", None)
    ]
    event_id = name_of(getattr(item, "id", None), index)
    messages: list[Message] = []
    text = "\n".join(piece for piece in texts if piece)
    if text:
        messages.append(Message(index, 0, role, text, time, name, id=event_id))
    for part in parts:
        call = getattr(part, "function_call", None)
        response = getattr(part, "function_response", None)
        if call is not None:
            tool_text = text_of(call_text(call.name, call.args), index)
            messages.append(
                Message(index, len(messages), "assistant", tool_text, time, name, True, event_id)
            )
        elif response is not None:
            tool_text = text_of(result_text(response.response), index)
            messages.append(
                Message(index, len(messages), "tool", tool_text, time, name, True, event_id)
            )
    return messages


def _langchain(item: Any, role_name: Any, index: int) -> list[Message]:
    role = role_of(role_name, index)
    fields: dict[str, Any] = {"role": role, "content": _content(item.content)}
    fields["name"] = getattr(item, "name", None)
    if role == "assistant":
        fields["tool_calls"] = [
            {"name": call.get("name"), "arguments": call.get("args")}
            for call in getattr(item, "tool_calls", None) or ()
        ]
    return from_mapping(fields, index)


def _content(content: Any) -> Any:
    """LangChain content: text, or a list of text and blocks (``{"type": "text", ...}``)."""
    if isinstance(content, str) or not isinstance(content, Sequence):
        return content
    return [block for block in content if isinstance(block, str | dict)]
