"""recallstore's ``pytest11`` entry point: loads the pytest plugin when it can run.

The entry point exists wherever recallstore is installed, with or without the
``testing`` extra, and a plugin that fails to import stops every pytest run of the
project. So the plugin (:mod:`recallstore.testing.pytest_plugin`) is loaded only when
the extra's packages are there; without them its fixtures fail with the install command.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import NoReturn

import pytest

from recallstore.errors import MissingDependencyError

_TESTING_EXTRA = ("syrupy", "pytest_asyncio", "hypothesis")

if all(find_spec(name) is not None for name in _TESTING_EXTRA):
    pytest_plugins = ["recallstore.testing.pytest_plugin"]
else:

    def _missing_extra(fixture: str) -> NoReturn:
        raise MissingDependencyError(f"the {fixture} fixture", "testing")

    @pytest.fixture
    def memory_clock() -> NoReturn:
        """Needs ``pip install 'recallstore[testing]'``."""
        _missing_extra("memory_clock")

    @pytest.fixture
    def memory_store() -> NoReturn:
        """Needs ``pip install 'recallstore[testing]'``."""
        _missing_extra("memory_store")

    @pytest.fixture
    def sqlite_memory_store() -> NoReturn:
        """Needs ``pip install 'recallstore[testing]'``."""
        _missing_extra("sqlite_memory_store")

    @pytest.fixture
    def prompt_snapshot() -> NoReturn:
        """Needs ``pip install 'recallstore[testing]'``."""
        _missing_extra("prompt_snapshot")
