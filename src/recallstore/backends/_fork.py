"""What a store opened before ``fork()`` says in the child, where it cannot be used.

A forked process inherits a store's connections (a SQLite connection whose thread did
not follow, a pool's sockets that the parent goes on using) but may use none of them:
every call there, and ``open()``, raises :class:`~recallstore.errors.ConfigurationError`
with this reason, and ``aclose()`` does nothing, since the connections are the parent's.
"""

from __future__ import annotations

import os

__all__ = ["forked_refusal"]


def forked_refusal(opened_in: int, connections: str) -> str:
    """The reason a store opened in process ``opened_in`` refuses this process, a fork
    of it; ``connections`` says what the copy holds and why it cannot be used."""
    return (
        f"it was opened in process {opened_in}, before fork(); process {os.getpid()} has "
        f"a copy of {connections}: open a new store after forking, in each process that "
        "uses it (e.g. a post-fork hook)"
    )
