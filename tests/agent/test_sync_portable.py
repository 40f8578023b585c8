"""``SyncMemoryStore.portable`` (the store awaited from any loop) and
``SyncToolbox.functions()`` (the tools as typed Python functions), on a real SQLite file."""

from __future__ import annotations

import asyncio
import inspect
import threading
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

import recallstore
from recallstore import MEMORY_TOOLS, MemoryCapability
from recallstore.errors import StoreUnavailableError
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.sync import SyncMemoryStore, SyncToolbox
from recallstore.tools import ToolArguments, ToolResult, ToolSpec

SCOPE = {"tenant": "acme", "user": "u1"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SyncMemoryStore]:
    with SyncMemoryStore(tmp_path / "memory.db") as opened:
        yield opened


def test_the_portable_store_runs_every_call_on_the_stores_loop(store: SyncMemoryStore) -> None:
    seen: list[int | None] = []
    original = store.store.write

    async def recording(inputs: Any) -> Any:
        seen.append(threading.get_ident())
        return await original(inputs)

    store.store.write = recording  # type: ignore[method-assign]
    portable = store.portable

    async def elsewhere() -> int:
        # A loop of its own, as a framework's run_sync has.
        async with portable:  # opens and closes nothing
            await portable.write([MemoryWriteInput(scope=SCOPE, content="Likes green tea.")])
        hits = await portable.search(MemorySearchQuery(scope=SCOPE, query="tea"))
        return len(hits)

    assert asyncio.run(elsewhere()) == 1
    assert seen == [store.loop._thread.ident]
    assert store.get(store.search(MemorySearchQuery(scope=SCOPE))[0].record.id) is not None


def test_the_portable_store_keeps_only_the_extensions_it_can_carry(
    store: SyncMemoryStore,
) -> None:
    assert "revise" in store.capabilities().extensions
    assert store.portable.capabilities().extensions == frozenset({"idempotency"})
    assert store.portable.capabilities().durable is True
    assert recallstore.store.store_clock(store.portable) is store.clock


def test_capture_and_the_capability_work_through_the_portable_store(
    store: SyncMemoryStore,
) -> None:
    portable = store.portable
    transcript = [("user", "I adopted a cat named Miso.")]

    async def conversation() -> tuple[int, int, str]:
        first = await recallstore.capture(portable, SCOPE, transcript, conversation_id="c1")
        again = await recallstore.capture(portable, SCOPE, transcript, conversation_id="c1")
        memory = MemoryCapability(portable, scope_fields=("tenant", "user"))
        instance = await memory.instantiate(
            SCOPE, conversation_id="c2", first_user_text="What is my cat called?"
        )
        return first.added, again.added, instance.instructions

    added, again, instructions = asyncio.run(conversation())
    assert (added, again) == (1, 0)
    assert "Miso" in instructions


def test_the_portable_store_of_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SyncMemoryStore(tmp_path / "memory.db")
    portable = store.portable
    store.close()
    with pytest.raises(StoreUnavailableError):
        asyncio.run(portable.get("01m8sz7b9b1303a3xvx572azjj"))


def test_functions_are_the_tools_as_typed_python_functions(store: SyncMemoryStore) -> None:
    toolbox = SyncToolbox(store, SCOPE)
    save, search, listing, invalidate = toolbox.functions()
    assert [f.__name__ for f in (save, search, listing, invalidate)] == [
        spec.name for spec in MEMORY_TOOLS
    ]
    hints = typing.get_type_hints(save)
    assert hints["content"] is str
    assert hints["supersedes"] == str | None
    assert hints["kind"] == typing.Literal["fact", "preference", "episode", "profile"] | None
    assert hints["return"] == dict[str, Any]
    assert list(inspect.signature(save).parameters) == ["content", "kind", "tags", "supersedes"]
    assert "scope" not in inspect.signature(search).parameters
    assert save.__doc__ is not None
    assert "Args:\n    content: The memory as one self-contained sentence" in save.__doc__
    assert inspect.getsource(invalidate).startswith("def memory_invalidate(id: str")

    saved = save("Likes green tea.", kind="preference")  # None: the tool's defaults
    assert saved["ok"] is True
    assert saved["memory"]["kind"] == "preference"
    found = search("tea")
    assert [m["content"] for m in found["memories"]] == ["Likes green tea."]
    assert listing(limit=1)["count"] == 1
    other = SyncToolbox(store, {"tenant": "acme", "user": "u2"}).functions()[1]
    assert other("tea")["count"] == 0  # the scope is the toolbox's


def test_a_models_mistake_through_a_function_is_the_error_result(store: SyncMemoryStore) -> None:
    save, _, _, invalidate = SyncToolbox(store, SCOPE).functions()
    wrong_kind = save("Likes tea.", kind="opinion")
    assert wrong_kind["ok"] is False
    assert wrong_kind["error"]["code"] == "invalid_arguments"
    assert invalidate("01nosuchmemory00000000000")["error"]["code"] == "not_found"
    assert store.search(MemorySearchQuery(scope=SCOPE)) == []  # nothing written


class _OddArguments(ToolArguments):
    """A host tool whose argument is no Python name."""

    odd: str = Field(alias="not-a-name", description="An argument no function can take.")


async def _odd(memory: Any, arguments: _OddArguments) -> ToolResult:
    return ToolResult()


def test_a_tool_no_function_can_spell_is_refused_by_name(store: SyncMemoryStore) -> None:
    spec: ToolSpec[Any, Any, Any] = ToolSpec(
        name="memory_odd",
        title="Odd",
        description="A host tool.",
        arguments=_OddArguments,
        result=ToolResult,
        run=_odd,
        manual_use=("Never.",),
    )
    toolbox = SyncToolbox(store, SCOPE, tools=(*MEMORY_TOOLS, spec))
    with pytest.raises(ValueError, match=r"memory_odd.*'not-a-name' cannot be a Python"):
        toolbox.functions()
