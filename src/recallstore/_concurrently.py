"""Two awaitables at once, failing as one call would."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["both"]

_First = TypeVar("_First")
_Second = TypeVar("_Second")


async def both(first: Awaitable[_First], second: Awaitable[_Second]) -> tuple[_First, _Second]:
    """The results of two awaitables run concurrently, ``first`` started first. Both
    are waited for; when either failed, the first one's failure is raised (its own
    exception, not a group), and cancelling the caller cancels both."""
    one, two = await asyncio.gather(first, second, return_exceptions=True)
    if isinstance(one, BaseException):
        raise one
    if isinstance(two, BaseException):
        raise two
    return one, two
