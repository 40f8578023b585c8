"""The open toolset: specs readable without a store, tools a host adds or removes.

``memory_get`` below is a fifth tool written the way a host would write one, outside
the package: its only store access is the ScopedMemory the toolbox hands it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from pydantic import Field
from syrupy.assertion import SnapshotAssertion

from recallstore import (
    MEMORY_TOOLS,
    ConfigurationError,
    MemoryStore,
    MemoryWriteInput,
    ScopedMemory,
    ToolArguments,
    ToolResult,
    ToolSpec,
    anthropic_tool,
    mcp_tool,
    openai_tool,
)
from recallstore.adapters.mcp import MANUAL_PROMPT, create_mcp_server
from recallstore.capability import MemoryCapability
from recallstore.prompt import Manual
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import strict_json_schema
from recallstore.toolset import MEMORY_INVALIDATE, MemoryView, check_toolset

ALICE = {"tenant": "acme", "user": "alice"}
BOB = {"tenant": "acme", "user": "bob"}
DEFAULT_NAMES = ["memory_save", "memory_search", "memory_list", "memory_invalidate"]
TIMEOUT = 15  # seconds: every MCP exchange is bounded
AGENT_SURFACE_DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-surface.md"


class GetArguments(ToolArguments):
    """Arguments of memory_get."""

    id: str = Field(min_length=1, max_length=128, description="The id of the memory to read.")


class GetResult(ToolResult):
    """What memory_get returns."""

    memory: MemoryView
    valid: bool


async def get_memory(memory: ScopedMemory, args: GetArguments) -> GetResult:
    record = await memory.get(args.id)
    return GetResult(memory=MemoryView.of(record), valid=not record.is_invalidated)


MEMORY_GET = ToolSpec(
    name="memory_get",
    title="Read one memory",
    description="Read one saved memory by its id, including whether it is still valid.",
    arguments=GetArguments,
    result=GetResult,
    run=get_memory,
    read_only=True,
    idempotent=True,
    manual_use=("To reread one memory whose id you know, use memory_get.",),
)
FIVE_TOOLS = (*MEMORY_TOOLS, MEMORY_GET)
WITHOUT_INVALIDATE = tuple(spec for spec in MEMORY_TOOLS if spec.name != "memory_invalidate")


def names(exported: list[dict[str, Any]]) -> list[str]:
    """The tool names of an OpenAI (chat), Anthropic or MCP export, in order."""
    return [tool["function"]["name"] if "function" in tool else tool["name"] for tool in exported]


def test_specs_are_readable_without_a_store_or_a_scope(store: MemoryStore) -> None:
    # Everything a framework declares at build time, read from the bare specs ...
    declared = {
        spec.name: {
            "openai": openai_tool(spec),
            "responses": openai_tool(spec, api="responses"),
            "anthropic": anthropic_tool(spec),
            "mcp": mcp_tool(spec),
            "strict": strict_json_schema(spec.input_schema()),
            "output": spec.output_schema(),
        }
        for spec in MEMORY_TOOLS
    }
    manual = Manual.render(MEMORY_TOOLS)
    assert list(declared) == DEFAULT_NAMES
    assert [spec.title for spec in MEMORY_TOOLS] == [
        "Save a memory",
        "Search memory",
        "List memories",
        "Invalidate a memory",
    ]
    # ... is exactly what a toolbox bound to a real store and scope exports later.
    toolbox = MemoryToolbox(store, ALICE)
    for tool, openai, responses, anthropic, mcp in zip(
        toolbox.tools,
        toolbox.openai_tools(),
        toolbox.openai_tools(api="responses"),
        toolbox.anthropic_tools(),
        toolbox.mcp_tools(),
        strict=True,
    ):
        spec = declared[tool.name]
        assert spec["openai"] == openai
        assert spec["responses"] == responses
        assert spec["anthropic"] == anthropic
        assert spec["mcp"] == mcp
        assert spec["strict"] == openai["function"]["parameters"]
        assert spec["output"] == tool.output_schema()
    assert manual == toolbox.manual == Manual.render()


async def test_a_spec_binds_per_call_without_a_toolbox(store: MemoryStore) -> None:
    # How a framework adapter runs a tool it declared at build time, once the run's
    # scope is known: bind the spec to that scope's memory and invoke it.
    (bobs,) = await store.write([MemoryWriteInput(scope=BOB, content="Bob's secret plan.")])
    alice = ScopedMemory(store, ALICE, conversation_id="c-7")
    saved = await MEMORY_TOOLS[0].bind(alice).invoke({"content": "Likes green tea."})
    record = await store.get(saved["memory"]["id"])
    assert record is not None
    assert record.scope == ALICE
    assert record.provenance is not None
    assert record.provenance.conversation_id == "c-7"
    foreign = await MEMORY_GET.bind(alice).invoke(json.dumps({"id": bobs.id}))
    assert foreign["error"]["code"] == "not_found"
    with pytest.raises(ConfigurationError, match="non-empty scope"):
        ScopedMemory(store, {})


async def test_a_fifth_tool_appears_in_every_export_and_the_manual(store: MemoryStore) -> None:
    toolbox = MemoryToolbox(store, ALICE, tools=FIVE_TOOLS)
    expected = [*DEFAULT_NAMES, "memory_get"]
    assert [tool.name for tool in toolbox.tools] == expected
    assert toolbox.specs == FIVE_TOOLS
    assert names(toolbox.openai_tools()) == expected
    assert names(toolbox.openai_tools(api="responses")) == expected
    assert names(toolbox.anthropic_tools()) == expected
    assert names(toolbox.mcp_tools()) == expected
    openai = toolbox.openai_tools()[-1]["function"]
    assert openai["strict"] is True
    assert openai["parameters"] == {
        "type": "object",
        "properties": {"id": {"type": "string", "description": "The id of the memory to read."}},
        "required": ["id"],
        "additionalProperties": False,
    }
    assert toolbox.anthropic_tools()[-1]["input_schema"]["properties"]["id"]["maxLength"] == 128
    mcp = toolbox.mcp_tools()[-1]
    assert mcp["title"] == "Read one memory"
    assert mcp["annotations"]["readOnlyHint"] is True
    assert mcp["annotations"]["idempotentHint"] is True
    assert mcp["outputSchema"]["required"] == ["memory", "valid"]
    manual = toolbox.manual
    assert "Tools: memory_save, memory_search, memory_list, memory_invalidate, memory_get." in (
        manual
    )
    assert "- To reread one memory whose id you know, use memory_get." in manual
    # The default tools' guidance is all still there.
    assert Manual.render().replace(", memory_invalidate.", ", memory_invalidate, memory_get.") == (
        manual.replace("- To reread one memory whose id you know, use memory_get.\n", "")
    )


def test_manual_with_a_fifth_tool_snapshot(prompt_snapshot: SnapshotAssertion) -> None:
    assert Manual.render(FIVE_TOOLS) == prompt_snapshot


async def test_a_fifth_tool_reaches_only_the_bound_scope(store: MemoryStore) -> None:
    (bobs,) = await store.write([MemoryWriteInput(scope=BOB, content="Bob's secret plan.")])
    toolbox = MemoryToolbox(store, ALICE, tools=FIVE_TOOLS)
    saved = await toolbox.call("memory_save", {"content": "Likes green tea."})
    mine = saved["memory"]["id"]
    assert await toolbox.call("memory_get", {"id": mine}) == {
        "ok": True,
        "memory": saved["memory"],
        "valid": True,
    }
    await toolbox.call("memory_invalidate", {"id": mine, "reason": "switched to coffee"})
    assert (await toolbox.call("memory_get", json.dumps({"id": mine})))["valid"] is False
    foreign = await toolbox.call("memory_get", {"id": bobs.id})
    missing = await toolbox.call("memory_get", {"id": "no-such-id"})
    assert foreign["error"]["code"] == missing["error"]["code"] == "not_found"
    assert foreign["error"]["message"] == missing["error"]["message"].replace(
        "'no-such-id'", repr(bobs.id)
    )
    refused = await toolbox.call("memory_get", {"id": bobs.id, "scope": BOB})
    assert refused["error"]["code"] == "invalid_arguments"
    assert refused["error"]["fields"] == ["scope"]


async def over_mcp(
    store: MemoryStore, tools: Any, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[types.Tool], list[types.CallToolResult], str]:
    """What a real MCP client sees of a server offering ``tools``: tools, call results, Manual."""
    server = create_mcp_server(store, ALICE, tools=tools)
    with anyio.fail_after(TIMEOUT):
        async with Client(server, read_timeout_seconds=TIMEOUT) as client:
            listed = (await client.list_tools()).tools
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            manual = await client.get_prompt(MANUAL_PROMPT)
    (message,) = manual.messages
    assert isinstance(message.content, types.TextContent)
    return listed, results, message.content.text


async def test_a_fifth_tool_over_the_real_mcp_server(store: MemoryStore) -> None:
    (saved,) = await store.write([MemoryWriteInput(scope=ALICE, content="Likes green tea.")])
    (bobs,) = await store.write([MemoryWriteInput(scope=BOB, content="Bob's secret plan.")])
    calls = [("memory_get", {"id": saved.id}), ("memory_get", {"id": bobs.id})]
    listed, (got, foreign), manual = await over_mcp(store, FIVE_TOOLS, calls)
    assert [tool.name for tool in listed] == [*DEFAULT_NAMES, "memory_get"]
    wire = listed[-1].model_dump(mode="json", by_alias=True, exclude_none=True)
    assert {key: wire[key] for key in ("inputSchema", "annotations")} == {
        key: mcp_tool(MEMORY_GET)[key] for key in ("inputSchema", "annotations")
    }
    # Over MCP the output schema also admits the {"ok": false, ...} answer.
    success = dict(mcp_tool(MEMORY_GET)["outputSchema"])
    assert wire["outputSchema"]["$defs"] == success.pop("$defs")
    assert wire["outputSchema"]["anyOf"][0] == success
    assert got.is_error is False
    assert got.structured_content is not None
    assert got.structured_content["memory"]["content"] == "Likes green tea."
    # A model's mistake is an isError result carrying the structured error.
    assert foreign.is_error is True
    assert foreign.structured_content is not None
    assert foreign.structured_content["error"]["code"] == "not_found"
    assert manual == Manual.render(FIVE_TOOLS)


async def test_a_removed_tool_is_gone_from_exports_manual_and_dispatch(
    store: MemoryStore,
) -> None:
    (record,) = await store.write([MemoryWriteInput(scope=ALICE, content="Lives in Berlin.")])
    toolbox = MemoryToolbox(store, ALICE, tools=WITHOUT_INVALIDATE)
    remaining = ["memory_save", "memory_search", "memory_list"]
    for exported in (
        toolbox.openai_tools(),
        toolbox.openai_tools(api="responses"),
        toolbox.anthropic_tools(),
        toolbox.mcp_tools(),
    ):
        assert names(exported) == remaining
    manual = toolbox.manual
    assert "memory_invalidate" not in manual
    assert "Tools: memory_save, memory_search, memory_list." in manual
    # Its rule is gone and the rules after it are renumbered.
    assert "\n3. Never save secrets:" in manual
    assert "\n5. " not in manual

    result = await toolbox.call("memory_invalidate", {"id": record.id, "reason": "moved"})
    assert result == {
        "ok": False,
        "error": {
            "code": "unknown_tool",
            "message": (
                "There is no tool named 'memory_invalidate'; the memory tools are: "
                "memory_save, memory_search, memory_list"
            ),
            "fields": [],
        },
    }
    unchanged = await store.get(record.id)
    assert unchanged is not None
    assert not unchanged.is_invalidated


async def test_a_removed_tool_is_gone_over_mcp(store: MemoryStore) -> None:
    (record,) = await store.write([MemoryWriteInput(scope=ALICE, content="Lives in Berlin.")])
    calls = [("memory_invalidate", {"id": record.id})]
    listed, (called,), manual = await over_mcp(store, WITHOUT_INVALIDATE, calls)
    assert [tool.name for tool in listed] == ["memory_save", "memory_search", "memory_list"]
    assert called.is_error is True
    assert called.structured_content is not None
    assert called.structured_content["error"]["code"] == "unknown_tool"
    assert "memory_invalidate" not in manual
    unchanged = await store.get(record.id)
    assert unchanged is not None
    assert not unchanged.is_invalidated


async def test_the_capability_offers_the_hosts_tools(store: MemoryStore) -> None:
    capability = MemoryCapability(store, scope_fields=("user",), tools=FIVE_TOOLS)
    memory = await capability.instantiate(
        {"user": "alice"}, conversation_id="c1", first_user_text="hi"
    )
    assert memory.toolbox.specs == FIVE_TOOLS
    assert "memory_get" in memory.instructions
    with pytest.raises(ConfigurationError, match="at least one tool"):
        MemoryCapability(store, scope_fields=("user",), tools=())


class ScopedArguments(ToolArguments):
    scope: dict[str, str]


class AliasedScopeArguments(ToolArguments):
    where: str = Field(alias="scope")


def spec_with(**changes: Any) -> ToolSpec[Any, Any, Any]:
    fields: dict[str, Any] = {
        "name": "memory_get",
        "description": "Read one memory.",
        "arguments": GetArguments,
        "result": GetResult,
        "run": get_memory,
    }
    return ToolSpec(**{**fields, **changes})


@pytest.mark.parametrize(
    ("tools", "problem"),
    [
        ((), "at least one tool"),
        ((*MEMORY_TOOLS, MEMORY_INVALIDATE), "two tools are named 'memory_invalidate'"),
        ((spec_with(arguments=ScopedArguments),), "takes a 'scope' argument"),
        ((spec_with(arguments=AliasedScopeArguments),), "takes a 'scope' argument"),
        (("memory_save",), "must be ToolSpec instances"),
        ("memory_save", "must be a sequence of tool specs"),
        (MEMORY_GET, "must be a sequence of tool specs"),
    ],
)
def test_a_bad_toolset_is_refused_by_name(store: MemoryStore, tools: Any, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        MemoryToolbox(store, ALICE, tools=tools)
    with pytest.raises(ConfigurationError, match=problem):
        check_toolset(tools)


def test_a_bound_tool_is_not_a_spec(store: MemoryStore) -> None:
    # A bound Tool already carries its context: offering it would bypass the toolbox's scope.
    bound: Any = MemoryToolbox(store, BOB).tools[0]
    with pytest.raises(ConfigurationError, match="must be ToolSpec instances") as caught:
        MemoryToolbox(store, ALICE, tools=(*MEMORY_TOOLS[1:], bound))
    assert "memory_save" in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"name": "memory get"}, "tool name 'memory get'"),
        ({"name": "x" * 65}, "1 to 64"),
        ({"name": ""}, "tool name ''"),
        ({"description": "  "}, "non-empty description"),
        ({"arguments": dict}, "arguments must be a subclass of recallstore.tools.ToolArguments"),
        ({"result": MemoryView}, "result must be a subclass of recallstore.tools.ToolResult"),
        ({"run": "get_memory"}, "run must be callable"),
        ({"manual_use": "Use memory_get."}, "manual_use must be a tuple of one-line strings"),
        ({"manual_rules": ("one\ntwo",)}, "manual_rules must be a tuple"),
        ({"manual_rules": ("",)}, "manual_rules must be a tuple"),
    ],
)
def test_a_malformed_spec_is_refused_when_declared(changes: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        spec_with(**changes)


def test_the_manual_takes_specs_not_names() -> None:
    with pytest.raises(TypeError, match="not tool names: got 'memory_save'"):
        Manual.render(["memory_save"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one tool"):
        Manual.render([])


async def test_the_documented_toolset_examples_run(store: MemoryStore) -> None:
    text = AGENT_SURFACE_DOC.read_text(encoding="utf-8")
    section = text[text.index("## The toolset") : text.index("### ScopedMemory")]
    reading_part, adding_part = section.split("### Adding or removing a tool")
    reading = re.findall(r"```python\n(.*?)```", reading_part, re.DOTALL)[0]
    (adding,) = re.findall(r"```python\n(.*?)```", adding_part, re.DOTALL)
    namespace: dict[str, Any] = {"store": store, "scope": ALICE}
    exec(compile(reading, str(AGENT_SURFACE_DOC), "exec", dont_inherit=True), namespace)
    exec(compile(adding, str(AGENT_SURFACE_DOC), "exec", dont_inherit=True), namespace)
    five, no_invalidate = namespace["five"], namespace["no_invalidate"]
    saved = await five.call("memory_save", {"content": "Likes green tea."})
    got = await five.call("memory_get", {"id": saved["memory"]["id"]})
    assert got == {"ok": True, "memory": saved["memory"], "valid": True}
    assert "memory_get" in five.manual
    gone = await no_invalidate.call("memory_invalidate", {"id": saved["memory"]["id"]})
    assert gone["error"]["code"] == "unknown_tool"
