"""The conformance kit: the portability contract every ``MemoryStore`` backend runs.

Subclass :class:`MemoryStoreConformance` in a test module and override one fixture,
``store_factory``, returning a callable that builds a new, unopened store over a
fresh location for the test::

    import pytest
    from recallstore.testing import MemoryStoreConformance

    class TestMyStore(MemoryStoreConformance):
        @pytest.fixture
        def store_factory(self, tmp_path):
            return lambda: MyStore(tmp_path / "memory.db")

Each rule S1–S28 of the store protocol has named tests (``test_s7_...``); a failure
starts with the rule and a hint (``S5 — delete(id) returned, but get(id) still returns
the record``). Areas are also importable alone (``ScopeConformance``, ...). Sub-suites
skip themselves unless ``capabilities()`` turns them on; the clock sub-suite runs when
``clocked_store_factory`` is overridden too. Every test has a time limit of its own
(``kit_time_limit``, seconds). The rules: docs/store-protocol.md; the kit:
docs/conformance.md. Needs the ``testing`` extra.
"""

from __future__ import annotations

import pkgutil

try:
    import hypothesis  # noqa: F401
    import pytest
    import pytest_asyncio  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    from recallstore.errors import MissingDependencyError

    raise MissingDependencyError("the conformance kit", "testing") from exc

# Rewrite the kit's asserts so failures in a backend's test run show the values: every
# module of the package, found on disk, so a new one cannot be left out.
pytest.register_assert_rewrite(
    *(f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__))
)

from recallstore.testing._checked import CheckedStore  # noqa: E402
from recallstore.testing._harness import (  # noqa: E402
    ClockedStoreFactory,
    StoreFactory,
    StoreHarness,
)
from recallstore.testing._rules import RULES, KitRuleViolation  # noqa: E402
from recallstore.testing.capabilities import (  # noqa: E402
    CapabilitiesConformance,
    DurabilityConformance,
    SingleOpenerConformance,
)
from recallstore.testing.clock import ClockConformance  # noqa: E402
from recallstore.testing.concurrency import ConcurrencyConformance  # noqa: E402
from recallstore.testing.differential import DifferentialConformance  # noqa: E402
from recallstore.testing.embedder import ToyEmbedder  # noqa: E402
from recallstore.testing.erasure import ErasureConformance  # noqa: E402
from recallstore.testing.filters import FilterConformance  # noqa: E402
from recallstore.testing.forget import ForgetConformance  # noqa: E402
from recallstore.testing.hostile import HOSTILE_QUERIES, HostileQueryConformance  # noqa: E402
from recallstore.testing.hybrid import HybridSearchConformance  # noqa: E402
from recallstore.testing.invalidate import InvalidateConformance  # noqa: E402
from recallstore.testing.keys import KeyConformance  # noqa: E402
from recallstore.testing.learning import LearningConformance  # noqa: E402
from recallstore.testing.lifecycle import (  # noqa: E402
    ClosedStoreConformance,
    DeleteGetConformance,
)
from recallstore.testing.limits import LimitConformance  # noqa: E402
from recallstore.testing.ordering import (  # noqa: E402
    KeywordSearchConformance,
    OrderingConformance,
)
from recallstore.testing.payloads import PayloadConformance  # noqa: E402
from recallstore.testing.proposer import ScriptedProposer  # noqa: E402
from recallstore.testing.revise import ReviseConformance  # noqa: E402
from recallstore.testing.scope import ScopeConformance  # noqa: E402
from recallstore.testing.supersede import SupersedeConformance  # noqa: E402
from recallstore.testing.timeline import TimeConformance  # noqa: E402
from recallstore.testing.transfer import TransferConformance  # noqa: E402
from recallstore.testing.validation import ValidationConformance  # noqa: E402
from recallstore.testing.write import WriteConformance  # noqa: E402

__all__ = [
    "HOSTILE_QUERIES",
    "RULES",
    "CapabilitiesConformance",
    "CheckedStore",
    "ClockConformance",
    "ClockedStoreFactory",
    "ClosedStoreConformance",
    "ConcurrencyConformance",
    "DeleteGetConformance",
    "DifferentialConformance",
    "DurabilityConformance",
    "ErasureConformance",
    "FilterConformance",
    "ForgetConformance",
    "HostileQueryConformance",
    "HybridSearchConformance",
    "InvalidateConformance",
    "KeyConformance",
    "KeywordSearchConformance",
    "KitRuleViolation",
    "LearningConformance",
    "LimitConformance",
    "MemoryStoreConformance",
    "OrderingConformance",
    "PayloadConformance",
    "ReviseConformance",
    "ScopeConformance",
    "ScriptedProposer",
    "SingleOpenerConformance",
    "StoreFactory",
    "StoreHarness",
    "SupersedeConformance",
    "TimeConformance",
    "ToyEmbedder",
    "TransferConformance",
    "ValidationConformance",
    "WriteConformance",
]


class MemoryStoreConformance(
    WriteConformance,
    SupersedeConformance,
    InvalidateConformance,
    DeleteGetConformance,
    ForgetConformance,
    ErasureConformance,
    ReviseConformance,
    LearningConformance,
    ScopeConformance,
    FilterConformance,
    TimeConformance,
    KeyConformance,
    OrderingConformance,
    KeywordSearchConformance,
    LimitConformance,
    HostileQueryConformance,
    HybridSearchConformance,
    ValidationConformance,
    PayloadConformance,
    CapabilitiesConformance,
    DurabilityConformance,
    SingleOpenerConformance,
    ClosedStoreConformance,
    ClockConformance,
    ConcurrencyConformance,
    TransferConformance,
    DifferentialConformance,
):
    """The whole kit. Subclass it and override the ``store_factory`` fixture.

    ``store_factory`` returns a callable; each call builds a new, unopened store over
    the same per-test location (for a durable store: the same data). The kit opens
    and closes stores itself with ``async with``. Class attributes ``kit_time_limit``,
    ``differential_examples`` and ``differential_shrink_seconds`` tune it.
    """
