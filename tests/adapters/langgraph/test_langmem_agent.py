"""A LangChain ``create_agent`` agent with langmem's memory tools on the adapter.

Conversation 1 saves where the user lives and then corrects it (langmem's ``update``);
conversation 2 searches and finds the corrected fact, while the first one is kept in the
audit trail (superseded, not overwritten); another user's namespace finds nothing. Run
with the agent's async API on a SQLite file and its sync API on each backend.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langmem import create_manage_memory_tool, create_search_memory_tool
from tests.adapters.langgraph.scripted_chat import ScriptedChatModel, tool_call

from recallstore.adapters.langgraph import LangGraphStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.sync import SyncMemoryStore

NAMESPACE = ("memories", "{langgraph_user_id}")
OLD, NEW = "Lives in Porto.", "Lives in Lisbon."


def remembering(messages: Sequence[BaseMessage]) -> AIMessage:
    """Conversation 1: save the fact, then correct it with the id the tool reported."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("manage_memory", {"content": OLD, "action": "create"}, "save")
    if len(results) == 1:
        created = re.fullmatch(r"created memory (\S+)", str(results[0].content))
        assert created is not None, results[0].content
        update = {"content": NEW, "action": "update", "id": created.group(1)}
        return tool_call("manage_memory", update, "correct")
    return AIMessage(content="Noted: you live in Lisbon now.")


def recalling(messages: Sequence[BaseMessage]) -> AIMessage:
    """Conversation 2: search, then answer from what came back."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("search_memory", {"query": "where the user lives"}, "search")
    found = json.loads(str(results[0].content))
    return AIMessage(content=found[0]["value"]["content"] if found else "I do not know.")


def agent(script: Any, lg_store: LangGraphStore) -> CompiledStateGraph[Any, Any, Any, Any]:
    return create_agent(
        ScriptedChatModel(script=script),
        tools=[create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)],
        store=lg_store,
    )


def user(user_id: str, thread: str = "t-1") -> RunnableConfig:
    return {"configurable": {"langgraph_user_id": user_id, "thread_id": thread}}


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def last_reply(state: dict[str, Any]) -> str:
    return str(state["messages"][-1].content)


def search_result(state: dict[str, Any]) -> list[dict[str, Any]]:
    (result,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    loaded: list[dict[str, Any]] = json.loads(str(result.content))
    return loaded


def check_audit_trail(versions: list[Any], item_key: str) -> None:
    old, new = versions
    assert (old.content, new.content) == (OLD, NEW)
    assert old.superseded_by == new.id
    assert new.invalid_at is None
    assert old.target.key == new.target.key == item_key
    assert old.scope == new.scope == {"collection": "memories", "tenant": "acme", "user": "u1"}
    # Who wrote them: conversation 1's thread, the adapter's author.
    assert old.provenance == new.provenance
    assert new.provenance is not None
    assert (new.provenance.conversation_id, new.provenance.author) == ("t-1", "langmem-agent")


async def test_create_agent_with_langmem_tools_async(store: SqliteMemoryStore) -> None:
    lg_store = LangGraphStore(
        store,
        namespace_fields=("collection", "user"),
        scope={"tenant": "acme"},
        author="langmem-agent",
    )
    first = await agent(remembering, lg_store).ainvoke(said("I moved to Lisbon"), user("u1"))
    assert last_reply(first) == "Noted: you live in Lisbon now."

    second = await agent(recalling, lg_store).ainvoke(said("Where do I live?"), user("u1", "t-2"))
    assert last_reply(second) == NEW
    (found,) = search_result(second)  # the corrected fact only: the old one is history
    check_audit_trail(await lg_store.ahistory(("memories", "u1"), found["key"]), found["key"])

    stranger = await agent(recalling, lg_store).ainvoke(said("Where do I live?"), user("u2", "t-3"))
    assert search_result(stranger) == []
    assert last_reply(stranger) == "I do not know."


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
async def test_langgraph_prebuilt_react_agent_runs_on_the_adapter(
    store: SqliteMemoryStore,
) -> None:
    # Deprecated upstream in favour of create_agent, and still what many graphs use.
    from langgraph.prebuilt import create_react_agent

    lg_store = LangGraphStore(
        store,
        namespace_fields=("collection", "user"),
        scope={"tenant": "acme"},
        author="langmem-agent",
    )
    tools = [create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)]

    def react(script: Any) -> Any:
        return create_react_agent(ScriptedChatModel(script=script), tools, store=lg_store)

    await react(remembering).ainvoke(said("I moved to Lisbon"), user("u1"))
    second = await react(recalling).ainvoke(said("Where do I live?"), user("u1", "t-2"))
    assert last_reply(second) == NEW
    (found,) = search_result(second)
    check_audit_trail(await lg_store.ahistory(("memories", "u1"), found["key"]), found["key"])


def test_create_agent_with_langmem_tools_sync(backend_store: SyncMemoryStore) -> None:
    lg_store = LangGraphStore(
        backend_store,
        namespace_fields=("collection", "user"),
        scope={"tenant": "acme"},
        author="langmem-agent",
    )
    agent(remembering, lg_store).invoke(said("I moved to Lisbon"), user("u1"))
    second = agent(recalling, lg_store).invoke(said("Where do I live?"), user("u1", "t-2"))
    assert last_reply(second) == NEW
    (found,) = search_result(second)
    check_audit_trail(lg_store.history(("memories", "u1"), found["key"]), found["key"])
    stranger = agent(recalling, lg_store).invoke(said("Where do I live?"), user("u2", "t-3"))
    assert search_result(stranger) == []


MADE_UP_ID = "6f1c2b9e-0000-4000-8000-000000000000"


def deleting_a_made_up_id(messages: Sequence[BaseMessage]) -> AIMessage:
    """A model slip: delete a memory by an id no tool ever reported, then answer."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("manage_memory", {"action": "delete", "id": MADE_UP_ID}, "slip")
    return AIMessage(content=f"tool said: {results[0].content} ({results[0].status})")


async def test_a_delete_of_a_made_up_id_does_not_end_the_run(store: SqliteMemoryStore) -> None:
    # As on LangGraph's InMemoryStore: the delete succeeds and changes nothing, so the run
    # goes on and the model reads langmem's answer (it has no error path to the model).
    lg_store = LangGraphStore(store, namespace_fields=("collection", "user"))
    await agent(remembering, lg_store).ainvoke(said("I moved to Lisbon"), user("u1"))
    before = await lg_store.asearch(("memories", "u1"))

    run = await agent(deleting_a_made_up_id, lg_store).ainvoke(said("forget it"), user("u1"))
    assert last_reply(run) == f"tool said: Deleted memory {MADE_UP_ID} (success)"
    after = await lg_store.asearch(("memories", "u1"))
    assert [(i.key, i.value) for i in after] == [(i.key, i.value) for i in before]
    assert [i.value["content"] for i in after] == [NEW]


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_a_made_up_delete_in_a_prebuilt_react_agent_does_not_end_the_run(
    backend_store: SyncMemoryStore,
) -> None:
    from langgraph.prebuilt import create_react_agent

    lg_store = LangGraphStore(backend_store, namespace_fields=("collection", "user"))
    tools = [create_manage_memory_tool(NAMESPACE)]
    model = ScriptedChatModel(script=deleting_a_made_up_id)
    run = create_react_agent(model, tools, store=lg_store).invoke(said("forget"), user("u1"))
    assert last_reply(run) == f"tool said: Deleted memory {MADE_UP_ID} (success)"
    assert lg_store.search(("memories",)) == []
