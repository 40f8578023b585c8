"""CrewAI lives in its own environment (.venv-crewai: its pins need mcp<2 and an older
pydantic than the dev extra's); `make test` runs these tests there, with
RECALLSTORE_REQUIRE_CREWAI=1 so that a missing CrewAI fails. Elsewhere (the dev
environment, where CrewAI cannot be installed) they are not collected."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import crewai  # noqa: F401
except ImportError:
    if not os.environ.get("RECALLSTORE_REQUIRE_CREWAI"):
        collect_ignore_glob = ["*.py"]
else:
    # CrewAI reports to its telemetry and tracing services unless told not to: never
    # here. Only where CrewAI runs: OTEL_SDK_DISABLED in the dev environment's process
    # would switch off the OpenTelemetry SDK that tests/events measures.
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from recallstore.sync import SyncMemoryCapability, SyncMemoryStore


@pytest.fixture
def sync_store(tmp_path: Path) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


@pytest.fixture
def sync_capability(sync_store: SyncMemoryStore) -> SyncMemoryCapability:
    return SyncMemoryCapability(sync_store, scope_fields=("tenant", "user"))
