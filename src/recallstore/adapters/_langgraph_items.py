"""How LangGraph's items map onto records, for :mod:`recallstore.adapters.langgraph`.

A namespace is a scope (one configured field per position, inside a fixed base scope), a
key is the record's ``target.key``, a value is the record's payload and its text is the
record's content. Kept apart from the store class so the mapping reads in one place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Final

from recallstore.adapters._framework import _framework_imports
from recallstore.errors import ConfigurationError, MemoryNotFoundError, MemoryValidationError
from recallstore.records import MAX_KEY_CHARS, MemoryHit, MemoryRecord
from recallstore.values import canonical_scope, utc_now

with _framework_imports("langgraph", "the LangGraph store", "langgraph"):
    from langgraph.store.base import (
        InvalidNamespaceError,
        Item,
        MatchCondition,
        SearchItem,
        get_text_at_path,
        tokenize_path,
    )

ITEM_SECTION: Final = "langgraph.item"
"""``target.section`` of the records that hold LangGraph items."""
KEY_PREFIX: Final = "langgraph:"
"""Prefix of an item's ``idempotency_key``, so it never meets another writer's key."""
MAX_ITEM_KEY_CHARS: Final = MAX_KEY_CHARS - len(KEY_PREFIX)
"""The longest key an item may have."""


class ItemNotFoundError(MemoryNotFoundError):
    """A delete named a key that holds no current item in its namespace."""

    def __init__(self, namespace: tuple[str, ...], key: str) -> None:
        self.namespace = namespace
        self.key = key
        super().__init__(key)
        self.args = (f"no item {key!r} in namespace {namespace!r} to delete",)


class NamespaceMap:
    """Namespace ↔ scope: position ``i`` of a namespace is the scope field ``fields[i]``."""

    def __init__(self, fields: Sequence[str], base: Mapping[str, str] | None) -> None:
        if isinstance(fields, str) or not fields:
            raise ConfigurationError(
                f"namespace_fields must name one scope field per namespace position, got {fields!r}"
            )
        self.fields = tuple(fields)
        if len(set(self.fields)) != len(self.fields):
            raise ConfigurationError(f"namespace_fields has duplicates: {list(self.fields)!r}")
        self.base = canonical_scope(base or {})
        clash = sorted(set(self.fields) & set(self.base))
        if clash:
            raise ConfigurationError(
                f"namespace_fields {clash!r} are fixed by the base scope {self.base!r}"
            )
        canonical_scope(dict.fromkeys(self.fields, "x"))  # field names a scope can hold

    def scope(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The scope of ``namespace`` (every item under it has this scope or a wider one)."""
        if len(namespace) > len(self.fields):
            raise InvalidNamespaceError(
                f"namespace {namespace!r} has {len(namespace)} labels; this store maps at "
                f"most {len(self.fields)} (namespace_fields={list(self.fields)!r})"
            )
        try:
            return canonical_scope(
                {**self.base, **dict(zip(self.fields[: len(namespace)], namespace, strict=True))}
            )
        except MemoryValidationError as exc:
            raise InvalidNamespaceError(f"namespace {namespace!r}: {exc.message}") from None

    def namespace(self, record: MemoryRecord) -> tuple[str, ...] | None:
        """The namespace of an item's record; None for a record that is not an item here."""
        target = record.target
        if target is None or target.section != ITEM_SECTION or target.key is None:
            return None
        extra = set(record.scope) - set(self.base)
        depth = len(extra)
        if depth == 0 or extra != set(self.fields[:depth]):
            return None
        if any(record.scope.get(key) != value for key, value in self.base.items()):
            return None
        return tuple(record.scope[field] for field in self.fields[:depth])


def check_key(key: str) -> str:
    """An item key recallstore can hold as a target key."""
    if not isinstance(key, str) or not key:
        raise MemoryValidationError("key", "an item key must be a non-empty string", key)
    if len(key) > MAX_ITEM_KEY_CHARS:
        raise MemoryValidationError(
            "key", f"key is {len(key)} characters; the maximum is {MAX_ITEM_KEY_CHARS}", key
        )
    return key


def item_text(value: Mapping[str, Any], content_field: str, index: list[str] | None) -> str:
    """The searchable text of ``value``: the fields ``index`` names, else ``content_field``
    when it holds text, else the whole value as JSON."""
    if index is not None:
        texts = [text for path in index for text in get_text_at_path(value, tokenize_path(path))]
        joined = "\n".join(text for text in texts if text.strip())
        if joined:
            return joined
    content = value.get(content_field)
    if isinstance(content, str) and content.strip():
        return content
    chosen = value if content is None else content
    try:
        return json.dumps(chosen, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryValidationError("value", f"the value is not JSON: {exc}", dict(value)) from None


def expiry_delta(ttl_minutes: float | None) -> timedelta | None:
    """A TTL in minutes as a duration; None for none. A TTL must be positive, and end
    before the year 10000 (the last moment a record's ``expires_at`` can hold)."""
    if ttl_minutes is None:
        return None
    if isinstance(ttl_minutes, bool) or not isinstance(ttl_minutes, (int, float)):
        raise MemoryValidationError("ttl", "ttl must be a number of minutes", ttl_minutes)
    if isinstance(ttl_minutes, float) and not math.isfinite(ttl_minutes):
        raise MemoryValidationError("ttl", "ttl must be a number of minutes", ttl_minutes)
    if ttl_minutes <= 0:
        raise MemoryValidationError("ttl", "ttl must be more than 0 minutes", ttl_minutes)
    # LangGraph's own stores fail here too (timedelta or SQL interval overflow): a TTL no
    # calendar can hold is refused, not clamped, so "forever" stays ttl=None.
    try:
        delta = timedelta(minutes=ttl_minutes)
        utc_now() + delta
    except OverflowError:
        raise MemoryValidationError(
            "ttl", "ttl must end before the year 10000; use ttl=None for no expiry", ttl_minutes
        ) from None
    return delta


def to_item(namespace: tuple[str, ...], record: MemoryRecord) -> Item:
    """The LangGraph item a record holds. Its timestamps are this version's."""
    return Item(
        namespace=namespace,
        key=_key(record),
        value=_value(record),
        created_at=record.created_at,
        updated_at=record.created_at,
    )


def to_search_item(namespace: tuple[str, ...], hit: MemoryHit) -> SearchItem:
    """A search hit as a LangGraph search item, with the backend's score (None in a listing)."""
    record = hit.record
    return SearchItem(
        namespace=namespace,
        key=_key(record),
        value=_value(record),
        created_at=record.created_at,
        updated_at=record.created_at,
        score=hit.score,
    )


def _key(record: MemoryRecord) -> str:
    return record.target.key or "" if record.target is not None else ""


def _value(record: MemoryRecord) -> dict[str, Any]:
    payload = record.payload
    return dict(payload) if isinstance(payload, dict) else {"content": record.content}


_OPERATORS: Final = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """True when ``value`` meets every condition: equality, or ``{"$op": operand}`` with
    LangGraph's operators; a dotted name reaches into nested objects."""
    for path, wanted in (conditions or {}).items():
        found: Any = value
        for part in path.split("."):
            found = found.get(part) if isinstance(found, Mapping) else None
        if isinstance(wanted, Mapping) and wanted and all(op in _OPERATORS for op in wanted):
            try:
                if not all(_OPERATORS[op](found, operand) for op, operand in wanted.items()):
                    return False
            except TypeError:  # None, or a type that does not order against the operand
                return False
        elif found != wanted:
            return False
    return True


def check_filter(conditions: Mapping[str, Any] | None) -> None:
    """Refuse an operator LangGraph does not define, before anything runs."""
    for path, wanted in (conditions or {}).items():
        if isinstance(wanted, Mapping):
            unknown = [op for op in wanted if str(op).startswith("$") and op not in _OPERATORS]
            if unknown:
                raise MemoryValidationError(
                    f"filter.{path}",
                    f"unknown operator(s) {unknown!r}; use {sorted(_OPERATORS)!r}",
                    dict(wanted),
                )


def matches_conditions(namespace: tuple[str, ...], conditions: Iterable[MatchCondition]) -> bool:
    """LangGraph's namespace match: a prefix or suffix, label by label, ``*`` any one label."""
    for condition in conditions:
        path = tuple(condition.path)
        if len(path) > len(namespace):
            return False
        part = namespace[: len(path)] if condition.match_type == "prefix" else None
        if part is None:
            part = namespace[len(namespace) - len(path) :]
        if any(want not in ("*", have) for want, have in zip(path, part, strict=True)):
            return False
    return True


def literal_prefix(conditions: Iterable[MatchCondition]) -> tuple[str, ...]:
    """The labels a prefix condition fixes before its first ``*``: they narrow the scope."""
    for condition in conditions:
        if condition.match_type == "prefix":
            fixed: list[str] = []
            for label in condition.path:
                if label == "*":
                    break
                fixed.append(label)
            return tuple(fixed)
    return ()
