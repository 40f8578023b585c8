"""Group commit, on the connection's thread: each call's kept statements in its
savepoint, a failed call undone alone, then ``COMMIT`` (``sqlite.commit`` hands these
to aiosqlite's thread)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, Final

from recallstore.backends.sqlite.insert import PendingInsert, insert_now
from recallstore.backends.sqlite.journal import append_rows

__all__ = [
    "Call",
    "Statement",
    "TransactionLost",
    "roll_back_call",
    "run_calls",
    "run_calls_and_commit",
]

_SAVEPOINT: Final = "recallstore_call"
_BATCH_SAVEPOINT: Final = "recallstore_calls"

Statement = tuple[Callable[..., object], tuple[Any, ...]]


class TransactionLost(Exception):
    """SQLite rolled the whole transaction back (I/O error, full disk)."""


class Call:
    """One write call's part of a group: statements kept for later, and its outcome."""

    def __init__(self, *, first: bool) -> None:
        # The first call of a group runs without a savepoint (a savepoint makes SQLite
        # copy every page it changes): nothing else is in the
        # transaction before its statements, so undoing it is rolling that back.
        self.first = first
        self.kept: list[Statement] = []
        self.while_committing: list[Callable[[], object]] = []  # see GroupCommit
        self.savepoint_open = False
        self.error: BaseException | None = None


def run_calls(
    db: sqlite3.Connection,
    waiting: list[Call],
    current: Call | None,
    statement: Statement | None,
    begin: Callable[[sqlite3.Connection], None],
) -> Any:
    """The waiting calls' kept statements, then the current call's in its savepoint (left
    open) and ``statement``, whose result is returned; ``begin`` starts a transaction
    anew after the first call of a group failed."""
    _run_waiting(db, waiting, begin)
    if current is None:
        return None
    _run_kept(db, current, begin)
    if current.error is not None or statement is None:
        return None
    if not current.first and not current.savepoint_open:
        db.execute(f"SAVEPOINT {_SAVEPOINT}").close()
        current.savepoint_open = True
    function, args = statement
    return function(db, *args)


def _run_waiting(
    db: sqlite3.Connection, waiting: list[Call], begin: Callable[[sqlite3.Connection], None]
) -> None:
    """Finished calls' kept statements, each call undone alone if it fails.

    A savepoint per call would make SQLite copy each changed page once per call, so
    all but the first call run under one savepoint; only when one of them fails are
    they rolled back and run again, each in its own.
    """
    calls = [call for call in waiting if call.kept and call.error is None]
    if calls and calls[0].first:
        _run_kept(db, calls.pop(0), begin)
    if len(calls) > 1:
        db.execute(f"SAVEPOINT {_BATCH_SAVEPOINT}").close()
        try:
            for function, args in _joined_writes(calls) or [
                statement for call in calls for statement in call.kept
            ]:
                function(db, *args)
        except Exception as exc:
            if not db.in_transaction:
                raise TransactionLost(str(exc)) from exc
            db.execute(f"ROLLBACK TO {_BATCH_SAVEPOINT}").close()
            db.execute(f"RELEASE {_BATCH_SAVEPOINT}").close()
        else:
            db.execute(f"RELEASE {_BATCH_SAVEPOINT}").close()
            for call in calls:
                call.kept = []
            return
    for call in calls:
        _run_kept(db, call, begin)
        if call.savepoint_open:
            db.execute(f"RELEASE {_SAVEPOINT}").close()
            call.savepoint_open = False


def _joined_writes(calls: list[Call]) -> list[Statement] | None:
    """The calls' statements as one insert (and one journal append) when that is all
    they kept (plain writes), else None.

    Then a group of single-record writes costs a few ``executemany`` instead of five
    statements per call. Records keep their order, so each gets the ``seq`` it would
    have got call by call, and so do journal rows. If it fails, the calls are run
    again each in its own savepoint, as any failed batch is.
    """
    inserts: list[PendingInsert] = []
    journal: list[Any] = []
    for call in calls:
        kept = call.kept
        if not kept or kept[0][0] is not insert_now or len(kept) > 2:
            return None
        if len(kept) == 2:
            if kept[1][0] is not append_rows:
                return None
            journal.extend(kept[1][1][0])
        inserts.append(kept[0][1][0])
    joined: list[Statement] = [(insert_now, (PendingInsert.joined(inserts),))]
    if journal:
        joined.append((append_rows, (journal,)))
    return joined


def _run_kept(
    db: sqlite3.Connection, call: Call, begin: Callable[[sqlite3.Connection], None]
) -> None:
    """A call's kept statements, in its savepoint; a failure undoes that call alone."""
    if not call.kept or call.error is not None:
        return
    if not call.first and not call.savepoint_open:
        db.execute(f"SAVEPOINT {_SAVEPOINT}").close()
        call.savepoint_open = True
    kept, call.kept = call.kept, []
    try:
        for function, args in kept:
            function(db, *args)
    except Exception as exc:
        call.error = exc
        if call.first:
            # Only the first call's work is in the transaction: start a clean one.
            if db.in_transaction:
                db.execute("ROLLBACK").close()
            try:
                begin(db)
            except Exception as lost:  # whatever failed, no transaction is open now
                raise TransactionLost(str(lost)) from exc
            return
        if not db.in_transaction:
            raise TransactionLost(str(exc)) from exc
        roll_back_call(db)
        call.savepoint_open = False


def run_calls_and_commit(
    db: sqlite3.Connection,
    waiting: list[Call],
    begin: Callable[[sqlite3.Connection], None],
    meanwhile: Callable[[], object] | None = None,
) -> None:
    """The waiting calls' kept statements, then ``meanwhile()`` (it hands the calls'
    ``while_committing`` work to the event loop), then ``COMMIT``."""
    run_calls(db, waiting, None, None, begin)
    if meanwhile is not None:
        # COMMIT releases the GIL while it writes and syncs the log: the event loop
        # does that work meanwhile.
        meanwhile()
    db.execute("COMMIT").close()


def roll_back_call(db: sqlite3.Connection) -> None:
    """Undo the current call alone: back to its savepoint, which is then released."""
    # The innermost savepoint of that name: the call's own.
    db.execute(f"ROLLBACK TO {_SAVEPOINT}").close()
    db.execute(f"RELEASE {_SAVEPOINT}").close()
