"""How a kit test fails: the rule it pins, a one-line hint, and a time limit of its own.

Every kit test is declared with :func:`kit_test`. A failure inside it is reported as
``S5 — <hint>`` followed by the rule's text and the original detail, so a backend
author reads what is broken and where to look before any assertion diff. A check
the kit's own helpers make on the way (see ``_harness.CheckedStore``) raises
:class:`KitRuleViolation` naming the rule it found broken; that blame wins over the
test's, because the test could not check its own rule on a broken foundation.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

import pytest

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "RULES",
    "KitRuleViolation",
    "kit_test",
    "rule_of",
    "time_limit",
]

RULES: dict[str, str] = {
    "S1": "write is atomic per call (all records or none) and returns them in input order; "
    "[] -> []",
    "S2": "on create created_at == updated_at, stamped now (UTC) and strictly increasing "
    "within a batch; ids are unique, opaque and URL-safe",
    "S3": "supersedes=X writes the new record and, in the same transaction, sets X's "
    "invalid_at = updated_at = the new created_at and superseded_by = the new id; X missing "
    "-> MemoryNotFoundError, X already invalid -> MemoryConflictError, nothing written",
    "S4": "invalidate(id, reason) sets invalid_at = updated_at = now and invalid_reason; "
    "missing -> MemoryNotFoundError; already invalid -> no change, no error",
    "S5": "delete(id) forgets the record and its index entries: get -> None, no search "
    "returns it; a missing id is no error",
    "S6": "get(id) returns the stored record whatever its validity or expiry; None when absent",
    "S7": "the scope filter is an exact, case-sensitive subset match; {} matches every record",
    "S8": "kinds=None is no filter and kinds=[] matches nothing; tags=None or [] is no "
    "filter, otherwise the record carries every listed tag; target_key matches "
    "record.target.key exactly",
    "S9": "invalidated records need include_invalidated=True; records with expires_at <= now "
    "need include_expired=True",
    "S10": "a blank query lists by created_at desc, then id desc; any other query ranks by "
    "relevance, ties by recency, and keyword search returns only records sharing a word",
    "S11": "rarer terms (document frequency over every stored record) and more matching "
    "terms rank higher; case and punctuation do not matter",
    "S12": "limit defaults to 10 and is at most 1000; limit=0 -> []",
    "S13": "any text is a safe query: never an exception, never query-language injection",
    "S14": "invalid input is a MemoryValidationError naming the field, and nothing is written",
    "S15": "capabilities() declares the search mode, durability, single_opener and "
    "extensions, and stays the same; declared durability holds",
    "S16": "a write whose idempotency_key a valid record of the same scope holds returns "
    "that record when it says the same, else supersedes it; racing writers never store "
    "two valid records with one key",
    "S17": "forget(scope) deletes, in one transaction, every record whose scope contains the "
    "non-empty scope (S7's match), as delete would (S5), and returns how many; an empty scope "
    "is a MemoryValidationError and deletes nothing",
    "S18": "(hybrid stores) an embedder switch another opener made (reembed) is noticed on "
    "the next call: writes and searches that need vectors raise EmbedderSwitchedError and "
    "write nothing; no vector of another model is stored, none of another size compared",
    "S19": "a record's observed_at is as written, created_at when none was given, and at "
    "most MAX_OBSERVED_SKEW after the store's clock; observed_after <= observed_at < "
    "observed_before (a half-open window) filters on it, within the scope",
    "S20": "as_of=T returns the records valid at T: created_at <= T, invalid_at None or > T "
    "(include_invalidated still widens), expires_at None or > T (include_expired still widens)",
    "S21": "(revise) revise(id, scope, changes, body) invalidates every named record, each a "
    "valid record of exactly that scope, with its reason (and superseded_by a valid record of "
    "the scope that stays valid or leads, along the revision's links, to one that does), in "
    "one transaction, and keeps the revision; a missing or out-of-scope record -> "
    "MemoryNotFoundError, an invalid one, one named twice, a successor that ends nowhere "
    "valid or a kept revision id -> MemoryConflictError, and nothing changes",
    "S22": "(revise) revert_revision(id) restores exactly what each changed record held "
    "(invalid_at, invalid_reason, superseded_by, updated_at) in one transaction, once, skipping "
    "the records deleted since (the revision lists them in forgotten); a record changed since, "
    "or a key taken since -> MemoryConflictError, nothing changes",
    "S23": "(revise) a revision racing a supersede of the same record never forks the chain: "
    "exactly one of them changes it",
    "S24": "(forget) once delete(id) or forget(scope) returns, nothing of what it forgot is "
    "kept anywhere the store keeps data: no text, tags, payload, keys, conversation or run ids "
    "of a deleted record, no value of a forgotten scope, in records, indexes, vectors, "
    "revisions, the evolution ledger or the journal (nor the files under them); a revision "
    "that named a deleted record keeps ids only, lists it in forgotten and reverts the rest",
    "S25": "(promote) corroborate(scope, id, evidence) adds the evidence to the one valid "
    "record of exactly that scope (supports: its provenance first, then each new piece), "
    "with one ledger row, in one transaction; evidence already listed changes nothing; a "
    "missing or out-of-scope record -> MemoryNotFoundError, an invalid one -> "
    "MemoryConflictError, and nothing changes",
    "S26": "(promote) promote(scope, id, target, gate=...) promotes only what the host's "
    "gate allows, judged in the same transaction (evidence, conversations, age, validity, "
    "approval), once; promotions(scope) are scope-exact; demote takes a promotion back, "
    "once; neither changes the record; a refusal changes nothing",
    "S27": "(promote) every corroborate, promote and demote is one ledger row (who, when, "
    "why, the evidence), oldest first and durable as the records are; delete(id) erases "
    "its record's rows and forget(scope) every row of the scope",
    "S28": "(promote) withdraw(scope, id, evidence) takes the evidence back out of the "
    "record's supports, restoring them exactly as before the corroborate that added it when "
    "nothing changed them since, with one withdraw ledger row; evidence not among the "
    "supports -> MemoryConflictError; corroborate_all and withdraw_all apply every item or "
    "none, in one transaction",
    "lifecycle": "a store is an async context manager; once closed, every protocol method "
    "raises StoreUnavailableError",
    "ext": "export_records streams every record in a scope oldest first; import_records "
    "inserts records exactly, atomically, skipping identical ones and refusing changed ones",
}
"""One line per rule, quoted in every kit failure; docs/store-protocol.md has the full text."""

DEFAULT_TIME_LIMIT = 120.0
"""Seconds one kit test may take before the kit fails it (``kit_time_limit`` overrides)."""

_HARD_STOP_GRACE = 5.0
_TestFunction = TypeVar("_TestFunction", bound=Callable[..., Awaitable[None]])
_RULE_IN_NAME = re.compile(r"test_(s\d+|ext|lifecycle)_")


class KitRuleViolation(AssertionError):
    """A kit failure blamed on one rule, with a one-line hint where to look."""

    def __init__(self, rule: str, hint: str, detail: str = "") -> None:
        self.rule = rule
        self.hint = hint
        self.detail = detail
        super().__init__(_message(rule, hint, detail))


def _message(rule: str, hint: str, detail: str) -> str:
    lines = [f"{rule} — {hint}", f"  rule {rule}: {RULES[rule]} (docs/store-protocol.md)"]
    if detail:
        lines.append(detail)
    return "\n".join(lines)


def rule_of(test_name: str) -> str:
    """The rule a kit test pins, read from its name (``test_s7_...`` -> ``"S7"``)."""
    found = _RULE_IN_NAME.match(test_name)
    if found is None:
        raise ValueError(f"kit test {test_name!r} does not start with test_s<N>_ or test_ext_")
    return found.group(1).upper() if found.group(1).startswith("s") else found.group(1)


def kit_test(hint: str) -> Callable[[_TestFunction], _TestFunction]:
    """Declare an async kit test: its failures name its rule and ``hint``; it has a time limit.

    The limit is the test class's ``kit_time_limit`` (seconds, default
    :data:`DEFAULT_TIME_LIMIT`); it needs no pytest-timeout.
    """

    def decorate(test: _TestFunction) -> _TestFunction:
        rule = rule_of(test.__name__)

        @functools.wraps(test)
        async def run(self: Any, *args: Any, **kwargs: Any) -> None:
            limit = float(getattr(self, "kit_time_limit", DEFAULT_TIME_LIMIT))
            try:
                async with time_limit(limit, rule, lambda: _waiting_for(kwargs)):
                    await test(self, *args, **kwargs)
            except KitRuleViolation:
                raise
            except AssertionError as exc:
                exc.args = (_message(rule, hint, str(exc)),)
                raise
            except pytest.fail.Exception as exc:
                pytest.fail(_message(rule, hint, exc.msg or ""), pytrace=True)
            except Exception as exc:
                detail = f"the store raised {type(exc).__name__}: {exc}"
                raise KitRuleViolation(rule, hint, detail) from exc

        run.kit_rule = rule  # type: ignore[attr-defined]
        run.kit_hint = hint  # type: ignore[attr-defined]
        return pytest.mark.asyncio(run)  # type: ignore[no-any-return]

    return decorate


def _waiting_for(fixtures: dict[str, Any]) -> str:
    """What the test's checked store is still waiting for, when it hangs."""
    for value in fixtures.values():
        pending = getattr(value, "pending_calls", None)
        if callable(pending):
            calls: list[str] = pending()
            if calls:
                return "still waiting for " + ", ".join(calls)
    return ""


@contextlib.asynccontextmanager
async def time_limit(seconds: float, rule: str, describe: Callable[[], str] = lambda: "") -> Any:
    """Fail with a :class:`KitRuleViolation` when the body runs longer than ``seconds``.

    Awaiting code is cancelled (``asyncio.timeout``); code that never yields to the
    event loop is interrupted by SIGALRM a few seconds later, where the platform has it
    and nobody else (such as pytest-timeout) holds that signal.
    """
    hint = (
        f"the test did not finish within {seconds:g} s (the kit's own time limit; set "
        "kit_time_limit on your test class to change it)"
    )
    try:
        with _hard_stop(seconds + _HARD_STOP_GRACE, rule, hint, describe):
            async with asyncio.timeout(seconds):
                yield
    except TimeoutError as exc:
        raise KitRuleViolation(rule, hint, describe()) from exc


@contextlib.contextmanager
def _hard_stop(seconds: float, rule: str, hint: str, describe: Callable[[], str]) -> Iterator[None]:
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if not usable:
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        detail = describe() or "the code never yielded to the event loop"
        raise KitRuleViolation(rule, hint, detail)

    signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
