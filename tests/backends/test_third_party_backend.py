"""A fourth backend from outside the package: found by its scheme, described, conformant.

``plugin/recallstore_jsonl.py`` subclasses the public ``BaseMemoryStore`` and is
registered only through an entry point (see conftest.py); nothing under
``src/recallstore`` knows it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from recallstore import (
    ConfigurationError,
    EventBus,
    MemorySearchQuery,
    MemoryStore,
    MemoryWriteInput,
    ObservedMemoryStore,
    describe_store,
    load_memory_store,
)
from recallstore.dashboard import create_dashboard_app
from recallstore.testing import MemoryStoreConformance

ALICE = {"tenant": "acme", "user": "alice"}


def jsonl_url(path: Path) -> str:
    return f"jsonl://{path}"


class TestJsonlConformance(MemoryStoreConformance):
    """The whole kit, on stores opened through the registry by their ``jsonl:`` URL."""

    @pytest.fixture
    def store_factory(self, jsonl_plugin: Path, tmp_path: Path) -> Callable[[], MemoryStore]:
        return lambda: load_memory_store(jsonl_url(tmp_path / "memory.jsonl"))


async def test_load_memory_store_opens_the_plugin_by_its_scheme(
    jsonl_plugin: Path, tmp_path: Path
) -> None:
    path = tmp_path / "memory.jsonl"
    store = load_memory_store(jsonl_url(path))
    assert type(store).__name__ == "JsonlMemoryStore"
    assert type(store).__module__ == "recallstore_jsonl"
    async with store:
        [record] = await store.write([MemoryWriteInput(scope=ALICE, content="likes green tea")])
    assert record.id in path.read_text(encoding="utf-8")
    async with load_memory_store(f"JSONL:{path}") as reopened:
        hits = await reopened.search(MemorySearchQuery(query="tea", scope=ALICE))
    assert [hit.record.id for hit in hits] == [record.id]


def test_a_backend_without_hybrid_search_refuses_an_embedder(
    jsonl_plugin: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="JsonlMemoryStore has no hybrid search"):
        load_memory_store(jsonl_url(tmp_path / "memory.jsonl"), embedder="default")


def test_the_plugin_describes_itself_as_a_file_store(jsonl_plugin: Path, tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    description = describe_store(
        ObservedMemoryStore(load_memory_store(jsonl_url(path)), EventBus())
    )
    assert (description.label, description.path, description.target) == (
        "JsonlMemoryStore",
        path,
        str(path),
    )
    assert str(description) == f"JsonlMemoryStore · {path}"


def test_without_the_plugin_the_scheme_is_unknown(tmp_path: Path) -> None:
    from recallstore import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown scheme 'jsonl'"):
        load_memory_store(jsonl_url(tmp_path / "memory.jsonl"))


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recallstore", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _seed(url: str) -> str:
    async with load_memory_store(url) as store:
        [record] = await store.write([MemoryWriteInput(scope=ALICE, content="likes green tea")])
    return record.id


@pytest.mark.slow
async def test_the_cli_lists_a_plugin_store_in_a_subprocess(
    jsonl_plugin: Path, plugin_env: dict[str, str], tmp_path: Path
) -> None:
    url = jsonl_url(tmp_path / "memory.jsonl")
    record_id = await _seed(url)
    listed = _cli(plugin_env, "list", "--db", url, "--scope", "user=alice")
    assert listed.returncode == 0, listed.stderr
    assert "likes green tea" in listed.stdout
    shown = _cli(plugin_env, "show", record_id, "--db", url)
    assert shown.returncode == 0, shown.stderr
    assert record_id in shown.stdout


@pytest.mark.slow
def test_the_cli_treats_a_plugin_store_as_a_file_store(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.jsonl"
    listed = _cli(plugin_env, "list", "--db", jsonl_url(missing))
    assert listed.returncode == 1
    assert f"no memory database at {str(missing)!r}" in listed.stderr
    assert not missing.exists()


@pytest.mark.slow
def test_the_cli_without_the_plugin_names_the_unknown_scheme(tmp_path: Path) -> None:
    listed = _cli(dict(os.environ), "list", "--db", jsonl_url(tmp_path / "m.jsonl"))
    assert listed.returncode != 0
    assert "unknown scheme 'jsonl'" in listed.stderr


@pytest.fixture
async def lens(jsonl_plugin: Path, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    bus = EventBus()
    async with load_memory_store(jsonl_url(tmp_path / "memory.jsonl")) as raw:
        await raw.write([MemoryWriteInput(scope=ALICE, content="likes green tea")])
        app = create_dashboard_app(ObservedMemoryStore(raw, bus), bus, token="t0ken")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            await client.get("/", params={"token": "t0ken"})
            yield client


async def test_the_dashboard_describes_and_lists_a_plugin_store(
    lens: httpx.AsyncClient, tmp_path: Path
) -> None:
    page = await lens.get("/records", params={"scope": "user=alice"})
    assert page.status_code == 200
    assert f"JsonlMemoryStore · {tmp_path / 'memory.jsonl'}" in page.text
    assert "likes green tea" in page.text
