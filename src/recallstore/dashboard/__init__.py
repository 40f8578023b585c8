"""The memory lens: a small web page over a memory store and its event bus.

A live feed of memory events, a records browser, record pages with their supersede
chains, and a recall preview. Needs the ``server`` extra
(``pip install 'recallstore[server]'``); this package imports without it and
:func:`create_dashboard_app` raises :class:`~recallstore.errors.MissingDependencyError`.
"""

from recallstore.dashboard.app import DEFAULT_REPLAY, create_dashboard_app

__all__ = ["DEFAULT_REPLAY", "create_dashboard_app"]
