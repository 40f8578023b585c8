"""The store's lock, which follows the store from one event loop to the next.

An ``asyncio.Lock`` belongs to the first event loop that waits on it: a store used by
concurrent calls under one ``asyncio.run()``, then under another (a script that runs
each step so, a notebook cell run again, a test per loop), failed with asyncio's
"bound to a different event loop". :class:`LoopLock` keeps one ``asyncio.Lock`` for the
loop that uses the store now and takes a new one when another loop comes while it is
free. Two loops using the store *at the same time* is a mistake that nothing makes safe
(the calls in flight belong to one loop): the second is refused while the first holds
the lock.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from recallstore.errors import ConfigurationError

__all__ = ["LoopLock"]


class LoopLock:
    """``asyncio.Lock``'s ``acquire``, ``release``, ``locked`` and ``async with``, for
    whichever event loop uses the store; ``target`` names the store in the refusal."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _for_this_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            last = self._loop
            if last is not None and self._lock.locked() and not last.is_closed():
                raise ConfigurationError(
                    f"memory store {self._target!r} is in use by another event loop: a "
                    "store serves one loop at a time (one per thread, or recallstore.sync)"
                )
            # A closed loop's holder will never release it: its calls are gone.
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    async def acquire(self) -> bool:
        """Wait for the lock and take it."""
        return await self._for_this_loop().acquire()

    def release(self) -> None:
        """Give the lock back."""
        self._lock.release()

    def locked(self) -> bool:
        """True while a call holds the lock."""
        return self._lock.locked()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
