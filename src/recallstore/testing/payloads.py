"""Payload values (S14, S6, ext): what the contract refuses, and what comes back exactly.

A payload is JSON as RFC 8259 defines it, within limits (``recallstore._payload``): no
NaN or Infinity, integers of at most ``MAX_PAYLOAD_INT_DIGITS`` digits, nesting at most
``MAX_PAYLOAD_DEPTH`` deep, strings and keys without NUL or lone surrogates. Everything
else is refused before a store sees it; everything accepted must come back from the
store *exactly* — a float as a float (``1e16`` is not ``10000000000000000``), ``-0.0``
with its sign, every digit of a long integer — from ``get``, listings, a reopened store
and an export/import round trip. Python's ``==`` cannot tell ``-0.0`` from ``0.0`` or
``1.0`` from ``1``, so the comparison here checks types and signs too.
"""

from __future__ import annotations

import math
from typing import Any, cast

import pytest

from recallstore._payload import MAX_PAYLOAD_DEPTH, MAX_PAYLOAD_INT_DIGITS
from recallstore.errors import MemoryValidationError
from recallstore.records import MemoryRecord, MemoryWriteInput
from recallstore.store import (
    EXPORT_EXTENSION,
    IMPORT_EXTENSION,
    MemoryStore,
    SupportsExportRecords,
    SupportsImportRecords,
)
from recallstore.testing._harness import StoreFactory, StoreHarness, every_record, search, write_one
from recallstore.testing._rules import kit_test

__all__ = ["ACCEPTED_PAYLOAD", "REFUSED_PAYLOADS", "PayloadConformance", "same_json"]


def _nested(depth: int) -> Any:
    """Lists nested ``depth`` deep, a number at the bottom."""
    value: Any = 1.5
    for _ in range(depth):
        value = [value]
    return value


ACCEPTED_PAYLOAD: dict[str, Any] = {
    "largest_float": 1e308,
    "float_1e16": 1e16,
    "negative_zero": -0.0,
    "zero": 0.0,
    "one_as_float": 1.0,
    "smallest_subnormal": 5e-324,
    "a_third": 1 / 3,
    "longest_int": 10**MAX_PAYLOAD_INT_DIGITS - 1,
    "longest_negative_int": -(10**MAX_PAYLOAD_INT_DIGITS - 1),
    "past_uint64": 2**64,
    "int64_min": -(2**63),
    "true": True,
    "null": None,
    "text": '😀 \u2028 é \\ " \t',
    "empty_list": [],
    "empty_dict": {},
    "ключ": {"nested key": [1, 1.0, "1"]},
    # The payload dict is one level: this fills the rest of MAX_PAYLOAD_DEPTH.
    "deepest": _nested(MAX_PAYLOAD_DEPTH - 1),
}
"""One payload holding every edge value the contract accepts."""

REFUSED_PAYLOADS: dict[str, Any] = {
    "nan": float("nan"),
    "infinity": float("inf"),
    "negative-infinity": {"deep": [float("-inf")]},
    "int-one-digit-too-long": 10**MAX_PAYLOAD_INT_DIGITS,
    "int-past-pythons-str-limit": 10**4400,
    "nesting-one-too-deep": _nested(MAX_PAYLOAD_DEPTH + 1),
    "nesting-far-too-deep": _nested(5_000),
    "lone-surrogate": {"note": "\ud800"},
    "lone-surrogate-key": {"\udfff": 1},
    "nul": ["a\x00b"],
    "int-key": {1: "one"},
    "tuple": (1, 2),
    "set": {1, 2},
    "bytes": b"raw",
}
"""Payloads the contract refuses (each a ``MemoryValidationError`` on ``payload…``)."""


def same_json(left: Any, right: Any) -> bool:
    """True when ``left`` and ``right`` are the same JSON value, types and float signs
    included (``-0.0`` is not ``0.0``, ``1.0`` is not ``1``)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return left == right and math.copysign(1.0, left) == math.copysign(1.0, right)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same_json, left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    return bool(left == right)


def _differences(expected: dict[str, Any], found: Any) -> list[str]:
    """The keys of ``expected`` whose values ``found`` does not hold exactly."""
    if not isinstance(found, dict):
        return [f"the payload came back as {type(found).__name__}"]
    return [
        f"{key}: wrote {_short(value)}, got {_short(found.get(key, '<missing>'))}"
        for key, value in expected.items()
        if key not in found or not same_json(value, found[key])
    ]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}... ({type(value).__name__})"


class PayloadConformance(StoreHarness):
    """Payload edge values: refused at the edge, or returned exactly by every read path."""

    @kit_test("a payload outside JSON (or its limits) is a MemoryValidationError on payload…")
    @pytest.mark.parametrize("name", list(REFUSED_PAYLOADS))
    async def test_s14_payload_outside_json_is_refused_naming_the_field(
        self, store: MemoryStore, name: str
    ) -> None:
        payload = REFUSED_PAYLOADS[name]
        with pytest.raises(MemoryValidationError) as caught:
            MemoryWriteInput(scope={}, content="edge", payload=payload)
        assert caught.value.field.startswith("payload"), caught.value.field
        assert len(caught.value.field) < 300, "the field path must stay short"
        written = await write_one(store, "a record to import a bad payload onto")
        with pytest.raises(MemoryValidationError):
            MemoryRecord.model_validate({**written.model_dump(), "payload": payload})
        assert [record.id for record in await every_record(store)] == [written.id]

    @kit_test(
        "store a payload as written: a float stays a float (1e16, 1e308), -0.0 keeps its "
        "sign, a 640-digit int every digit, 64 levels of nesting"
    )
    async def test_s6_payload_edge_values_come_back_exactly(
        self, store: MemoryStore, store_factory: StoreFactory
    ) -> None:
        record = await write_one(store, "edge payload", payload=ACCEPTED_PAYLOAD)
        assert _differences(ACCEPTED_PAYLOAD, record.payload) == [], "as write returned it"
        stored = await store.get(record.id)
        assert stored is not None
        assert _differences(ACCEPTED_PAYLOAD, stored.payload) == [], "from get"
        (hit,) = await search(store, None)
        assert _differences(ACCEPTED_PAYLOAD, hit.record.payload) == [], "from a listing"
        again = MemoryRecord.model_validate_json(stored.model_dump_json())
        assert _differences(ACCEPTED_PAYLOAD, again.payload) == [], "through the record's JSON"
        caps = store.capabilities()
        if caps.durable and not caps.single_opener:  # a second opener reads the file
            async with store_factory() as reopened:
                kept = await reopened.get(record.id)
                assert kept is not None
                assert _differences(ACCEPTED_PAYLOAD, kept.payload) == [], "after reopening"

    @kit_test("export and import must carry a payload's every value exactly")
    async def test_ext_payload_edge_values_survive_export_and_import(
        self, store: MemoryStore
    ) -> None:
        if not {IMPORT_EXTENSION, EXPORT_EXTENSION} <= store.capabilities().extensions:
            pytest.skip("import/export sub-suite; this store lacks those extensions")
        record = await write_one(store, "edge payload", payload=ACCEPTED_PAYLOAD)
        exporter = cast(SupportsExportRecords, store)
        (exported,) = [found async for found in exporter.export_records()]
        assert _differences(ACCEPTED_PAYLOAD, exported.payload) == [], "from export_records"
        # What an export file holds, read back.
        moved = MemoryRecord.model_validate_json(exported.model_dump_json())
        await store.delete(record.id)
        assert await cast(SupportsImportRecords, store).import_records([moved]) == 1
        imported = await store.get(record.id)
        assert imported is not None
        assert _differences(ACCEPTED_PAYLOAD, imported.payload) == [], "after import"
