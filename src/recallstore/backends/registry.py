"""The backend registry: which backend opens a store target of which URL scheme.

:func:`~recallstore.load.load_memory_store` looks a target's scheme up here, and the
command line, the dashboard and the MCP server ask :func:`describe_store` what a
store is, so none of them knows a backend by name.

A backend is registered under each URL scheme it opens with an *opener*: a callable
taking the whole target string and returning an unopened store (for a
:class:`~recallstore.backends.base.BaseMemoryStore` subclass, its ``from_url``), or
a ``"module:attribute"`` reference to one, imported on first use. The built-in
backends are registered by reference, so ``import recallstore`` imports none of them.
Third-party backends register in one of two ways:

* :func:`register_backend` at run time, or
* an entry point in the ``recallstore.backends`` group, named after the scheme::

      [project.entry-points."recallstore.backends"]
      dictstore = "my_package.store:DictMemoryStore.from_url"

Entry points are read when a scheme is not registered yet, so an installed plugin
works in every process (the command line included) without an import.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Final

from recallstore.backends.base import BaseMemoryStore, StoreDescription
from recallstore.errors import ConfigurationError, MissingDependencyError
from recallstore.store import MemoryStore

__all__ = [
    "DEFAULT_SCHEME",
    "ENTRY_POINT_GROUP",
    "StoreOpener",
    "bundled_backend_classes",
    "describe_store",
    "open_target",
    "register_backend",
    "registered_schemes",
    "scheme_of",
    "unregister_backend",
]

ENTRY_POINT_GROUP: Final = "recallstore.backends"
"""The entry-point group third-party backends register in (entry name = URL scheme)."""

DEFAULT_SCHEME: Final = "sqlite"
"""The scheme whose backend opens a target without one (a filesystem path)."""

StoreOpener = Callable[[str], MemoryStore]
"""Turns a store target (``"scheme:…"``, or a path for the default scheme) into an
unopened store; raises :class:`~recallstore.errors.ConfigurationError` for a bad one."""

# "name:" with a name of two or more characters is a scheme; "C:" stays a drive letter.
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]+):")
_SCHEME_NAME = re.compile(r"^[a-z][a-z0-9+.\-]+$")

_BUNDLED: Final[dict[str, str]] = {
    "memory": "recallstore.backends.memory:InMemoryMemoryStore.from_url",
    "sqlite": "recallstore.backends.sqlite:SqliteMemoryStore.from_url",
    "postgres": "recallstore.backends.postgres:PostgresMemoryStore.from_url",
    "postgresql": "recallstore.backends.postgres:PostgresMemoryStore.from_url",
}
"""The backends recallstore ships, by scheme: ``"module:Class.from_url"``, so nothing is
imported until a target uses one. A bundled backend is added here, and only here."""

_lock = threading.Lock()
_openers: dict[str, StoreOpener | str] = dict(_BUNDLED)


def bundled_backend_classes() -> dict[str, str]:
    """Each bundled backend's class name and the module it lives in (``recallstore``
    offers them at its top level, imported on first use)."""
    classes = {}
    for reference in _BUNDLED.values():
        module, _, attribute = reference.partition(":")
        classes[attribute.split(".")[0]] = module
    return classes


def scheme_of(target: str) -> str | None:
    """The lower-cased URL scheme of ``target``, or None for a plain path (``C:\\x`` too)."""
    match = _SCHEME.match(target)
    return None if match is None else match["scheme"].lower()


def register_backend(scheme: str, opener: StoreOpener | str, *, replace: bool = False) -> None:
    """Open targets whose URL scheme is ``scheme`` with ``opener``.

    ``opener`` is a callable (``MyStore.from_url``) or a ``"module:attribute"``
    reference to one, imported when a target of the scheme is first opened. A scheme
    that is already registered raises :class:`ConfigurationError` unless ``replace``.
    """
    name = _check_scheme(scheme)
    if not (callable(opener) or (isinstance(opener, str) and ":" in opener)):
        raise ConfigurationError(
            f"a backend opener is a callable or a 'module:attribute' string, got {opener!r}"
        )
    with _lock:
        if name in _openers and not replace:
            raise ConfigurationError(
                f"URL scheme {name!r} is already registered (to {_openers[name]!r}); "
                "pass replace=True to take it over"
            )
        _openers[name] = opener


def unregister_backend(scheme: str) -> None:
    """Forget the backend registered for ``scheme`` (a no-op when there is none)."""
    with _lock:
        _openers.pop(_check_scheme(scheme), None)


def registered_schemes() -> list[str]:
    """Every scheme a target may use: registered ones and installed entry points, sorted."""
    with _lock:
        known = set(_openers)
    return sorted(known | {entry.name.lower() for entry in _entry_points()})


def open_target(scheme: str, target: str) -> MemoryStore:
    """The unopened store for ``target`` from the backend of ``scheme``.

    Raises :class:`ConfigurationError` for a scheme no backend opens, a backend that
    cannot be imported, or an opener that does not return a store.
    """
    opener = _opener(scheme, target)
    store = opener(target)
    if not isinstance(store, MemoryStore):
        raise ConfigurationError(
            f"the backend for {scheme!r} returned {type(store).__name__}, not a MemoryStore"
        )
    return store


def describe_store(store: MemoryStore) -> StoreDescription:
    """How ``store`` presents itself: a label, where it is and its file, if it has one.

    A wrapper that names the store it wraps as ``inner`` (like
    :class:`~recallstore.events.ObservedMemoryStore`) is described by that store; a
    store not built on :class:`BaseMemoryStore` by its class name alone.
    """
    inner: object = store
    while (wrapped := getattr(inner, "inner", None)) is not None and wrapped is not inner:
        inner = wrapped
    if isinstance(inner, BaseMemoryStore):
        return inner.describe()
    return StoreDescription(label=type(inner).__name__, target=type(inner).__name__)


def _check_scheme(scheme: str) -> str:
    name = scheme.lower() if isinstance(scheme, str) else scheme
    if not isinstance(name, str) or not _SCHEME_NAME.match(name):
        raise ConfigurationError(
            f"a URL scheme is a letter then letters, digits, '+', '-' or '.' "
            f"(two characters at least), got {scheme!r}"
        )
    return name


def _opener(scheme: str, target: str) -> StoreOpener:
    with _lock:
        registered = _openers.get(scheme)
    if registered is None:
        found = [entry for entry in _entry_points() if entry.name.lower() == scheme]
        if not found:
            raise ConfigurationError(
                f"memory store target {target!r} has an unknown scheme {scheme!r}; use a "
                "path, 'sqlite:///path.db', 'postgresql://…', 'memory:' or a registered "
                f"scheme (known: {', '.join(registered_schemes())})"
            )
        registered = found[0].value
    if callable(registered):
        return registered
    try:
        loaded = EntryPoint(name=scheme, value=registered, group=ENTRY_POINT_GROUP).load()
    except MissingDependencyError:
        raise
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"the backend for URL scheme {scheme!r} ({registered}) cannot be loaded: {exc}"
        ) from exc
    if not callable(loaded):
        raise ConfigurationError(
            f"the backend for URL scheme {scheme!r} ({registered}) is not callable: {loaded!r}"
        )
    opener: StoreOpener = loaded
    return opener


def _entry_points() -> tuple[EntryPoint, ...]:
    return tuple(entry_points(group=ENTRY_POINT_GROUP))
