"""What recallstore's command-line programs share, below every program that runs one.

``recallstore`` (``recallstore.cli``) and ``python -m recallstore.adapters.mcp`` (the
MCP server's own command) both run on it: one-line errors and exit codes
(``errors``), the parser and the run that turns every mistake into them (``main``),
``--db`` and ``--scope`` (``database``), and a loopback HTTP server behind a token
(``asgi``, ``http_guard``). It lies below the applications so that an application's
command needs nothing from the CLI.
"""
