"""A host web app that mounts the memory event stream next to its own routes.

The host is an ordinary Starlette app with its own routes (``GET /health`` and a
``POST /chat`` that recalls memory and saves the message through the toolbox). Its
store is wrapped in an ``ObservedMemoryStore`` that publishes every memory operation to
an ``EventBus``, and ``create_sse_app(bus, token=...)`` is mounted at
``/memory/events``. The script serves it on 127.0.0.1 for a few seconds, connects a
streaming client with the token, posts two chat messages, prints the events the client
receives, and stops. Offline; needs the ``server`` extra (it brings httpx too).

Run: ``python examples/host_with_sse.py``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import tempfile
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.events import EventBus, ObservedMemoryStore
from recallstore.events.sse import create_sse_app
from recallstore.recall import assemble_recall
from recallstore.toolbox import MemoryToolbox

SCOPE = {"tenant": "acme", "user": "u_7"}
TOKEN = secrets.token_urlsafe(16)
CHATS = [
    ("conversation-1", "My favourite editor is Helix."),
    ("conversation-2", "Which editor do I like?"),
]
DEADLINE_SECONDS = 15.0


def build_host_app(store: ObservedMemoryStore, bus: EventBus) -> Starlette:
    """The host's own routes, plus the memory event stream mounted at /memory/events."""

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        conversation_id, text = body["conversation_id"], body["text"]
        recall = await assemble_recall(store, SCOPE, text, conversation_id=conversation_id)
        toolbox = MemoryToolbox(store, SCOPE, conversation_id=conversation_id, author="host")
        saved = await toolbox.call("memory_save", {"content": text, "kind": "fact"})
        recalled = [record.content for record in recall.entries]
        return JSONResponse({"recalled": recalled, "saved": saved["memory"]["id"]})

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/chat", chat, methods=["POST"]),
            Mount("/memory/events", app=create_sse_app(bus, token=TOKEN)),
        ]
    )


async def _read_events(response: httpx.Response, writes_wanted: int) -> list[dict[str, Any]]:
    """Parse SSE messages until ``writes_wanted`` write events arrived."""
    events: list[dict[str, Any]] = []
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line and not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
            continue
        if "data" in fields and "event" in fields:
            event = json.loads(fields["data"])
            events.append(event)
            print(f"  event #{fields.get('id', '-')}: {fields['event']:<20} {_describe(event)}")
            if sum(e["type"] == "agent.memory.write" for e in events) >= writes_wanted:
                return events
        fields = {}
    return events


def _describe(event: dict[str, Any]) -> str:
    data = event["data"]
    where = f"conversation={event['conversation_id']}"
    if event["type"] == "agent.memory.write":
        return f"{where} {data['operation']} ids={list(data['record_ids'])}"
    if event["type"] == "agent.memory.search":
        return f"{where} {data['mode']} results={data['result_count']}"
    return f"{where} recalled={len(data['record_ids'])} chars={data['chars']}"


async def client(base_url: str) -> list[dict[str, Any]]:
    """Subscribe to the stream, post the chats, return the events received."""
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as http:
        print(f"GET /health -> {(await http.get('/health')).json()}")
        denied = await http.get("/memory/events/")
        print(f"GET /memory/events/ without the token -> {denied.status_code}")
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with http.stream("GET", "/memory/events/", headers=headers) as stream:
            print(f"GET /memory/events/ with the token -> {stream.status_code}, streaming:")
            reader = asyncio.create_task(_read_events(stream, writes_wanted=len(CHATS)))
            for conversation_id, text in CHATS:
                body = {"conversation_id": conversation_id, "text": text}
                reply = (await http.post("/chat", json=body)).json()
                print(f"POST /chat {text!r} -> recalled {reply['recalled']}")
            return await reader


async def main(db_path: Path) -> None:
    bus = EventBus()
    async with SqliteMemoryStore(db_path) as raw_store:
        store = ObservedMemoryStore(raw_store, bus)
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        config = uvicorn.Config(
            build_host_app(store, bus), log_level="warning", timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        try:
            async with asyncio.timeout(DEADLINE_SECONDS):
                # uvicorn exposes readiness only as a flag.
                while not server.started:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
                print(f"host listening on http://127.0.0.1:{port} (events at /memory/events)")
                events = await client(f"http://127.0.0.1:{port}")
        finally:
            server.should_exit = True
            await serving
            listener.close()
    types = sorted({event["type"] for event in events})
    print(f"received {len(events)} events of types {types}; no memory content in them:")
    print(f"  'Helix' in any event: {any('Helix' in json.dumps(e) for e in events)}")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(Path(folder) / "memory.db"))
