"""A LangChain chat model that answers from a script over the messages so far: it can
read a tool's result (a memory's id) and call the next tool with it, offline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

Script = Callable[[Sequence[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """Each call answers ``script(messages)``; ``bind_tools`` keeps the script as it is."""

    script: Script

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def tool_call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    """An assistant message calling one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])
