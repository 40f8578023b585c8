"""A ``pytest11`` plugin that keeps a zero-configuration conformance-kit run quiet.

pytest-asyncio warns at start-up, in every project that has not set
``asyncio_default_fixture_loop_scope``, that its default will change. The kit needs
no setting (its one async fixture is function-scoped, as both defaults have it), so a
backend author running the kit with no configuration would see a warning about
nothing they did. This hides that one notice; it changes no setting, hides no other
warning, and a project that sets the option never sees the notice anyway.
"""

from __future__ import annotations

import warnings

import pytest

_LOOP_SCOPE_NOTICE = r'The configuration option "asyncio_default_fixture_loop_scope" is unset'


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Ignore pytest-asyncio's unset-loop-scope notice (emitted by its pytest_configure)."""
    # pytest runs pytest_configure inside the session's warnings.catch_warnings() block,
    # so the filter goes away with the session; it matches that one message only.
    warnings.filterwarnings(
        "ignore", message=_LOOP_SCOPE_NOTICE, category=pytest.PytestDeprecationWarning
    )
