"""The one rule for importing an adapter's optional framework."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from recallstore.errors import MissingDependencyError


@contextmanager
def _framework_imports(package: str, feature: str, extra: str) -> Iterator[None]:
    """Turn the framework ``package`` missing, inside the block, into the install command.

    Only a missing ``package`` (or one of its modules) is translated: an ImportError
    raised from inside an installed framework is a real bug and propagates as it is.
    """
    try:
        yield
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] != package:
            raise
        raise MissingDependencyError(feature, extra) from exc
