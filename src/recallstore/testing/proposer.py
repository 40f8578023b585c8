"""``ScriptedProposer``: a consolidation proposer that follows a script, for tests.

The stand-in for a host's model proposer: it returns the operations it was given (or
what a function of the records returns), unchecked — consolidation validates them as
it would a model's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from recallstore.consolidation import Operation
from recallstore.records import MemoryRecord

__all__ = ["ScriptedProposer"]

Script = Sequence[Operation] | Callable[[Sequence[MemoryRecord]], Sequence[Operation]]


class ScriptedProposer:
    """A :class:`~recallstore.consolidation.Proposer` that answers from ``script``.

    ``script`` is the operations to propose, or a function from the records shown to
    them. ``seen`` keeps the records of every call.
    """

    def __init__(self, script: Script, *, name: str = "scripted") -> None:
        """Propose ``script`` (operations, or a function of the records) as ``name``."""
        self._script = script
        self._name = name
        self.seen: list[list[MemoryRecord]] = []

    @property
    def name(self) -> str:
        """The name shown in plans and rejections."""
        return self._name

    async def propose(self, records: Sequence[MemoryRecord]) -> Sequence[Operation]:
        """The scripted operations for ``records``."""
        self.seen.append(list(records))
        return self._script(records) if callable(self._script) else list(self._script)
