"""A dependency-free progress bar for long exports and imports."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """A dependency-free progress bar on stderr; silent unless enabled.

    With a known ``total`` it draws ``label [####......]  40%  400/1000``; without one
    it counts records. Redraws at most ten times a second.
    """

    _WIDTH = 30

    def __init__(
        self, label: str, *, total: int | None, enabled: bool, stream: TextIO | None = None
    ) -> None:
        self._label = label
        self._total = total
        self._enabled = enabled
        self._stream = stream or sys.stderr
        self._last_draw = 0.0
        self._done = 0

    @staticmethod
    def wanted(forced: bool) -> bool:
        """Draw when ``--progress`` was given or stderr is a terminal."""
        return forced or sys.stderr.isatty()

    def update(self, done: int, total: int | None = None) -> None:
        """Record progress (and the total, once known); redraw when enough time has passed."""
        self._done = done
        if total is not None:
            self._total = total
        now = time.monotonic()
        if self._enabled and now - self._last_draw >= 0.1:
            self._last_draw = now
            self._draw()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self._enabled:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self) -> None:
        if self._total:
            filled = self._WIDTH * self._done // self._total
            bar = "#" * filled + "." * (self._WIDTH - filled)
            percent = 100 * self._done // self._total
            text = f"{self._label} [{bar}] {percent:3d}%  {self._done}/{self._total}"
        else:
            text = f"{self._label} {self._done} record{'' if self._done == 1 else 's'}"
        self._stream.write("\r" + text)
        self._stream.flush()
