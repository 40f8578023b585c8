"""Blocking calls over recallstore, for scripts, notebooks and synchronous frameworks.

recallstore is async. :class:`SyncMemoryStore` opens any backend on a
:class:`BackgroundLoop` (an event loop on a daemon thread of its own) and gives the
store's calls as plain methods; :class:`SyncToolbox` and :class:`SyncMemoryCapability`
do the same for the toolbox and the per-conversation recall. Every async function of
the library that takes a store has a blocking twin here, with the same name,
parameters and errors (:func:`capture`; :func:`consolidate`, :func:`apply_plan`,
:func:`revert_plan`, :func:`kept_plans`, :func:`read_kept_plans`,
:func:`scope_records`; :func:`memory_prompt`, :func:`assemble_recall`,
:func:`supersede_chain`; :func:`export_jsonl`, :func:`import_records`;
:func:`assemble_learned`, :func:`distil`, :func:`apply_distillation`,
:func:`kept_distillations`, :func:`revert_distillation`), taking a
``SyncMemoryStore``; its async iterators are blocking generators (:func:`iter_records`,
:func:`tail_events`). Every call is forwarded to that one loop and waited for, so the
store's connections only ever see the loop they were opened on;
:attr:`SyncMemoryStore.portable` sends an adapter's awaits there from any other loop.

Thread-safety: any number of threads may call one ``SyncMemoryStore`` (or the toolboxes
made from it) at once; the calls interleave on the loop as concurrent coroutines do, with
the store's own guarantees (atomic writes, a chain never forks). A call from a coroutine
running *on* the background loop would wait for itself, and is refused with
:class:`~recallstore.errors.ConfigurationError`. ``close()`` (or leaving the ``with``
block) closes the store, then stops the loop and joins its thread; a call after that,
or one still running then, raises :class:`~recallstore.errors.StoreUnavailableError`.
A store never closed is closed when its loop is garbage-collected (nothing references
the store, its toolboxes or the loop any more). In a process forked after the store was
opened, calls raise :class:`~recallstore.errors.ConfigurationError`: open it after
forking. A call interrupted by ``KeyboardInterrupt`` is cancelled and waited for first:
a write has then landed whole or not at all (see ``recallstore._background_loop``).
"""

from recallstore._background_loop import BackgroundLoop
from recallstore.sync._calls import (
    assemble_recall,
    capture,
    export_jsonl,
    import_records,
    memory_prompt,
    supersede_chain,
)
from recallstore.sync._consolidation import (
    apply_plan,
    consolidate,
    kept_plans,
    read_kept_plans,
    revert_plan,
    scope_records,
)
from recallstore.sync._iterators import iter_records, tail_events
from recallstore.sync._learning import (
    apply_distillation,
    assemble_learned,
    distil,
    kept_distillations,
    revert_distillation,
)
from recallstore.sync._store import SyncMemoryStore
from recallstore.sync._toolbox import SyncMemoryCapability, SyncMemoryInstance, SyncToolbox

__all__ = [
    "BackgroundLoop",
    "SyncMemoryCapability",
    "SyncMemoryInstance",
    "SyncMemoryStore",
    "SyncToolbox",
    "apply_distillation",
    "apply_plan",
    "assemble_learned",
    "assemble_recall",
    "capture",
    "consolidate",
    "distil",
    "export_jsonl",
    "import_records",
    "iter_records",
    "kept_distillations",
    "kept_plans",
    "memory_prompt",
    "read_kept_plans",
    "revert_distillation",
    "revert_plan",
    "scope_records",
    "supersede_chain",
    "tail_events",
]
