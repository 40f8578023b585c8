"""The Claude Agent SDK: the memory tools as an in-process SDK MCP server, recall, capture.

:meth:`ClaudeAgentMemory.options` turns a conversation's ``ClaudeAgentOptions`` into
ones with memory (``query(prompt=text, options=await memory.options(session, text))``):

* **tools** — an in-process SDK MCP server (``create_sdk_mcp_server``) named ``memory``
  holding the capability's memory tools, bound to the :class:`MemorySession`'s scope, and
  allowed without a permission prompt (``mcp__memory__memory_save``, ...). A model's
  mistake (bad arguments, an unknown id, a ``scope`` argument) is a result with
  ``is_error`` the model can act on; the loop goes on.
* **the prompt** — the Manual and the recall block, computed once per conversation from
  its first user message, are added to the system prompt (after a ``str`` prompt, or as
  the ``append`` of the ``claude_code`` preset). Options built without the first message
  (``prompt=None``, e.g. for ``ClaudeSDKClient``) get them through a ``UserPromptSubmit``
  hook instead, as ``additionalContext`` on the conversation's first prompt.
* **capture** — the ``UserPromptSubmit`` hook keeps each user prompt, the ``Stop`` hook
  each final answer (``last_assistant_message``), and captures the conversation so far
  through :func:`recallstore.capture.capture`, each message once (its position in the
  conversation names it). The transcript file Claude Code keeps is not read: it is not
  complete yet when the hook runs.

Needs the ``claude-agent-sdk`` extra.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from recallstore.adapters._framework import _framework_imports
from recallstore.adapters._session import (
    MemorySession,
    _as_session,
    _Conversations,
    _is_error,
    _result_text,
)
from recallstore.capability import MemoryCapability
from recallstore.capture import CaptureResult

with _framework_imports("claude_agent_sdk", "the Claude Agent SDK adapter", "claude-agent-sdk"):
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        HookContext,
        HookInput,
        HookJSONOutput,
        HookMatcher,
        McpSdkServerConfig,
        SdkMcpTool,
        create_sdk_mcp_server,
    )
    from claude_agent_sdk.types import HookEvent

__all__ = ["ClaudeAgentMemory", "MemorySession"]

_TAG = "claude-agent-sdk"
_MAX_CONVERSATIONS = 1_024


class ClaudeAgentMemory:
    """Memory for Claude Agent SDK conversations: tools, recall and capture.

    ``server_name`` is the SDK MCP server's name (the tools are
    ``mcp__<server_name>__<tool>``).
    """

    def __init__(self, capability: MemoryCapability, *, server_name: str = "memory") -> None:
        self._conversations = _Conversations(capability)
        self.server_name = server_name
        self.tool_names: list[str] = [
            f"mcp__{server_name}__{spec.name}" for spec in capability.specs
        ]
        """The memory tools' names as Claude Code sees them (for ``allowed_tools``)."""
        self._transcripts: dict[str, list[tuple[str, str]]] = {}

    def server(self, session: MemorySession) -> McpSdkServerConfig:
        """The in-process MCP server of the memory tools, bound to ``session``."""
        session = _as_session(session, "ClaudeAgentMemory")
        self._conversations.toolbox(session)  # a session missing a scope field fails here
        return create_sdk_mcp_server(
            self.server_name,
            tools=[
                SdkMcpTool(
                    spec.name,
                    spec.description,
                    spec.input_schema(),
                    self._handler(session, spec.name),
                )
                for spec in self._conversations.capability.specs
            ],
        )

    def _handler(self, session: MemorySession, name: str) -> Any:
        async def handle(arguments: dict[str, Any]) -> dict[str, Any]:
            result = await self._conversations.call(session, name, arguments)
            answer: dict[str, Any] = {"content": [{"type": "text", "text": _result_text(result)}]}
            if _is_error(result):
                answer["is_error"] = True
            return answer

        return handle

    async def instructions(self, session: MemorySession, first_user_text: str) -> str:
        """The Manual and recall block for the session's conversation (computed once)."""
        return await self._conversations.instructions(session, first_user_text)

    async def options(
        self,
        session: MemorySession,
        prompt: str | None,
        options: ClaudeAgentOptions | None = None,
    ) -> ClaudeAgentOptions:
        """``options`` (default: new ones) with the memory server, its tools allowed, the
        Manual and recall block for ``prompt`` (the conversation's first user message) in
        the system prompt, and the hooks of :meth:`hooks`. With ``prompt=None`` the
        ``UserPromptSubmit`` hook adds the Manual and recall block to the first prompt
        instead."""
        base = options if options is not None else ClaudeAgentOptions()
        if not isinstance(base.mcp_servers, Mapping):
            raise TypeError(
                "ClaudeAgentMemory.options needs mcp_servers as a dict (not a path to a config)"
            )
        system_prompt = base.system_prompt
        if prompt is not None:
            system_prompt = _with(system_prompt, await self.instructions(session, prompt))
        hooks = {event: list(matchers) for event, matchers in (base.hooks or {}).items()}
        for event, matchers in self.hooks(session, recall=prompt is None).items():
            hooks.setdefault(event, []).extend(matchers)
        return dataclasses.replace(
            base,
            mcp_servers={**base.mcp_servers, self.server_name: self.server(session)},
            allowed_tools=[*base.allowed_tools, *self.tool_names],
            system_prompt=system_prompt,
            hooks=hooks,
        )

    def hooks(
        self, session: MemorySession, *, recall: bool = True
    ) -> dict[HookEvent, list[HookMatcher]]:
        """The ``UserPromptSubmit`` and ``Stop`` hooks of ``session``'s conversation: each
        user prompt and each final answer is kept, and the conversation so far is
        captured when Claude stops (each message once); with ``recall``, the Manual and
        recall block go with the conversation's first prompt as ``additionalContext``."""
        transcript = self._transcript(session)

        async def on_prompt(
            hook_input: HookInput, tool_use_id: str | None, context: HookContext
        ) -> HookJSONOutput:
            prompt = str(hook_input.get("prompt", ""))
            first = not transcript
            transcript.append(("user", prompt))
            if not (recall and first):
                return {}
            text = await self.instructions(session, prompt)
            return {
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": text,
                }
            }

        async def on_stop(
            hook_input: HookInput, tool_use_id: str | None, context: HookContext
        ) -> HookJSONOutput:
            answer = hook_input.get("last_assistant_message")
            if isinstance(answer, str) and answer.strip():
                transcript.append(("assistant", answer))
            await self.capture(session, transcript)
            return {}

        return {
            "UserPromptSubmit": [HookMatcher(hooks=[on_prompt])],
            "Stop": [HookMatcher(hooks=[on_stop])],
        }

    def _transcript(self, session: MemorySession) -> list[tuple[str, str]]:
        """The conversation as the hooks saw it, kept per conversation id (a conversation
        resumed in this process goes on numbering its messages)."""
        key = session.conversation_id
        transcript = self._transcripts.pop(key, [])
        self._transcripts[key] = transcript
        while len(self._transcripts) > _MAX_CONVERSATIONS:
            del self._transcripts[next(iter(self._transcripts))]
        return transcript

    def transcript(self, session: MemorySession) -> list[tuple[str, str]]:
        """The user prompts and final answers the hooks kept for ``session``'s conversation."""
        return list(self._transcripts.get(session.conversation_id, ()))

    async def capture(
        self, session: MemorySession, transcript: Iterable[Any], **options: Any
    ) -> CaptureResult:
        """Capture ``transcript`` (:meth:`transcript`, which the ``Stop`` hook captures
        itself) in the session's scope, each message once (``options`` as for
        :func:`recallstore.capture.capture`)."""
        tags = (_TAG, *options.pop("tags", ()))
        return await self._conversations.capture(
            session, list(transcript), {**options, "tags": tags}
        )


def _with(system_prompt: Any, text: str) -> Any:
    if system_prompt is None or system_prompt == "":
        return text
    if isinstance(system_prompt, str):
        return f"{system_prompt}\n\n{text}"
    kind = system_prompt.get("type")
    if kind == "preset":
        append = system_prompt.get("append")
        return {**system_prompt, "append": f"{append}\n\n{text}" if append else text}
    if kind == "custom":
        return {**system_prompt, "prompt": f"{system_prompt['prompt']}\n\n{text}"}
    raise TypeError(
        "ClaudeAgentMemory.options cannot add the memory to a system prompt read from a file; "
        "pass prompt=None to give it through the UserPromptSubmit hook"
    )
