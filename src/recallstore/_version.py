"""The installed distribution's version, read once from its package metadata.

pyproject.toml is where the version is written; everything that reports it (the
top-level ``__version__``, the OpenTelemetry instrumentation scope, the MCP server)
imports it from here, so no module needs the whole package for one string.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "__version__"]

DISTRIBUTION = "recallstore"
"""The distribution name the version is looked up under."""

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # a source tree on sys.path without installing it
    __version__ = "0+unknown"
