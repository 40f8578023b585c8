"""The answer a model gets when the store fails under a framework that catches tool errors.

LlamaIndex's agents and CrewAI turn every exception a tool raises into text for the
model, cause included (which may name a file or a host). The adapters for them answer a
:class:`~recallstore.errors.StoreUnavailableError` with this result instead, as the MCP
server does, and hand the exception to the host their own way.
"""

from __future__ import annotations

from typing import Any, Final

UNAVAILABLE: Final[dict[str, Any]] = {
    "ok": False,
    "error": {
        "code": "unavailable",
        "message": (
            "Memory is unavailable right now; this call may not have taken effect. "
            "Carry on without memory and do not tell the user anything was saved."
        ),
        "fields": [],
    },
}
