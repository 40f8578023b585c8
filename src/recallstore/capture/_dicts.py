"""Plain shapes: ``(role, text, time)``, OpenAI chat and Responses items, Anthropic messages.

Each converter turns one transcript item into its messages; text parts of one item are
joined into one message, and each tool call or tool result is a message of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from recallstore.capture._message import (
    Message,
    Role,
    call_text,
    field_name,
    mapping_time,
    name_of,
    result_text,
    role_of,
    text_of,
    time_of,
)
from recallstore.errors import MemoryValidationError

_TEXT_PARTS: Final = frozenset({"text", "input_text", "output_text"})
"""Content-part types holding text: Chat Completions / Anthropic, Responses input and output."""
_SKIPPED_ITEMS: Final = frozenset({"reasoning", "image_generation_call", "file_search_call"})


def from_tuple(item: Sequence[Any], index: int) -> list[Message]:
    """``(role, text)`` or ``(role, text, time)``."""
    if len(item) not in (2, 3):
        raise MemoryValidationError(
            field_name(index), f"a tuple must be (role, text, time), got {len(item)} items", item
        )
    role = role_of(item[0], index)
    time = time_of(item[2], index) if len(item) == 3 else None
    text = text_of(item[1], index)
    return [Message(index, 0, role, text, time, tool=role == "tool")] if text else []


def from_mapping(item: Mapping[str, Any], index: int) -> list[Message]:
    """A chat message (OpenAI or Anthropic, ``content`` text or a list of parts) or a
    Responses item (``{"type": "function_call", ...}``)."""
    kind = item.get("type")
    if "role" not in item:
        return _responses_item(item, kind, index)
    role = role_of(item["role"], index)
    time = mapping_time(item, index)
    name = name_of(item.get("name"), index)
    texts: list[str] = []
    tools: list[tuple[Role, str]] = []
    content = item.get("content")
    if isinstance(content, str):
        texts.append(text_of(content, index))
    elif isinstance(content, Sequence):
        for block in content:
            _read_block(block, index, texts, tools)
    elif content is not None:
        raise MemoryValidationError(
            field_name(index, "content"), "must be text or a list of parts", content
        )
    for call in item.get("tool_calls") or ():
        function = _get(call, "function") or call
        tools.append(("assistant", call_text(_get(function, "name"), _get(function, "arguments"))))
    text = "\n".join(part for part in texts if part)
    if role == "tool":
        # A Chat Completions tool result: its content is the result.
        return [Message(index, 0, "tool", text, time, name, tool=True)] if text else []
    return _assemble(index, role, text, tools, time, name)


def _read_block(block: Any, index: int, texts: list[str], tools: list[tuple[Role, str]]) -> None:
    if isinstance(block, str):
        texts.append(text_of(block, index))
        return
    kind = _get(block, "type")
    if kind in _TEXT_PARTS:
        texts.append(text_of(_get(block, "text") or "", index))
    elif kind == "refusal":
        texts.append(text_of(_get(block, "refusal") or "", index))
    elif kind == "tool_use":
        tools.append(("assistant", call_text(_get(block, "name"), _get(block, "input"))))
    elif kind == "tool_result":
        inner = _get(block, "content")
        if isinstance(inner, list):
            parts: list[str] = []
            for sub in inner:
                _read_block(sub, index, parts, tools)
            inner = "\n".join(part for part in parts if part)
        tools.append(("tool", text_of(result_text(inner or ""), index)))
    # Images, documents, audio and thinking blocks hold no text to remember.


def _responses_item(item: Mapping[str, Any], kind: Any, index: int) -> list[Message]:
    if kind == "function_call":
        text = call_text(item.get("name"), item.get("arguments"))
        return [Message(index, 0, "assistant", text_of(text, index), tool=True)]
    if kind == "function_call_output":
        text = text_of(result_text(item.get("output")), index)
        return [Message(index, 0, "tool", text, tool=True)] if text else []
    if kind in _SKIPPED_ITEMS or (isinstance(kind, str) and kind.endswith("_call")):
        return []
    raise MemoryValidationError(
        field_name(index),
        "is not a message capture knows: a mapping needs a 'role' (a chat message) "
        "or a Responses 'type'",
        item,
    )


def _assemble(
    index: int,
    role: Role,
    text: str,
    tools: list[tuple[Role, str]],
    time: Any,
    name: str | None,
) -> list[Message]:
    """The item's text as part 0 (when there is any), then each tool call or result."""
    messages = [Message(index, 0, role, text, time, name)] if text else []
    for tool_role, tool_text in tools:
        if tool_text:
            messages.append(
                Message(index, len(messages), tool_role, tool_text, time, name, tool=True)
            )
    return messages


def _get(value: Any, key: str) -> Any:
    """``value[key]`` of a mapping, else the attribute (SDK objects), else None."""
    if isinstance(value, Mapping):
        return value.get(key)
    return getattr(value, key, None)
