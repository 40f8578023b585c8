"""Shared by the MCP tests: the first message an MCP client sends."""

from __future__ import annotations

from typing import Any

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "recallstore-tests", "version": "1"},
    },
}
"""A raw ``initialize`` request, for tests that speak the wire protocol themselves."""
