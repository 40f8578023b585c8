"""``recallstore mcp``: the MCP server's own command (``adapters._mcp_command``), registered.

The options and the run live beside the server, so that ``python -m
recallstore.adapters.mcp`` needs nothing from the CLI; the command line only names it.
"""

from __future__ import annotations

import argparse
from typing import Any

from recallstore.adapters._mcp_command import (
    MCP_DESCRIPTION,
    MCP_HELP,
    ServerFactory,
    add_mcp_arguments,
)


def add_mcp_command(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Register ``recallstore mcp`` on the ``recallstore`` subcommands."""
    mcp = commands.add_parser("mcp", parents=parents, help=MCP_HELP, description=MCP_DESCRIPTION)
    add_mcp_arguments(mcp, _create_mcp_server)


def _create_mcp_server() -> ServerFactory:
    # Imported only when the command runs: it needs the `mcp` extra.
    from recallstore.adapters.mcp import create_mcp_server

    return create_mcp_server
