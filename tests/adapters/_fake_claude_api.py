"""A scripted Anthropic Messages API on 127.0.0.1, for the real Claude Code CLI.

The Claude Agent SDK runs Claude Code (bundled in its wheel) as a subprocess; pointed
here by ``ANTHROPIC_BASE_URL``, its whole agent loop runs offline: each ``POST
/v1/messages`` is answered by the next step of a script, streamed as the API streams
(server-sent events), and every request body is kept for the test to read.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Step = Callable[[dict[str, Any]], dict[str, Any]]
"""A request body -> one content block (``{"type": "text", ...}`` or a ``tool_use``)."""


def say(text: str) -> Step:
    return lambda body: {"type": "text", "text": text}


def use(name: str, arguments: dict[str, Any] | Callable[[Any], dict[str, Any]]) -> Step:
    """A tool use; ``arguments`` may be a function of the last tool result (parsed JSON)."""

    def step(body: dict[str, Any]) -> dict[str, Any]:
        args = arguments(last_result(body)) if callable(arguments) else arguments
        return {
            "type": "tool_use",
            "id": f"toolu_{len(body['messages'])}",
            "name": name,
            "input": args,
        }

    return step


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the request's last message."""
    content = body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict[str, Any]) -> str:
    inner = block.get("content")
    if isinstance(inner, list):
        return "".join(part.get("text", "") for part in inner if isinstance(part, dict))
    return str(inner)


def last_result(body: dict[str, Any]) -> Any:
    [block] = tool_results(body)
    return result_json(result_text(block))


def result_json(text: str) -> Any:
    """The JSON a tool answered (Claude Code may append a ``<system-reminder>`` after it)."""
    return json.JSONDecoder().raw_decode(text)[0]


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "\n".join(block.get("text", "") for block in system)
    return str(system or "")


class FakeClaudeApi:
    """The script and what the CLI sent: ``requests`` (bodies of the conversation calls)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    def play(self, steps: list[Step]) -> None:
        self.steps = list(steps)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.steps:  # a side request (a title, a summary): a plain text answer
            return {"type": "text", "text": "ok"}
        self.requests.append(body)
        return self.steps.pop(0)(body)

    def env(self, home: Path) -> dict[str, str]:
        """The CLI's environment: this server, a home of its own, nothing else reached."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }


def _events(block: dict[str, Any], message_id: str) -> bytes:
    start: dict[str, Any]
    if block["type"] == "text":
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    stop = "tool_use" if block["type"] == "tool_use" else "end_turn"
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


@contextmanager
def fake_claude_api() -> Iterator[FakeClaudeApi]:
    """The scripted API, serving on a free port of 127.0.0.1 until the block ends."""
    api = FakeClaudeApi()
    counter = itertools.count(1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if "count_tokens" in self.path:
                self._send("application/json", json.dumps({"input_tokens": 1}).encode())
                return
            block = api.answer(body)
            # Claude Code joins the streamed responses that share a message id into one.
            message_id = f"msg_{next(counter)}"
            if body.get("stream"):
                self._send("text/event-stream", _events(block, message_id))
                return
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [block],
                "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
            self._send("application/json", json.dumps(message).encode())

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def _send(self, kind: str, data: bytes) -> None:
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
