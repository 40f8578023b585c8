"""The tool model: validation, structured errors, and schemas for OpenAI, Anthropic and MCP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import Field, ValidationError
from syrupy.assertion import SnapshotAssertion

from recallstore import MEMORY_TOOLS
from recallstore.toolbox import MAX_TOOL_CONTENT_CHARS, MAX_TOOL_LIMIT, MAX_TOOL_TAGS
from recallstore.tools import (
    Tool,
    ToolArguments,
    ToolFailure,
    ToolResult,
    anthropic_tool,
    mcp_tool,
    openai_tool,
    strict_json_schema,
)

# The specs alone: no store and no scope is needed to read or export a tool.
TOOLS = {spec.name: spec for spec in MEMORY_TOOLS}

# OpenAI structured outputs (strict mode) accept only these keywords.
STRICT_KEYWORDS = {
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
}


def walk_schemas(node: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside ``node``, with its path."""
    if not isinstance(node, dict):
        return
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from walk_schemas(sub, f"{path}.properties.{name}")
    for name, sub in node.get("$defs", {}).items():
        yield from walk_schemas(sub, f"{path}.$defs.{name}")
    if "items" in node:
        yield from walk_schemas(node["items"], f"{path}.items")
    for index, sub in enumerate(node.get("anyOf", [])):
        yield from walk_schemas(sub, f"{path}.anyOf[{index}]")


def strict_mode_violations(schema: dict[str, Any]) -> list[str]:
    """Every way ``schema`` breaks OpenAI's strict-mode rules (empty when it complies)."""
    problems = []
    for path, node in walk_schemas(schema):
        problems += [f"{path}: unsupported keyword {key!r}" for key in set(node) - STRICT_KEYWORDS]
        is_object = node.get("type") == "object" or "properties" in node
        if is_object:
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: additionalProperties must be false")
            if sorted(node.get("required", [])) != sorted(node.get("properties", {})):
                problems.append(f"{path}: every property must be required")
        if "type" not in node and "anyOf" not in node and "$ref" not in node and "enum" not in node:
            problems.append(f"{path}: no type")
    return problems


@pytest.mark.parametrize("name", list(TOOLS))
def test_openai_schemas_pass_strict_mode_rules(name: str) -> None:
    exported = openai_tool(TOOLS[name])
    assert exported["type"] == "function"
    function = exported["function"]
    assert function["strict"] is True
    assert function["name"] == name
    assert strict_mode_violations(function["parameters"]) == []


def test_the_strict_walker_catches_violations() -> None:
    loose = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 3, "default": "x"},
            "b": {"type": "object", "properties": {"c": {"type": "integer"}}},
        },
        "required": ["a"],
    }
    problems = strict_mode_violations(loose)
    assert "$: additionalProperties must be false" in problems
    assert "$: every property must be required" in problems
    assert "$.properties.b: additionalProperties must be false" in problems
    assert any("'maxLength'" in problem for problem in problems)
    assert any("'default'" in problem for problem in problems)
    assert strict_mode_violations(strict_json_schema(loose)) == []


def test_optional_arguments_become_nullable_in_strict_mode() -> None:
    parameters = openai_tool(TOOLS["memory_save"])["function"]["parameters"]
    assert parameters["required"] == ["content", "kind", "tags", "supersedes"]
    for name in ("kind", "tags", "supersedes"):
        assert {"type": "null"} in parameters["properties"][name]["anyOf"]
    assert parameters["properties"]["content"]["type"] == "string"


def test_caps_are_stated_in_every_export() -> None:
    save = TOOLS["memory_save"].input_schema()
    assert save["properties"]["content"]["maxLength"] == MAX_TOOL_CONTENT_CHARS
    assert save["properties"]["tags"]["maxItems"] == MAX_TOOL_TAGS
    assert TOOLS["memory_search"].input_schema()["properties"]["limit"]["maximum"] == MAX_TOOL_LIMIT
    strict = openai_tool(TOOLS["memory_save"])["function"]["parameters"]
    # Strict mode has no maxLength: the cap is stated in words and enforced by the tool.
    assert (
        f"At most {MAX_TOOL_CONTENT_CHARS} characters"
        in strict["properties"]["content"]["description"]
    )
    limit = openai_tool(TOOLS["memory_list"])["function"]["parameters"]["properties"]["limit"]
    assert {"type": "integer", "minimum": 1, "maximum": MAX_TOOL_LIMIT} in limit["anyOf"]


def test_responses_api_flavour_is_flat() -> None:
    exported = openai_tool(TOOLS["memory_list"], api="responses")
    assert exported["type"] == "function"
    assert exported["name"] == "memory_list"
    assert exported["strict"] is True
    assert strict_mode_violations(exported["parameters"]) == []


def test_anthropic_and_mcp_shapes() -> None:
    for tool in TOOLS.values():
        anthropic = anthropic_tool(tool)
        assert set(anthropic) == {"name", "description", "input_schema"}
        assert anthropic["input_schema"]["type"] == "object"
        assert anthropic["input_schema"]["additionalProperties"] is False
        mcp = mcp_tool(tool)
        assert mcp["inputSchema"] == anthropic["input_schema"]
        assert mcp["outputSchema"]["type"] == "object"
    hints = {
        name: {key: value for key, value in mcp_tool(tool)["annotations"].items() if key != "title"}
        for name, tool in TOOLS.items()
    }
    assert hints["memory_search"]["readOnlyHint"] is True
    assert hints["memory_list"]["readOnlyHint"] is True
    assert hints["memory_save"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert hints["memory_invalidate"]["destructiveHint"] is True
    assert hints["memory_invalidate"]["idempotentHint"] is True
    assert hints["memory_invalidate"]["readOnlyHint"] is False


def test_no_tool_schema_offers_a_scope() -> None:
    for tool in TOOLS.values():
        assert "scope" not in json.dumps(tool.input_schema())
        assert "scope" not in tool.argument_names()


@pytest.mark.parametrize("name", list(TOOLS))
def test_a_schema_is_the_callers_own_copy(name: str) -> None:
    # The schemas are made once per argument model; an adapter that edits the one it
    # got (as strict mode's export does) changes nothing for the next caller.
    tool = TOOLS[name]
    given, result = tool.input_schema(), tool.output_schema()
    expected, expected_result = json.dumps(given), json.dumps(result)
    given["properties"].clear()
    given["injected"] = True
    result.clear()
    assert json.dumps(tool.input_schema()) == expected
    assert json.dumps(tool.output_schema()) == expected_result
    assert tool.argument_names() == set(json.loads(expected)["properties"])


@pytest.mark.parametrize("export", ["openai", "anthropic", "mcp"])
@pytest.mark.parametrize("name", list(TOOLS))
def test_exported_schema_snapshot(
    name: str, export: str, prompt_snapshot: SnapshotAssertion
) -> None:
    exporter = {"openai": openai_tool, "anthropic": anthropic_tool, "mcp": mcp_tool}[export]
    # JSON data is stored as an indented, fenced json block.
    assert exporter(TOOLS[name]) == prompt_snapshot


class _EchoArguments(ToolArguments):
    text: str = Field(max_length=10)
    times: int = Field(default=1, ge=1, le=3)


class _EchoResult(ToolResult):
    echoed: str


async def _echo(args: _EchoArguments) -> _EchoResult:
    if args.text == "boom":
        raise ToolFailure("conflict", "cannot echo boom", ["text"])
    if args.text == "bad":
        return {"wrong": "shape"}  # type: ignore[return-value]
    return _EchoResult(echoed=args.text * args.times)


ECHO = Tool(
    name="echo",
    description="Echo text.",
    arguments=_EchoArguments,
    result=_EchoResult,
    function=_echo,
)


async def test_a_tool_validates_arguments_and_result() -> None:
    assert await ECHO.invoke({"text": "ab", "times": 2}) == {"ok": True, "echoed": "abab"}
    assert await ECHO.invoke('{"text": "ab", "times": null}') == {"ok": True, "echoed": "ab"}
    wrong = await ECHO.invoke({"text": "ab", "times": "many"})
    assert wrong["error"]["code"] == "invalid_arguments"
    assert wrong["error"]["fields"] == ["times"]
    too_long = await ECHO.invoke({"text": "x" * 11})
    assert too_long["error"]["fields"] == ["text"]
    extra = await ECHO.invoke({"text": "x", "loud": True})
    assert extra["error"]["message"] == (
        "loud: unknown argument (this tool takes only: text, times)"
    )


async def test_tool_failures_are_results_but_bugs_raise() -> None:
    assert await ECHO.invoke({"text": "boom"}) == {
        "ok": False,
        "error": {"code": "conflict", "message": "cannot echo boom", "fields": ["text"]},
    }
    with pytest.raises(ValidationError):
        await ECHO.invoke({"text": "bad"})
