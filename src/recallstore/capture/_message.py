"""The one shape every transcript becomes: :class:`Message`, checked once at the edge."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal

from recallstore.errors import MemoryValidationError
from recallstore.values import FIRST_YEAR, MAX_ID_CHARS, check_storable

Role = Literal["user", "assistant", "system", "tool"]

ROLE_NAMES: Final[dict[str, Role]] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
"""The role names the shapes use, each mapped to one of the four roles capture knows."""


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a transcript, whatever shape it came in.

    ``index`` is the item's position in the transcript as given; ``part`` numbers the
    messages one item became (an assistant turn with text and two tool calls is parts
    0, 1 and 2). ``tool`` marks a tool call (role ``assistant``) or a tool result (role
    ``tool``), written out as text. ``name`` is the speaker's own name when the shape
    gives one (OpenAI's ``name``, an ADK event's author). ``id`` is the item's own id
    when its shape has a stable one (an ADK event's), which then names the message
    instead of ``index``.
    """

    index: int
    part: int
    role: Role
    text: str
    time: datetime | None = None
    name: str | None = None
    tool: bool = False
    id: str | None = None


def field_name(index: int, part: str | None = None) -> str:
    """The field an error names: ``transcript[3]`` or ``transcript[3].content``."""
    return f"transcript[{index}]" + (f".{part}" if part else "")


def role_of(value: Any, index: int) -> Role:
    """One of the four roles, or a validation error naming the item."""
    role = ROLE_NAMES.get(value.lower()) if isinstance(value, str) else None
    if role is None:
        raise MemoryValidationError(
            field_name(index, "role"),
            f"is not a role capture knows ({', '.join(sorted(ROLE_NAMES))})",
            value,
        )
    return role


TIME_KEYS: Final = ("time", "timestamp", "created_at", "createdAt")
"""The keys a message mapping's time is read from: ours, ADK's ``Event.timestamp`` (and
most logs'), OpenAI Assistants' ``created_at``, the Vercel AI SDK's ``createdAt``."""


def mapping_time(item: Any, index: int) -> datetime | None:
    """The time of a message mapping from whichever :data:`TIME_KEYS` it has; two that
    say different moments are refused, naming both."""
    found = {key: time_of(item[key], index) for key in TIME_KEYS if item.get(key) is not None}
    moments = set(found.values())
    if len(moments) > 1:
        said = {key: item[key] for key in found}
        raise MemoryValidationError(
            field_name(index, "time"), f"the message gives different times: {said!r}", said
        )
    return moments.pop() if moments else None


def time_of(value: Any, index: int) -> datetime | None:
    """A message time: an aware datetime, ISO 8601 text or epoch seconds; None for none."""
    if value is None:
        return None
    field = field_name(index, "time")
    moment: datetime
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise MemoryValidationError(field, "is not an ISO 8601 time", value) from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(value, UTC)
        except (ValueError, OverflowError, OSError):
            raise MemoryValidationError(field, "is not a time in epoch seconds", value) from None
    else:
        raise MemoryValidationError(
            field, "must be a datetime, ISO 8601 text or epoch seconds", value
        )
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise MemoryValidationError(field, "must be timezone-aware (say +00:00 or Z)", value)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # 0001-01-01 east of UTC, 9999-12-31 west of it: no datetime holds it in UTC.
        raise MemoryValidationError(
            field,
            f"{value!r} is outside the years {FIRST_YEAR} to 9999 a memory's time can have",
            value,
        ) from None


def text_of(value: Any, index: int) -> str:
    """Message text as stored: a string without NUL or lone surrogates, stripped."""
    if not isinstance(value, str):
        raise MemoryValidationError(field_name(index, "content"), "must be text", value)
    try:
        return check_storable(value, "content").strip()
    except ValueError as exc:
        raise MemoryValidationError(field_name(index, "content"), str(exc), value) from None


def name_of(value: Any, index: int) -> str | None:
    """The speaker's name, or None; at most MAX_ID_CHARS characters of storable text."""
    if value is None or value == "":
        return None
    text = text_of(value, index)
    if len(text) > MAX_ID_CHARS:
        raise MemoryValidationError(
            field_name(index, "name"), f"is longer than {MAX_ID_CHARS} characters", value
        )
    return text or None


def call_text(name: Any, arguments: Any) -> str:
    """A tool call written out: ``name(arguments as JSON)``."""
    return f"{name}({arguments if isinstance(arguments, str) else _json(arguments)})"


def result_text(value: Any) -> str:
    """A tool result written out: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else _json(value)


def _json(value: Any) -> str:
    """``value`` as JSON; where JSON cannot write it (nested thousands deep, an integer
    past Python's digit limit, a cycle), a note saying so in its place: the message's
    other parts are still captured, and the note is what its record says."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except RecursionError:
        why = "nested too deeply"
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            why = f"holds an integer of more than {sys.get_int_max_str_digits()} digits"
        else:
            why = str(exc)  # a cycle
    return f"<not written out as JSON: {why}>"
