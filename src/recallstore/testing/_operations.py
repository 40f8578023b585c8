"""The operations the differential test generates, and their Hypothesis strategies.

A sequence is writes (with and without ``supersedes``), invalidations, deletions, gets
and searches over a small vocabulary; records are named by "handles" (the order in
which they were created), since ids differ between the two stores compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hypothesis import strategies as st

from recallstore.records import MAX_LIMIT, MEMORY_KINDS, MemoryKind

# Distinct under Porter stemming, so stemming and non-stemming backends agree.
VOCABULARY = ("apple", "river", "violin", "copper", "garden", "tiger", "lemon", "cobalt")
SCOPES: tuple[dict[str, str], ...] = (
    {},
    {"tenant": "acme"},
    {"tenant": "acme", "user": "u1"},
    {"tenant": "acme", "user": "u2"},
    {"tenant": "globex", "user": "u1"},
)
SCOPE_FILTERS = (*SCOPES, {"user": "u1"})
TAGS = ("red", "blue", "green")
MISSING_ID = "no-such-record"
Expiry = Literal["past", "future"] | None


@dataclass(frozen=True)
class Item:
    words: tuple[str, ...]
    kind: MemoryKind
    tags: tuple[str, ...]
    scope: int
    expiry: Expiry
    supersedes: int | None


@dataclass(frozen=True)
class Write:
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Invalidate:
    handle: int
    reason: str | None


@dataclass(frozen=True)
class Delete:
    handle: int


@dataclass(frozen=True)
class Get:
    handle: int


@dataclass(frozen=True)
class Search:
    words: tuple[str, ...] | None
    separator: str
    scope: int
    kinds: tuple[MemoryKind, ...] | None
    tags: tuple[str, ...] | None
    limit: int
    include_invalidated: bool
    include_expired: bool


Operation = Write | Invalidate | Delete | Get | Search

handles = st.integers(min_value=0, max_value=30)
words = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4).map(tuple)
items = st.builds(
    Item,
    words=words,
    kind=st.sampled_from(MEMORY_KINDS),
    tags=st.lists(st.sampled_from(TAGS), max_size=2, unique=True).map(tuple),
    scope=st.integers(min_value=0, max_value=len(SCOPES) - 1),
    expiry=st.sampled_from([None, None, "past", "future"]),
    # Mostly plain writes: one failing supersede fails its whole batch (S1).
    supersedes=st.sampled_from((None,) * 24 + tuple(range(8))),
)
writes = st.builds(Write, items=st.lists(items, min_size=1, max_size=4).map(tuple))
searches = st.builds(
    Search,
    words=st.none() | st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(tuple),
    separator=st.sampled_from([" ", ", ", " -", " OR ", "! ("]),
    scope=st.integers(min_value=0, max_value=len(SCOPE_FILTERS) - 1),
    kinds=st.sampled_from([None, ()])
    | st.lists(st.sampled_from(MEMORY_KINDS), min_size=1, max_size=2).map(tuple),
    tags=st.sampled_from([None, ()])
    | st.lists(st.sampled_from(TAGS), min_size=1, max_size=2).map(tuple),
    limit=st.sampled_from([0, 1, 3, 10, MAX_LIMIT]),
    include_invalidated=st.booleans(),
    include_expired=st.booleans(),
)
step = st.tuples(
    st.one_of(
        writes,
        st.builds(Invalidate, handle=handles, reason=st.sampled_from([None, "wrong"])),
        st.builds(Delete, handle=handles),
        st.builds(Get, handle=handles),
    ),
    searches,
)
# Every sequence starts with some records, and every later change is followed by a search.
OPERATIONS = st.tuples(
    st.lists(writes, min_size=2, max_size=4), st.lists(step, min_size=3, max_size=12)
).map(lambda parts: [*parts[0], *(operation for step in parts[1] for operation in step)])
