"""The SQLite backend: ``SqliteMemoryStore`` on SQLite FTS5, the bundled default.

The public names are the ones re-exported here; the modules beside this file are the
backend's internals, one topic each: ``store`` (the class), ``schema`` (migrations and
pre-open checks), ``rows`` and ``insert`` (how records are laid out and written),
``search`` and ``ranked`` (listing and keyword search), ``vectors`` (hybrid search),
``delete`` and ``wal`` (deletion with the words gone), ``commit`` and ``commit_thread``
(group commit), ``journal`` (the event journal's table), ``driver`` (which SQLite
library runs it), ``sidecars`` (a refused file's ``-wal``/``-shm`` cleaned up; the
URI a read-only opening reads through), ``read_only`` (opening a file only to look) and
``revisions`` (the consolidation plans the ``"revise"`` extension keeps).
"""

from recallstore.backends.sqlite.store import BUSY_TIMEOUT_SECONDS, SqliteMemoryStore

__all__ = ["BUSY_TIMEOUT_SECONDS", "SqliteMemoryStore"]
