"""An MCP server for one scope's memory: the memory tools, the Manual and the recall.

:func:`create_mcp_server` builds a low-level ``mcp`` server. Its tool definitions come
from :func:`recallstore.tools.mcp_tool` and every call dispatches through
:meth:`recallstore.toolbox.MemoryToolbox.call`: the tools are defined once, as tool
specs (:data:`recallstore.toolset.MEMORY_TOOLS` unless the host passes its own), and
this module only translates. The scope is fixed when the server is built;
nothing an MCP client sends can choose or widen it.

Run it over stdio (needs the ``mcp`` extra)::

    python -m recallstore.adapters.mcp --db memory.db --scope tenant=acme --scope user=u_42
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

from recallstore._version import __version__
from recallstore.backends.registry import describe_store
from recallstore.errors import (
    MemoryValidationError,
    MissingDependencyError,
    RecallstoreError,
    StoreUnavailableError,
)
from recallstore.load import load_memory_store
from recallstore.prompt import Awareness, RenderContext
from recallstore.recall import assemble_recall
from recallstore.records import parse_scope_pairs
from recallstore.store import MemoryStore
from recallstore.toolbox import MemoryToolbox
from recallstore.tools import mcp_tool
from recallstore.toolset import MEMORY_TOOLS, MemoryToolSpec

PROG = "python -m recallstore.adapters.mcp"

try:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import McpError
except ImportError as _exc:
    if (_exc.name or "").partition(".")[0] not in {"mcp", "anyio"}:
        raise
    _missing = MissingDependencyError("the MCP adapter", "mcp")
    if __name__ == "__main__":
        sys.exit(f"{PROG}: error: {_missing}")
    raise _missing from _exc

__all__ = ["MANUAL_PROMPT", "RECALL_PROMPT", "create_mcp_server", "main"]

MANUAL_PROMPT = "memory_manual"
"""The prompt holding the standing memory instruction (the Manual)."""
RECALL_PROMPT = "memory_recall"
"""The prompt holding the recall block for a conversation's first user message."""

_logger = logging.getLogger("recallstore.adapters.mcp")

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


def _tool_result(result: Mapping[str, Any]) -> types.CallToolResult:
    """A toolbox result as an MCP result: JSON text plus the same JSON as structured content."""
    structured = dict(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structuredContent=structured,
        isError=structured.get("ok") is not True,
    )


def _text_prompt(description: str, text: str) -> types.GetPromptResult:
    return types.GetPromptResult(
        description=description,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )


def _invalid_params(message: str) -> McpError:
    return McpError(types.ErrorData(code=types.INVALID_PARAMS, message=message))


def create_mcp_server(
    store: MemoryStore,
    scope: Mapping[str, str],
    *,
    tools: Iterable[MemoryToolSpec] = MEMORY_TOOLS,
    conversation_id: str | None = None,
    run_id: str | None = None,
    author: str | None = None,
    name: str = "recallstore",
) -> Server[Any, Any]:
    """An MCP server exposing ``store``'s memory for ``scope`` only.

    ``store`` must already be open (entered); the server does not close it. ``scope``
    must be non-empty (:class:`~recallstore.errors.ConfigurationError` otherwise).
    ``tools`` are the tool specs it lists and dispatches, as for
    :class:`~recallstore.toolbox.MemoryToolbox`; the Manual follows them. Tool
    results carry JSON text and the same object as ``structuredContent``; a result with
    ``"ok": false`` is sent with ``isError: true``. The server's ``instructions`` are the
    Manual, also offered as the ``memory_manual`` prompt.
    """
    toolbox = MemoryToolbox(
        store, scope, tools=tools, conversation_id=conversation_id, run_id=run_id, author=author
    )
    bound_scope = toolbox.scope
    wire_tools = [types.Tool.model_validate(mcp_tool(tool)) for tool in toolbox.tools]
    manual = toolbox.manual
    server: Server[Any, Any] = Server(name, version=__version__, instructions=manual)

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def _list_tools() -> list[types.Tool]:
        return [tool.model_copy(deep=True) for tool in wire_tools]

    # The toolbox validates arguments itself and answers with a structured error the
    # model can act on; the SDK's JSON-schema check would pre-empt it with plain text.
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def _call_tool(tool_name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        try:
            result = await toolbox.call(tool_name, arguments)
        except StoreUnavailableError as exc:
            _logger.error("memory tool %s failed: %s", tool_name, exc)
            result = _UNAVAILABLE
        return _tool_result(result)

    @server.list_prompts()  # type: ignore[no-untyped-call, untyped-decorator]
    async def _list_prompts() -> list[types.Prompt]:
        return [prompt.model_copy(deep=True) for prompt in _PROMPTS]

    @server.get_prompt()  # type: ignore[no-untyped-call, untyped-decorator]
    async def _get_prompt(
        prompt_name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult:
        arguments = arguments or {}
        if prompt_name == MANUAL_PROMPT:
            return _text_prompt("The standing memory instruction.", manual)
        if prompt_name == RECALL_PROMPT:
            user_text = arguments.get("user_text")
            if not isinstance(user_text, str) or not user_text.strip():
                raise _invalid_params(f"prompt {RECALL_PROMPT!r} needs a non-empty 'user_text'")
            recall = await assemble_recall(
                store, bound_scope, user_text, conversation_id=conversation_id, run_id=run_id
            )
            block = Awareness.from_recall(RenderContext(recall=recall))
            return _text_prompt(
                "Memories recalled for this message.",
                block if block is not None else "No memories were recalled for this message.",
            )
        raise _invalid_params(
            f"there is no prompt named {prompt_name!r}; the prompts are: "
            + ", ".join(prompt.name for prompt in _PROMPTS)
        )

    return server


class _ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class _UsageError(Exception):
    pass


def _parse_scope(pairs: Sequence[str] | None) -> dict[str, str]:
    if not pairs:
        raise _UsageError(
            "at least one --scope KEY=VALUE is required (e.g. --scope user=u_42); "
            "an unscoped memory server would expose every user's memories"
        )
    try:
        scope = parse_scope_pairs(pairs)
    except MemoryValidationError as exc:
        raise _UsageError(f"--scope {exc.message}") from None
    empty = [key for key, value in scope.items() if not value]
    if empty:
        raise _UsageError(f"--scope {empty[0]!r} needs a non-empty value")
    return scope


def _build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog=PROG,
        description="Serve one scope's recallstore memory to an MCP client over stdio.",
    )
    parser.add_argument(
        "--db", required=True, help="memory database: a SQLite file path or a store URL"
    )
    parser.add_argument(
        "--scope",
        action="append",
        metavar="KEY=VALUE",
        help="a scope pair every tool call is bound to; repeat for more (at least one)",
    )
    parser.add_argument("--conversation-id", help="stamped into the provenance of saves")
    parser.add_argument("--run-id", help="stamped into the provenance of saves")
    parser.add_argument("--author", help="stamped into the provenance of saves")
    parser.add_argument(
        "--name", default="recallstore", help="the server name (default: %(default)s)"
    )
    return parser


async def _serve(store: MemoryStore, scope: dict[str, str], args: argparse.Namespace) -> None:
    async with store:
        server = create_mcp_server(
            store,
            scope,
            conversation_id=args.conversation_id,
            run_id=args.run_id,
            author=args.author,
            name=args.name,
        )
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stdio MCP server; returns the exit status (2 usage mistake, 1 failure)."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        scope = _parse_scope(args.scope)
    except _UsageError as exc:
        parser.error(str(exc))
    # stdout carries the protocol: logs go to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    try:
        store = load_memory_store(args.db)
        path = describe_store(store).path
        if path is not None:
            if path.is_dir():
                raise _UsageError(f"--db {str(path)!r} is a directory, not a database file")
            if not path.parent.is_dir():
                raise _UsageError(f"--db {str(path)!r}: directory does not exist")
        # Build once before serving so a bad --conversation-id fails here, not mid-session.
        MemoryToolbox(
            store,
            scope,
            conversation_id=args.conversation_id,
            run_id=args.run_id,
            author=args.author,
        )
        anyio.run(_serve, store, scope, args)
    except _UsageError as exc:
        parser.error(str(exc))
    except RecallstoreError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
