"""Which rule a divergence between a store and the reference points to.

The differential test compares records through "handles" (normalised dictionaries,
see ``differential._Side.normalise``). When the two stores disagree, these functions
name the rule the first disagreement implies, so a random sequence fails like a
named test would: with the rule, a hint and the records involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from recallstore.records import MemoryRecord, MemorySearchQuery
from recallstore.store import scope_matches, tokenize, utc_now
from recallstore.testing._operations import Delete, Get, Invalidate, Search
from recallstore.testing._rules import KitRuleViolation

__all__ = ["leftover_violation", "outcome_violation", "raised_violation", "search_violation"]

_Normalised = dict[str, Any]

_OPERATION_RULES: dict[type, tuple[str, str]] = {
    Invalidate: ("S4", "invalidate left the record in another state than the reference"),
    Delete: ("S5", "after delete, get() disagrees with the reference"),
    Get: ("S6", "get() returned another record state than the reference"),
}


def leftover_violation(record: MemoryRecord, cleaned: set[str]) -> KitRuleViolation:
    """A record this example never wrote came back: blame cleanup's delete or listing."""
    if record.id in cleaned:
        return KitRuleViolation(
            "S5",
            "a record deleted between examples came back",
            f"record {record.id!r} was deleted while cleaning up, yet search returned it",
        )
    if record.scope:
        return KitRuleViolation(
            "S7",
            "records left over from an earlier example: the scope={} listing missed them",
            f"search returned record {record.id!r} (scope {record.scope}) that this example "
            "never wrote; cleanup deletes what a listing with scope={} returns, and that "
            "listing never returned it",
        )
    return KitRuleViolation(
        "S9",
        "records left over from an earlier example: the cleanup listing missed them",
        f"search returned record {record.id!r} that this example never wrote; a listing "
        "with include_invalidated=True and include_expired=True never returned it",
    )


def raised_violation(operation: object, where: str, exc: Exception) -> KitRuleViolation:
    """The store raised where the reference answered: blame the operation's rule."""
    kind = type(operation)
    if isinstance(operation, Search):
        listing = operation.words is None
        rule, hint = ("S10", "a listing raised") if listing else ("S13", "a search raised")
    elif kind in _OPERATION_RULES:
        rule, hint = _OPERATION_RULES[kind][0], f"{kind.__name__.lower()} raised"
    else:
        rule, hint = "S1", "write raised"
    detail = f"{where}\n  the store raised {type(exc).__name__}: {exc}"
    return KitRuleViolation(rule, hint + " where the reference did not", detail)


def outcome_violation(
    operation: object, where: str, expected: object, actual: object
) -> KitRuleViolation:
    """The store and the reference disagree on a write, invalidate, delete or get."""
    detail = f"{where}\n  reference: {expected}\n  store:     {actual}"
    kind = type(operation)
    if kind in _OPERATION_RULES:
        rule, hint = _OPERATION_RULES[kind]
        return KitRuleViolation(rule, hint, detail)
    supersedes = any(item.supersedes is not None for item in getattr(operation, "items", ()))
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        rule = "S3" if supersedes else "S1"
        return KitRuleViolation(rule, "write raised where the reference did not, or not", detail)
    if expected["written"] != actual["written"]:
        return KitRuleViolation("S1", "write returned other records than the reference", detail)
    return KitRuleViolation(
        "S3",
        "after a write with supersedes, the superseded record is not invalidated as it "
        "should be (invalid_at, superseded_by, updated_at)",
        detail,
    )


def search_violation(
    query: MemorySearchQuery,
    where: str,
    expected: Sequence[_Normalised],
    actual: Sequence[_Normalised],
    matches: Sequence[_Normalised],
) -> KitRuleViolation:
    """The store's search disagrees with the reference: name the filter that explains it."""
    wanted = [record["handle"] for record in expected]
    got = [record["handle"] for record in actual]
    detail = f"{where}\n  reference returns handles {wanted}\n  store returns handles     {got}"
    matching = {record["handle"] for record in matches}
    for record in actual:
        if record["handle"] not in matching:
            rule, hint = _why_excluded(query, record)
            return KitRuleViolation(rule, hint, f"{detail}\n  wrongly returned: {record}")
    if len(actual) > query.limit or len(set(got)) != len(got):
        return KitRuleViolation("S12", "search returned more results than limit allows", detail)
    returned = set(got)
    for record in expected:
        if record["handle"] not in returned:
            rule, hint = _why_missing(query, record)
            return KitRuleViolation(rule, hint, f"{detail}\n  missing: {record}")
    return KitRuleViolation(
        "S10", "a listing must order records by created_at desc, then id desc", detail
    )


def _why_excluded(query: MemorySearchQuery, record: _Normalised) -> tuple[str, str]:
    if not scope_matches(record["scope"], query.scope):
        return "S7", "search returned a record whose scope does not contain the filter"
    if query.kinds is not None and record["kind"] not in query.kinds:
        return "S8", "search returned a record of a kind the kinds filter excludes"
    if query.tags and not set(query.tags) <= set(record["tags"]):
        return "S8", "search returned a record lacking one of the filter's tags"
    if record["invalid"] and not query.include_invalidated:
        return "S9", "search returned an invalidated record without include_invalidated"
    expires_at = record["expires_at"]
    if expires_at is not None and expires_at <= utc_now() and not query.include_expired:
        return "S9", "search returned an expired record without include_expired"
    if not query.is_listing and not set(tokenize(record["content"])) & set(
        tokenize(query.query or "")
    ):
        return "S10", "keyword search returned a record sharing no word with the query"
    return "S3", "the record's state differs from the reference's (an earlier write or supersede)"


def _why_missing(query: MemorySearchQuery, record: _Normalised) -> tuple[str, str]:
    if record["scope"] and not query.scope:
        return "S7", "a scope={} filter must match records of every scope"
    if query.scope and record["scope"] != query.scope:
        return "S7", "the scope filter must match records whose scope contains it (subset)"
    if query.tags:
        return "S8", "a record carrying every listed tag was not returned"
    if query.kinds is not None:
        return "S8", "a record of a listed kind was not returned"
    if record["invalid"] or record["expires_at"] is not None:
        return "S9", "include_invalidated / include_expired must bring those records back"
    if not query.is_listing:
        return "S10", "keyword search must return records sharing a word with the query"
    return "S12", "a listing returned fewer records than limit allows"
