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
_PLUGIN_FIXTURES = ("memory_clock", "memory_store", "sqlite_memory_store", "prompt_snapshot")

if all(find_spec(name) is not None for name in _TESTING_EXTRA):
    pytest_plugins = ["recallstore.testing.pytest_plugin"]
else:

    def _needs_the_extra(name: str) -> object:
        @pytest.fixture(name=name)
        def fixture() -> NoReturn:
            raise MissingDependencyError(f"the {name} fixture", "testing")

        return fixture

    for _name in _PLUGIN_FIXTURES:
        globals()[f"_{_name}"] = _needs_the_extra(_name)
