"""The backend registry: schemes, register_backend, errors, and lazy backend imports."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallstore import (
    ConfigurationError,
    InMemoryMemoryStore,
    MemoryWriteInput,
    SqliteMemoryStore,
    describe_store,
    load_memory_store,
    register_backend,
)
from recallstore.backends.registry import (
    registered_schemes,
    scheme_of,
    unregister_backend,
)


@pytest.fixture
def dictstore() -> Iterator[list[str]]:
    """Registers ``dictstore:`` (an in-memory store per target) and records the targets."""
    opened: list[str] = []

    def open_dictstore(target: str) -> InMemoryMemoryStore:
        opened.append(target)
        return InMemoryMemoryStore()

    register_backend("dictstore", open_dictstore)
    yield opened
    unregister_backend("dictstore")


async def test_a_registered_callable_opens_its_scheme(dictstore: list[str]) -> None:
    store = load_memory_store("DictStore:shelf-1")
    assert dictstore == ["DictStore:shelf-1"]
    async with store:
        [record] = await store.write([MemoryWriteInput(scope={"u": "1"}, content="hello")])
    assert record.content == "hello"
    assert "dictstore" in registered_schemes()


def test_a_scheme_is_registered_once_unless_replaced(dictstore: list[str]) -> None:
    with pytest.raises(ConfigurationError, match="'dictstore' is already registered"):
        register_backend("dictstore", InMemoryMemoryStore.from_url)
    register_backend(
        "dictstore", "recallstore.backends.memory:InMemoryMemoryStore.from_url", replace=True
    )
    with pytest.raises(ConfigurationError, match="takes no location"):
        load_memory_store("dictstore:x")


def test_unregistering_makes_the_scheme_unknown(dictstore: list[str]) -> None:
    unregister_backend("dictstore")
    with pytest.raises(ConfigurationError, match=r"unknown scheme 'dictstore'.*known: .*sqlite"):
        load_memory_store("dictstore:x")


@pytest.mark.parametrize("scheme", ["", "x", "1abc", "has space", "a_b", 42])
def test_bad_scheme_names_are_refused(scheme: object) -> None:
    with pytest.raises(ConfigurationError, match="URL scheme"):
        register_backend(scheme, InMemoryMemoryStore.from_url)  # type: ignore[arg-type]


def test_an_opener_must_be_callable_or_a_reference() -> None:
    with pytest.raises(ConfigurationError, match="callable or a 'module:attribute'"):
        register_backend("brokenstore", "not a reference")  # no colon
    assert "brokenstore" not in registered_schemes()


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        ("no_such_module_anywhere:Store.from_url", "cannot be loaded"),
        ("recallstore.backends.memory:NoSuchStore.from_url", "cannot be loaded"),
        ("recallstore.backends.memory:MEMORY_TARGET", "is not callable"),
    ],
)
def test_a_broken_reference_is_a_configuration_error(reference: str, words: str) -> None:
    register_backend("brokenstore", reference)
    try:
        with pytest.raises(ConfigurationError, match=words):
            load_memory_store("brokenstore:x")
    finally:
        unregister_backend("brokenstore")


def test_an_opener_that_returns_no_store_is_refused() -> None:
    register_backend("brokenstore", lambda target: {"not": "a store"})  # type: ignore[arg-type,return-value]
    try:
        with pytest.raises(ConfigurationError, match="returned dict, not a MemoryStore"):
            load_memory_store("brokenstore:x")
    finally:
        unregister_backend("brokenstore")


@pytest.mark.parametrize(
    ("target", "scheme"),
    [
        ("memory:", "memory"),
        ("Postgresql://db/app", "postgresql"),
        ("C:\\memory.db", None),
        ("relative/memory.db", None),
        (":memory:", None),
    ],
)
def test_scheme_of(target: str, scheme: str | None) -> None:
    assert scheme_of(target) == scheme


def test_describe_store_of_the_built_ins(tmp_path: Path) -> None:
    sqlite = describe_store(SqliteMemoryStore(tmp_path / "m.db"))
    assert (sqlite.label, sqlite.path, str(sqlite)) == (
        "SqliteMemoryStore",
        tmp_path / "m.db",
        f"SqliteMemoryStore · {tmp_path / 'm.db'}",
    )
    memory = describe_store(load_memory_store("memory:"))
    assert (memory.label, memory.target, memory.path) == ("InMemoryMemoryStore", "memory:", None)
    postgres = describe_store(load_memory_store("postgresql://app:s3cret@db.internal/app"))
    assert postgres.path is None
    assert "s3cret" not in postgres.target
    assert postgres.target == "postgresql://app:***@db.internal/app"


def test_importing_the_package_imports_no_backend() -> None:
    probe = (
        "import json, sys, recallstore\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('recallstore.backends.')"
        " or m in ('aiosqlite', 'psycopg'))\n"
        "before = list(loaded)\n"
        "from recallstore import SqliteMemoryStore\n"
        "listed = 'InMemoryMemoryStore' in dir(recallstore)\n"
        "print(json.dumps([before, SqliteMemoryStore.__module__, listed]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    before, module, listed = json.loads(result.stdout)
    # The base class and its journal helpers; no backend and no driver.
    assert before == [
        "recallstore.backends._identity",
        "recallstore.backends._journal_buffer",
        "recallstore.backends._journal_extension",
        "recallstore.backends._keys",
        "recallstore.backends._time_filters",
        "recallstore.backends.base",
        "recallstore.backends.journal",
        "recallstore.backends.registry",
    ]
    assert module == "recallstore.backends.sqlite.store"
    assert listed


def test_an_unknown_top_level_name_is_an_attribute_error() -> None:
    import recallstore

    with pytest.raises(AttributeError, match="NoSuchStore"):
        recallstore.NoSuchStore  # noqa: B018


def test_a_backends_missing_dependency_keeps_its_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recallstore import MissingDependencyError

    (tmp_path / "needs_extra_backend.py").write_text(
        "from recallstore.errors import MissingDependencyError\n"
        "raise MissingDependencyError('the needs-extra backend', 'needs-extra')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    register_backend("needsextra", "needs_extra_backend:Store.from_url")
    try:
        with pytest.raises(
            MissingDependencyError, match=r"pip install 'recallstore\[needs-extra\]'"
        ):
            load_memory_store("needsextra:x")
    finally:
        unregister_backend("needsextra")
