"""The Postgres backend: ``PostgresMemoryStore``, the production tier.

The public names are the ones re-exported here; the modules beside this file are the
backend's internals: ``store`` (the class), ``schema`` (migrations), ``search`` (filters
and keyword search), ``vectors`` (hybrid search), ``pgvector`` (vectors under an
HNSW index when the extension is there), ``journal`` (the event journal's table and
``LISTEN/NOTIFY``), ``revisions`` (the ``"revise"`` extension's plans) and ``keys``
(idempotency keys: the unique index decides a race, the loser runs again) and
``connections`` (direct or behind a transaction pooler such as PgBouncer) and
``routing`` (searches on a hot standby, read-your-writes). Importing it
needs no driver; opening a store needs the ``postgres`` extra.
"""

from recallstore.backends.postgres.store import SCHEMA_VERSION, PostgresMemoryStore

__all__ = ["SCHEMA_VERSION", "PostgresMemoryStore"]
