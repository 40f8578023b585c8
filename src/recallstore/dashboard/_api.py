"""The lens's small JSON API: write, read, search and invalidate records.

Writes go through the lens's (observed) store, so they appear in the live feed like
any agent's. Errors are JSON: 422 names the offending field, 404 the missing id,
409 a conflicting supersede, 400 a body that is not valid JSON (undecodable, nested
too deeply, or holding a number too long to read), 413 a body over 1 MB.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from recallstore._json import UntrustedJsonError, parse_untrusted_json
from recallstore.context import call_context
from recallstore.dashboard._requests import DASHBOARD_RUN_ID, check_reason, search_from_params
from recallstore.errors import (
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
    StoreUnavailableError,
)
from recallstore.records import DEFAULT_LIMIT, MemoryRecord, MemoryWriteInput
from recallstore.store import MemoryStore, store_clock

__all__ = ["RecordsApi"]

MAX_BODY_BYTES = 1_000_000
"""Largest request body the API reads."""
_MAX_BATCH = 100

_Handler = Callable[[Any, Request], Awaitable[Response]]


class _BadRequest(Exception):
    def __init__(self, status_code: int, error: str, message: str) -> None:
        self.status_code = status_code
        self.error = error
        self.message = message
        super().__init__(message)


def _json_errors(handler: _Handler) -> _Handler:
    """Turn the store's exceptions into JSON answers a client can act on."""

    @wraps(handler)
    async def wrapper(self: Any, request: Request) -> Response:
        try:
            return await handler(self, request)
        except _BadRequest as exc:
            return _error(exc.status_code, exc.error, exc.message)
        except MemoryValidationError as exc:
            return _error(422, "validation", exc.message, field=exc.field)
        except MemoryNotFoundError as exc:
            return _error(404, "not_found", str(exc), id=exc.record_id)
        except MemoryConflictError as exc:
            return _error(409, "conflict", exc.reason, id=exc.record_id)
        except StoreUnavailableError as exc:
            return _error(503, "store_unavailable", exc.reason)

    return wrapper


def _error(status_code: int, error: str, message: str, **extra: str) -> JSONResponse:
    return JSONResponse({"error": error, "message": message, **extra}, status_code=status_code)


def _record_json(record: MemoryRecord) -> dict[str, Any]:
    data: dict[str, Any] = record.model_dump(mode="json")
    return data


async def _read_json(request: Request) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _BadRequest(413, "too_large", f"the body is over {MAX_BODY_BYTES} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise _BadRequest(413, "too_large", f"the body is over {MAX_BODY_BYTES} bytes")
    if not body.strip():
        return None
    try:
        return parse_untrusted_json(body)
    except UntrustedJsonError as exc:
        raise _BadRequest(400, "invalid_json", f"the body is not valid JSON: {exc}") from None


def _write_input(item: Any) -> MemoryWriteInput:
    if not isinstance(item, dict):
        raise MemoryValidationError("body", "expected a JSON object describing a record", item)
    # The constructor, not model_validate: it names the offending field ("content"),
    # where model_validate reports the model's name.
    return MemoryWriteInput(**item)


def _write_inputs(body: Any) -> tuple[list[MemoryWriteInput], bool]:
    """The inputs a body describes, and whether it was a batch (a JSON array)."""
    if isinstance(body, dict):
        return [_write_input(body)], False
    if not isinstance(body, list) or not body:
        raise MemoryValidationError(
            "body", "expected a record object or a non-empty array of them", body
        )
    if len(body) > _MAX_BATCH:
        raise MemoryValidationError("body", f"at most {_MAX_BATCH} records per call", len(body))
    inputs = []
    for index, item in enumerate(body):
        try:
            inputs.append(_write_input(item))
        except MemoryValidationError as exc:
            raise MemoryValidationError(f"{index}.{exc.field}", exc.message, exc.value) from None
    return inputs, True


class RecordsApi:
    """``/api/records`` routes over one store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    @_json_errors
    async def create(self, request: Request) -> JSONResponse:
        """``POST /api/records``: a MemoryWriteInput object (or an array) → 201 + record(s).

        The write is attributed (in its event) to the first input's provenance
        conversation and run, or to the run ``dashboard`` when it has none.
        """
        inputs, is_batch = _write_inputs(await _read_json(request))
        provenance = inputs[0].provenance
        conversation_id = provenance.conversation_id if provenance else None
        run_id = provenance.run_id if provenance and provenance.run_id else None
        if conversation_id is None and run_id is None:
            run_id = DASHBOARD_RUN_ID
        with call_context(conversation_id=conversation_id, run_id=run_id):
            records = await self.store.write(inputs)
        if is_batch:
            return JSONResponse({"records": [_record_json(r) for r in records]}, status_code=201)
        return JSONResponse({"record": _record_json(records[0])}, status_code=201)

    @_json_errors
    async def search(self, request: Request) -> JSONResponse:
        """``GET /api/records``: the records page's search, as JSON hits."""
        query = search_from_params(
            request, default_limit=DEFAULT_LIMIT, clock=store_clock(self.store)
        )
        with call_context(run_id=DASHBOARD_RUN_ID):
            hits = await self.store.search(query)
        return JSONResponse(
            {"hits": [{"record": _record_json(h.record), "score": h.score} for h in hits]}
        )

    @_json_errors
    async def read(self, request: Request) -> JSONResponse:
        """``GET /api/records/{id}``: one record, whatever its validity; 404 when absent."""
        record_id: str = request.path_params["record_id"]
        with call_context(run_id=DASHBOARD_RUN_ID):
            record = await self.store.get(record_id)
        if record is None:
            raise MemoryNotFoundError(record_id)
        return JSONResponse({"record": _record_json(record)})

    @_json_errors
    async def invalidate(self, request: Request) -> JSONResponse:
        """``POST /api/records/{id}/invalidate`` with optional ``{"reason": ...}``."""
        record_id: str = request.path_params["record_id"]
        body = await _read_json(request)
        if body is None:
            body = {}
        if not isinstance(body, dict) or set(body) - {"reason"}:
            raise MemoryValidationError("body", 'expected {"reason": "..."} or nothing', body)
        reason = check_reason(body.get("reason"))
        with call_context(run_id=DASHBOARD_RUN_ID):
            await self.store.invalidate(record_id, reason)
            record = await self.store.get(record_id)
        if record is None:  # deleted between the two calls
            raise MemoryNotFoundError(record_id)
        return JSONResponse({"record": _record_json(record)})

    @_json_errors
    async def delete(self, request: Request) -> Response:
        """``DELETE /api/records/{id}``: forget a record completely; 204 even when absent."""
        record_id: str = request.path_params["record_id"]
        with call_context(run_id=DASHBOARD_RUN_ID):
            await self.store.delete(record_id)
        return Response(status_code=204)
