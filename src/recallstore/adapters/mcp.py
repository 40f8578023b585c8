"""An MCP server for one scope's memory: the memory tools, the Manual and the recall.

:func:`create_mcp_server` builds a low-level ``mcp`` server (the ``mcp`` SDK 2.x). Its
tool definitions come from :func:`recallstore.tools.mcp_tool` and every call dispatches
through :meth:`recallstore.toolbox.MemoryToolbox.call`: the tools are defined once, as
tool specs (:data:`recallstore.toolset.MEMORY_TOOLS` unless the host passes its own), and
this module only translates. The scope is fixed when the server is built; nothing an
MCP client sends can choose or widen it.

Run it with ``recallstore mcp`` (docs/cli.md); ``python -m recallstore.adapters.mcp``
takes the same options::

    recallstore mcp --db memory.db --scope tenant=acme --scope user=u_42 --scope-fields tenant,user
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import parse_qs, urlsplit

from recallstore._version import __version__
from recallstore.errors import (
    IncompatibleDependencyError,
    MissingDependencyError,
    StoreUnavailableError,
)
from recallstore.prompt import render_recall
from recallstore.recall import assemble_recall
from recallstore.store import MemoryStore
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import mcp_tool
from recallstore.toolset import MEMORY_TOOLS, MemoryToolSpec

_FEATURE = "the MCP adapter"
_SUPPORTED_MAJOR = 2
_NEEDED = ">=2,<3"


def _check_mcp_sdk_version() -> None:
    """Fail early, naming both versions, when the installed ``mcp`` is not a 2.x release."""
    try:
        found = version("mcp")
    except PackageNotFoundError:
        return  # the import below reports the missing extra
    major = found.partition(".")[0]
    if not major.isdigit() or int(major) != _SUPPORTED_MAJOR:
        raise IncompatibleDependencyError(
            _FEATURE, "mcp", package="mcp", found=found, needed=_NEEDED
        )


try:
    _check_mcp_sdk_version()
    from mcp import types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
except ImportError as _exc:
    _failure: ImportError = _exc
    if not isinstance(_exc, MissingDependencyError):
        if (_exc.name or "").partition(".")[0] not in {"mcp", "mcp_types", "anyio"}:
            raise
        _failure = MissingDependencyError(_FEATURE, "mcp")
    if __name__ == "__main__":
        sys.exit(f"recallstore mcp: error: {_failure}")
    raise _failure from (None if _failure is _exc else _exc)

__all__ = [
    "MANUAL_PROMPT",
    "MANUAL_URI",
    "RECALL_PROMPT",
    "RECALL_URI",
    "RECALL_URI_TEMPLATE",
    "create_mcp_server",
    "main",
]

MANUAL_PROMPT = "memory_manual"
"""The prompt holding the standing memory instruction (the Manual)."""
RECALL_PROMPT = "memory_recall"
"""The prompt holding the recall block for a conversation's first user message."""
MANUAL_URI = "recallstore://memory/manual"
"""The resource holding the Manual, as plain text."""
RECALL_URI = "recallstore://memory/recall"
"""The resource holding the recall block: the scope's profile memories, or with
``?query=<first user message>`` also the memories relevant to it."""
RECALL_URI_TEMPLATE = RECALL_URI + "{?query}"
"""The resource template for :data:`RECALL_URI` with a query (RFC 6570)."""

_logger = logging.getLogger("recallstore.adapters.mcp")

# JSON-RPC code the MCP specification assigns to "resource not found".
_RESOURCE_NOT_FOUND = -32002

_NO_RECALL = "No memories were recalled for this message."

# Not a ToolErrorCode on purpose: the model did nothing wrong, and must not believe a
# failed save happened. The operator finds the cause in the server's log (stderr).
_UNAVAILABLE: dict[str, Any] = {
    "ok": False,
    "error": {
        "code": "unavailable",
        "message": (
            "Memory is unavailable right now; this call may not have taken effect. "
            "Carry on without memory and do not tell the user anything was saved."
        ),
        "fields": [],
    },
}

_PROMPTS = (
    types.Prompt(
        name=MANUAL_PROMPT,
        title="Memory manual",
        description=(
            "The standing instruction for the system prompt: you have memory, when to use "
            "it and how to keep it accurate."
        ),
        arguments=[],
    ),
    types.Prompt(
        name=RECALL_PROMPT,
        title="Recalled memories",
        description=(
            "The memories relevant to a conversation's first user message, as a delimited "
            "block for the system prompt."
        ),
        arguments=[
            types.PromptArgument(
                name="user_text",
                description="The first user message of the conversation.",
                required=True,
            )
        ],
    ),
)

_RESOURCES = (
    types.Resource(
        uri=MANUAL_URI,
        name="memory_manual",
        title="Memory manual",
        description="The standing memory instruction for the system prompt.",
        mime_type="text/plain",
    ),
    types.Resource(
        uri=RECALL_URI,
        name="memory_recall",
        title="Recalled memories",
        description=(
            "The scope's profile memories as a delimited block for the system prompt; "
            "read recallstore://memory/recall?query=<first user message> to add the "
            "memories relevant to a conversation."
        ),
        mime_type="text/plain",
    ),
)

_RESOURCE_TEMPLATES = (
    types.ResourceTemplate(
        uri_template=RECALL_URI_TEMPLATE,
        name="memory_recall_for_message",
        title="Recalled memories for a message",
        description=(
            "The memories relevant to a conversation's first user message (query), as a "
            "delimited block for the system prompt."
        ),
        mime_type="text/plain",
    ),
)


# What every {"ok": false} answer looks like (ToolError, or the adapter's "unavailable").
_FAILURE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"const": False},
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["code", "message", "fields"],
            "additionalProperties": False,
        },
    },
    "required": ["ok", "error"],
    "additionalProperties": False,
}


def _output_schema(success: Mapping[str, Any]) -> dict[str, Any]:
    """The success schema widened to the ``{"ok": false, "error": ...}`` answer.

    Clients that check ``isError`` results against ``outputSchema`` (the specification
    does not forbid it) must accept the error object too, so the schema admits both
    shapes. ``$defs`` move to the root so the ``#/$defs/...`` references keep resolving.
    """
    success = dict(success)
    definitions = success.pop("$defs", None)
    schema: dict[str, Any] = {"type": "object", "anyOf": [success, _FAILURE_SCHEMA]}
    if definitions:
        schema["$defs"] = definitions
    return schema


def _wire_tool(definition: Mapping[str, Any]) -> types.Tool:
    wire = dict(definition)
    wire["outputSchema"] = _output_schema(wire["outputSchema"])
    return types.Tool.model_validate(wire)


def _tool_result(result: Mapping[str, Any], *, failed: bool) -> types.CallToolResult:
    """A toolbox result as an MCP result: JSON text plus the same JSON as structured content."""
    structured = dict(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
        is_error=failed,
    )


def _text_prompt(description: str, text: str) -> types.GetPromptResult:
    return types.GetPromptResult(
        description=description,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )


def _invalid_params(message: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message)


def _recall_query(uri: str) -> str | None:
    """The ``query`` of a recall resource URI ("" for none), or None for another URI."""
    parts = urlsplit(uri)
    if f"{parts.scheme}://{parts.netloc}{parts.path}" != RECALL_URI or parts.fragment:
        return None
    values = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(values) - {"query"})
    if unknown:
        raise _invalid_params(
            f"resource {RECALL_URI!r} takes only a 'query' parameter, got {unknown[0]!r}"
        )
    return " ".join(values.get("query", []))


def create_mcp_server(
    store: MemoryStore,
    scope: Mapping[str, str],
    *,
    tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
    conversation_id: str | None = None,
    run_id: str | None = None,
    author: str | None = None,
    name: str = "recallstore",
) -> Server[Any]:
    """An MCP server exposing ``store``'s memory for ``scope`` only.

    ``store`` must already be open (entered); the server does not close it. ``scope``
    must be non-empty (:class:`~recallstore.errors.ConfigurationError` otherwise).
    ``tools`` are the tool specs it lists and dispatches, as for
    :class:`~recallstore.toolbox.MemoryToolbox`; the Manual follows them.

    Tool results carry JSON text and the same object as ``structuredContent``. A
    model's mistake (``"ok": false`` with a code such as ``not_found``) is a result
    with ``isError: true``, as the MCP specification asks of errors that originate in
    the tool, so a client reports it as a failed call the model can act on (LangChain's
    ``status="error"``, as in-process). A store failure is also ``isError: true``, with
    code ``unavailable`` and its cause only in the server's log. The server's
    ``instructions`` are the Manual, also offered as the ``memory_manual`` prompt and
    the :data:`MANUAL_URI` resource; the recall block is the ``memory_recall`` prompt
    and the :data:`RECALL_URI` resource.
    """
    toolbox = MemoryToolbox(
        store, scope, tools=tools, conversation_id=conversation_id, run_id=run_id, author=author
    )
    bound_scope = toolbox.scope
    wire_tools = [_wire_tool(mcp_tool(tool)) for tool in toolbox.tools]
    manual = toolbox.manual

    async def recall_block(user_text: str) -> str:
        recall = await assemble_recall(
            store, bound_scope, user_text, conversation_id=conversation_id, run_id=run_id
        )
        block = render_recall(recall)
        return block if block is not None else _NO_RECALL

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.model_copy(deep=True) for tool in wire_tools])

    # The toolbox validates arguments itself and answers with a structured error the
    # model can act on; the low-level server does no schema check that could pre-empt it.
    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            result = await toolbox.call(params.name, params.arguments)
        except StoreUnavailableError as exc:
            _logger.error("memory tool %s failed: %s", params.name, exc)
            return _tool_result(_UNAVAILABLE, failed=True)
        return _tool_result(result, failed=result.get("ok") is False)

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[p.model_copy(deep=True) for p in _PROMPTS])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        arguments = params.arguments or {}
        if params.name == MANUAL_PROMPT:
            return _text_prompt("The standing memory instruction.", manual)
        if params.name == RECALL_PROMPT:
            user_text = arguments.get("user_text")
            if not isinstance(user_text, str) or not user_text.strip():
                raise _invalid_params(f"prompt {RECALL_PROMPT!r} needs a non-empty 'user_text'")
            return _text_prompt(
                "Memories recalled for this message.", await recall_block(user_text)
            )
        raise _invalid_params(
            f"there is no prompt named {params.name!r}; the prompts are: "
            + ", ".join(prompt.name for prompt in _PROMPTS)
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[r.model_copy(deep=True) for r in _RESOURCES])

    async def list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[t.model_copy(deep=True) for t in _RESOURCE_TEMPLATES]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == MANUAL_URI:
            text = manual
        else:
            query = _recall_query(uri)
            if query is None:
                raise MCPError(
                    _RESOURCE_NOT_FOUND,
                    f"there is no resource {uri!r}; the resources are: "
                    f"{MANUAL_URI}, {RECALL_URI}, {RECALL_URI_TEMPLATE}",
                )
            text = await recall_block(query)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
        )

    return Server(
        name,
        version=__version__,
        instructions=manual,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m recallstore.adapters.mcp``: the same command as ``recallstore mcp``."""
    # The command lives beside the server (adapters._mcp_command), not in the CLI.
    from recallstore._command.main import run_command
    from recallstore.adapters._mcp_command import mcp_parser

    return run_command(
        mcp_parser(lambda: create_mcp_server), sys.argv[1:] if argv is None else argv
    )


if __name__ == "__main__":
    sys.exit(main())
