"""Adapters that put recallstore memory in front of agent frameworks and protocols.

* :mod:`recallstore.adapters.mcp` — an MCP server exposing the four memory tools and
  the Manual, bound to one scope (needs the ``mcp`` extra).

Nothing is imported here: each adapter imports its optional dependency only when used.
"""
