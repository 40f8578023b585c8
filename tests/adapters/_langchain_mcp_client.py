"""Drives ``recallstore mcp`` through langchain-mcp-adapters; prints what it saw as JSON.

Run by tests/adapters/test_mcp_langchain.py under the interpreter of an environment that
has langchain-mcp-adapters (it pins mcp<2, so it cannot share recallstore's dev
environment). Arguments: the server's argv.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from langchain_mcp_adapters.client import MultiServerMCPClient


async def main(command: str, args: list[str]) -> dict[str, Any]:
    client = MultiServerMCPClient(
        {"memory": {"command": command, "args": args, "transport": "stdio"}}
    )
    tools = {tool.name: tool for tool in await client.get_tools()}
    schemas = {
        name: tool.args_schema if isinstance(tool.args_schema, dict) else None
        for name, tool in tools.items()
    }
    saved = await tools["memory_save"].ainvoke({"content": "Prefers aisle seats."})
    listed = await tools["memory_list"].ainvoke({})
    missing = [
        await tools["memory_invalidate"].ainvoke({"id": record_id}) for record_id in sys.argv[1:2]
    ]
    # As an agent loop runs it: a tool call in, a ToolMessage out.
    as_tool_call = {
        "type": "tool_call",
        "id": "call-1",
        "name": "memory_invalidate",
        "args": {"id": sys.argv[1]},
    }
    message = await tools["memory_invalidate"].ainvoke(as_tool_call)
    prompt = await client.get_prompt("memory", "memory_recall", arguments={"user_text": "seats"})
    resources = await client.get_resources("memory")
    return {
        "tools": list(tools),
        "schemas": schemas,
        "metadata": {name: tool.metadata for name, tool in tools.items()},
        "saved": str(saved),
        "listed": str(listed),
        "foreign_invalidate": [str(result) for result in missing],
        "foreign_invalidate_message": {"status": message.status, "content": str(message.content)},
        "prompt": [str(message.content) for message in prompt],
        "resources": {str(blob.metadata["uri"]): blob.as_string() for blob in resources},
    }


if __name__ == "__main__":
    foreign_id, command, *server_args = sys.argv[1:]
    sys.argv[1:2] = [foreign_id]
    print(json.dumps(asyncio.run(main(command, server_args)), default=str))
