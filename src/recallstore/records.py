"""The data contract: memory records, write inputs, queries and hits.

Every model is a frozen pydantic model validated once, at construction. Invalid
input raises :class:`~recallstore.errors.MemoryValidationError` naming the field.
This module imports nothing from the machinery (stores, events, exporters).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, ClassVar, Final, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from recallstore._payload import check_payload
from recallstore.errors import MemoryValidationError
from recallstore.values import (
    DEFAULT_LIMIT,
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_LIMIT,
    MAX_OBSERVED_SKEW,
    MAX_REASON_CHARS,
    MAX_SCOPE_KEYS,
    MAX_SCOPE_PART_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    canonical_scope,
    check_invalid_reason,
    check_storable,
    check_text,
    format_timestamp,
    normalise_tags,
    parse_scope_pairs,
    utc_moment,
)

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_CONTENT_CHARS",
    "MAX_KEY_CHARS",
    "MAX_LIMIT",
    "MAX_OBSERVED_SKEW",
    "MAX_REASON_CHARS",
    "MAX_SCOPE_KEYS",
    "MAX_SCOPE_PART_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MEMORY_KINDS",
    "MemoryHit",
    "MemoryKind",
    "MemoryRecord",
    "MemorySearchQuery",
    "MemoryStoreCapabilities",
    "MemoryTarget",
    "MemoryWriteInput",
    "Provenance",
    "RecordStatus",
    "SearchMode",
    "check_invalid_reason",
    "format_timestamp",
    "parse_scope_pairs",
]

MemoryKind = Literal["fact", "preference", "episode", "profile"]
MEMORY_KINDS: tuple[MemoryKind, ...] = get_args(MemoryKind)
SearchMode = Literal["keyword", "semantic", "hybrid"]
RecordStatus = Literal["valid", "superseded", "invalidated", "expired"]


def _to_validation_error(exc: ValidationError) -> MemoryValidationError:
    first = exc.errors(include_url=False)[0]
    path = [str(part) for part in first["loc"]]
    # pydantic runs our __init__ for nested models and wraps what it raises: unwrap it.
    nested = first.get("ctx", {}).get("error")
    if isinstance(nested, MemoryValidationError):
        parts = [*path, nested.field] if nested.field else path
        return MemoryValidationError(".".join(parts), nested.message, nested.value)
    field = ".".join(path) or exc.title
    message = first["msg"].removeprefix("Value error, ")
    return MemoryValidationError(field, message, first.get("input"))


class _Contract(BaseModel):
    """Base of every contract model: frozen, strict about unknown fields."""

    model_config: ClassVar[ConfigDict] = ConfigDict(
        frozen=True, extra="forbid", str_strip_whitespace=False
    )

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _to_validation_error(exc) from None

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate ``obj``; raises :class:`MemoryValidationError` naming the field."""
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            raise _to_validation_error(exc) from None

    @classmethod
    def model_validate_json(cls, json_data: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate JSON text; raises :class:`MemoryValidationError` naming the field."""
        try:
            return super().model_validate_json(json_data, *args, **kwargs)
        except ValidationError as exc:
            raise _to_validation_error(exc) from None

    @classmethod
    def trusted(cls, fields: dict[str, Any], fields_set: Iterable[str] | None = None) -> Self:
        """An instance of ``fields`` that were validated before (a stored row, the fields
        of a validated input), given every field in field order: not validated again.

        What ``model_construct`` builds, without its per-field loop (most of its cost),
        for models with no private attributes, extras or ``model_post_init`` (a test
        pins that). ``fields_set`` is its ``model_fields_set`` (default: every field).
        """
        instance = cls.__new__(cls)
        _set = object.__setattr__
        _set(instance, "__dict__", fields)
        _set(instance, "__pydantic_fields_set__", set(fields if fields_set is None else fields_set))
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance


def _storable_text(value: str) -> str:
    return check_storable(value, "the value")


_Text = Annotated[str, AfterValidator(_storable_text)]
"""A string every backend can store: no NUL, no lone surrogate."""


def _scope_field(value: Any) -> dict[str, str]:
    # Inside a validator the rule's error is a ValueError, which pydantic names the field by.
    try:
        return canonical_scope(value)
    except MemoryValidationError as exc:
        raise ValueError(exc.message) from None


class Provenance(_Contract):
    """Where a memory came from: the conversation, run and author that wrote it."""

    conversation_id: _Text | None = Field(default=None, max_length=MAX_ID_CHARS * 2)
    run_id: _Text | None = Field(default=None, max_length=MAX_ID_CHARS * 2)
    author: _Text | None = Field(default=None, max_length=MAX_ID_CHARS * 2)


class MemoryTarget(_Contract):
    """A typed pointer for a later promotion layer; stored and returned untouched."""

    section: _Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    key: _Text | None = Field(default=None, max_length=MAX_KEY_CHARS)


class _WritableFields(_Contract):
    scope: dict[str, str]
    kind: MemoryKind = "fact"
    content: str
    tags: tuple[str, ...] = ()
    provenance: Provenance | None = None
    expires_at: datetime | None = None
    target: MemoryTarget | None = None
    payload: JsonValue | None = None
    supports: tuple[Provenance, ...] = ()
    idempotency_key: _Text | None = Field(default=None, min_length=1, max_length=MAX_KEY_CHARS)
    """The writer's own name for this memory; unique per scope among valid records (S16)."""

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: Any) -> dict[str, str]:
        return _scope_field(value)

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        stripped = value.strip()
        if not stripped:
            raise ValueError("content must not be empty or whitespace")
        return check_text(stripped, "content", MAX_CONTENT_CHARS)

    @field_validator("payload", mode="before")
    @classmethod
    def _payload(cls, value: Any) -> Any:
        # Before pydantic's own JsonValue check, which recurses (a deep payload named a
        # 6 KB field path) and lets NaN, Infinity and unprintable integers through.
        return check_payload(value)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> tuple[str, ...]:
        return normalise_tags(value)

    @field_validator("expires_at")
    @classmethod
    def _expires(cls, value: datetime | None) -> datetime | None:
        return utc_moment(value)

    @field_serializer("expires_at", when_used="json")
    def _dump_expires(self, value: datetime | None) -> str | None:
        return None if value is None else format_timestamp(value)


_SAID_FIELDS: Final = ("kind", "content", "tags", "target", "payload", "expires_at")


class MemoryWriteInput(_WritableFields):
    """What a caller writes: the record's writable fields plus ``supersedes`` and
    ``observed_at``.

    ``supersedes`` names an existing, still-valid record that this one corrects; the
    store invalidates it in the same transaction. ``observed_at`` is when the
    remembered thing was said or happened (an imported conversation's date); None
    means now, the record's ``created_at``. The store refuses one more than
    :data:`MAX_OBSERVED_SKEW` after its clock.
    """

    supersedes: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    observed_at: datetime | None = None

    @field_validator("observed_at")
    @classmethod
    def _observed(cls, value: datetime | None) -> datetime | None:
        return utc_moment(value)

    @field_serializer("observed_at", when_used="json")
    def _dump_observed(self, value: datetime | None) -> str | None:
        return None if value is None else format_timestamp(value)

    def says_the_same_as(self, record: MemoryRecord) -> bool:
        """True when ``record`` already holds what this input says (S16): same kind,
        content, tags, target, payload and expiry (provenance and observed_at may differ)."""
        return all(getattr(self, name) == getattr(record, name) for name in _SAID_FIELDS)


class MemoryRecord(_WritableFields):
    """A stored memory: a fact with provenance and validity, never a scored row."""

    id: _Text = Field(min_length=1, max_length=MAX_ID_CHARS)
    created_at: datetime
    updated_at: datetime
    invalid_at: datetime | None = None
    invalid_reason: _Text | None = Field(default=None, max_length=MAX_REASON_CHARS)
    superseded_by: _Text | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    # The before-validator always fills it (from created_at): the default is never used.
    observed_at: datetime = Field(default=None)  # type: ignore[assignment]
    """When the remembered thing was said or happened; ``created_at`` unless the writer
    said otherwise (a record given without one, as older exports are, takes it)."""

    @model_validator(mode="before")
    @classmethod
    def _observed_defaults_to_created(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("observed_at") is None:
            return {**data, "observed_at": data.get("created_at")}
        return data

    @field_validator("created_at", "updated_at", "invalid_at", "observed_at")
    @classmethod
    def _timestamps(cls, value: datetime | None) -> datetime | None:
        return utc_moment(value)

    @model_validator(mode="after")
    def _observed_not_after_created(self) -> Self:
        if self.observed_at > self.created_at + MAX_OBSERVED_SKEW:
            raise MemoryValidationError(
                "observed_at",
                f"{format_timestamp(self.observed_at)} is after created_at "
                f"{format_timestamp(self.created_at)}: a thing is saved after it happens",
                self.observed_at,
            )
        return self

    @field_serializer("created_at", "updated_at", "invalid_at", "observed_at", when_used="json")
    def _dump_timestamps(self, value: datetime | None) -> str | None:
        return None if value is None else format_timestamp(value)

    @property
    def is_invalidated(self) -> bool:
        """True once the record was invalidated or superseded."""
        return self.invalid_at is not None

    def is_expired(self, now: datetime) -> bool:
        """True when the record has an ``expires_at`` at or before ``now``."""
        return self.expires_at is not None and self.expires_at <= now

    def status(self, now: datetime) -> RecordStatus:
        """One word for where the record stands; superseded and invalidated win over expired."""
        if self.superseded_by is not None:
            return "superseded"
        if self.invalid_at is not None:
            return "invalidated"
        return "expired" if self.is_expired(now) else "valid"


class MemorySearchQuery(_Contract):
    """A search: optional query text plus filters. Blank text means a recency listing."""

    query: str | None = None
    scope: dict[str, str] = Field(default_factory=dict)
    kinds: tuple[MemoryKind, ...] | None = None
    tags: tuple[str, ...] | None = None
    limit: int = Field(default=DEFAULT_LIMIT, ge=0, le=MAX_LIMIT)
    include_invalidated: bool = False
    include_expired: bool = False
    target_key: _Text | None = Field(default=None, min_length=1, max_length=MAX_KEY_CHARS)
    """Only records whose ``target.key`` equals this (S8)."""
    observed_after: datetime | None = None
    """Only records observed at or after this (S19): the window is half-open."""
    observed_before: datetime | None = None
    """Only records observed strictly before this (S19)."""
    as_of: datetime | None = None
    """The store as it stood at this instant (S20): records created by then, and S9's
    validity and expiry judged then instead of now."""

    @field_validator("observed_after", "observed_before", "as_of")
    @classmethod
    def _moments(cls, value: datetime | None) -> datetime | None:
        return utc_moment(value)

    @model_validator(mode="after")
    def _window_not_empty(self) -> Self:
        after, before = self.observed_after, self.observed_before
        if after is not None and before is not None and after >= before:
            raise MemoryValidationError(
                "observed_before",
                f"{format_timestamp(before)} is not after observed_after "
                f"{format_timestamp(after)}: the window [after, before) is empty",
                before,
            )
        return self

    @field_validator("query")
    @classmethod
    def _query(cls, value: str | None) -> str | None:
        # Queries are user text: NUL and the like are allowed (S13); only size is bounded.
        if value is not None and len(value) > MAX_CONTENT_CHARS:
            raise ValueError(
                f"query is {len(value)} characters; the maximum is {MAX_CONTENT_CHARS}"
            )
        return value

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: Any) -> dict[str, str]:
        return _scope_field(value)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> tuple[str, ...] | None:
        return None if value is None else normalise_tags(value)

    @property
    def is_listing(self) -> bool:
        """True when there is no query text: results are ordered by recency."""
        return self.query is None or not self.query.strip()


class MemoryHit(_Contract):
    """One search result. ``score`` is backend-specific; never compare it across backends."""

    record: MemoryRecord
    score: float | None = None

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("score must be finite")
        return value


class MemoryStoreCapabilities(_Contract):
    """What a backend declares about itself; optional conformance suites key off it."""

    search: SearchMode = "keyword"
    durable: bool = False
    single_opener: bool = False
    """Durable, but one open store per location at a time: a second opener is refused
    with ``StoreUnavailableError`` until the first closes. Needs ``durable=True``."""
    extensions: frozenset[str] = frozenset()

    @field_validator("single_opener")
    @classmethod
    def _single_opener_is_durable(cls, value: bool, info: ValidationInfo) -> bool:
        if value and not info.data.get("durable", False):
            raise ValueError("single_opener=True needs durable=True")
        return value
