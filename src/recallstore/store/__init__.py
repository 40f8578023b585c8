"""The ``MemoryStore`` protocol and the semantics helpers every backend shares.

One module a topic: ``protocol`` (the protocol, the lifecycle, the named extensions),
``ids`` (record ids), ``clock`` (the store's clock), ``new_records`` (records built from
write inputs), ``transfer`` (import batches), ``revise`` (the revision extension) and
``learning`` (the promote extension: corroborate, promote, demote, the ledger).
Import the names from here.
"""

from recallstore._search.text import MAX_QUERY_TERMS, query_terms, tokenize
from recallstore.store.clock import MonotonicClock, store_clock
from recallstore.store.ids import (
    check_record_id,
    deterministic_ids,
    ids_from,
    is_storable_id,
    new_record_id,
    new_record_ids,
    store_id_from,
)
from recallstore.store.learning import (
    LEARN_EVENT_TYPE,
    PROMOTE_EXTENSION,
    PROMOTION_KINDS,
    Corroboration,
    GateDecision,
    LedgerEntry,
    Promotion,
    PromotionGate,
    PromotionKind,
    PromotionRefusedError,
    SupportsPromotion,
    conversations_of,
    evidence_of,
)
from recallstore.store.new_records import NewRecords, record_from_input, records_from_inputs
from recallstore.store.observed import check_observed_at, observed_at_saved
from recallstore.store.protocol import (
    EXPORT_EXTENSION,
    FORGET_EXTENSION,
    IDEMPOTENCY_EXTENSION,
    IMPORT_EXTENSION,
    JOURNAL_EXTENSION,
    Clock,
    MemoryStore,
    StoreLifecycle,
    SupportsExportRecords,
    SupportsForget,
    SupportsImportRecords,
    SupportsStoreId,
    common_scope,
    scope_matches,
)
from recallstore.store.revise import (
    REVISE_EXTENSION,
    RecordChange,
    RecordUndo,
    StoredRevision,
    SupportsRevise,
)
from recallstore.store.transfer import check_import_batch, newest_timestamp, records_to_import
from recallstore.values import is_valid_record_id, utc_now

__all__ = [
    "EXPORT_EXTENSION",
    "FORGET_EXTENSION",
    "IDEMPOTENCY_EXTENSION",
    "IMPORT_EXTENSION",
    "JOURNAL_EXTENSION",
    "LEARN_EVENT_TYPE",
    "MAX_QUERY_TERMS",
    "PROMOTE_EXTENSION",
    "PROMOTION_KINDS",
    "REVISE_EXTENSION",
    "Clock",
    "Corroboration",
    "GateDecision",
    "LedgerEntry",
    "MemoryStore",
    "MonotonicClock",
    "NewRecords",
    "Promotion",
    "PromotionGate",
    "PromotionKind",
    "PromotionRefusedError",
    "RecordChange",
    "RecordUndo",
    "StoreLifecycle",
    "StoredRevision",
    "SupportsExportRecords",
    "SupportsForget",
    "SupportsImportRecords",
    "SupportsPromotion",
    "SupportsRevise",
    "SupportsStoreId",
    "check_import_batch",
    "check_observed_at",
    "check_record_id",
    "common_scope",
    "conversations_of",
    "deterministic_ids",
    "evidence_of",
    "ids_from",
    "is_storable_id",
    "is_valid_record_id",
    "new_record_id",
    "new_record_ids",
    "newest_timestamp",
    "observed_at_saved",
    "query_terms",
    "record_from_input",
    "records_from_inputs",
    "records_to_import",
    "scope_matches",
    "store_clock",
    "store_id_from",
    "tokenize",
    "utc_now",
]
