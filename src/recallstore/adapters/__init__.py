"""Adapters that put recallstore memory in front of agent frameworks and protocols.

* :mod:`recallstore.adapters.mcp` — an MCP server exposing the four memory tools and
  the Manual, bound to one scope (needs the ``mcp`` extra).
* :mod:`recallstore.adapters.pydantic_ai`, :mod:`recallstore.adapters.openai_agents`,
  :mod:`recallstore.adapters.adk`, :mod:`recallstore.adapters.langchain`,
  :mod:`recallstore.adapters.anthropic` — the memory tools and the recall inside those
  frameworks, the scope taken from the host's run context (one extra each; see
  docs/integrations.md); :mod:`recallstore.adapters.anthropic_memory` — a backend for
  Claude's own memory tool, its files kept as records;
  :mod:`recallstore.adapters.langgraph` — LangGraph's ``BaseStore`` on any store
  (docs/langgraph.md).
* :mod:`recallstore.adapters.strands`, :mod:`recallstore.adapters.agno`,
  :mod:`recallstore.adapters.claude_agent_sdk` — the frameworks' own memory slots
  (Strands' ``MemoryStore``, Agno's ``MemoryManager``, the Claude Agent SDK's SDK MCP
  server and hooks) filled by recallstore (docs/native-memory.md).

Nothing is imported here: each adapter imports its optional dependency only when used.
"""
