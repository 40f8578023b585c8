"""Install the test's third-party backend the way pip would: a dist-info with an entry point.

``plugin/recallstore_jsonl.py`` is an ordinary module outside the package; the
fixture writes ``recallstore_jsonl-0.1.dist-info/entry_points.txt`` into a
temporary site folder, so ``importlib.metadata`` finds the ``jsonl`` scheme in the
``recallstore.backends`` group exactly as it would for an installed distribution.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
ENTRY_POINTS = "[recallstore.backends]\njsonl = recallstore_jsonl:JsonlMemoryStore.from_url\n"


def install_plugin(site: Path) -> Path:
    """Write the plugin's distribution metadata into ``site``; return ``site``."""
    dist_info = site / "recallstore_jsonl-0.1.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: recallstore-jsonl\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    return site


@pytest.fixture
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site folder holding the plugin's metadata (not yet on sys.path)."""
    return install_plugin(tmp_path_factory.mktemp("site"))


@pytest.fixture
def jsonl_plugin(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plugin installed in this process: its module and its entry point on sys.path."""
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.syspath_prepend(str(plugin_site))
    return plugin_site


@pytest.fixture
def plugin_env(plugin_site: Path) -> dict[str, str]:
    """The environment of a subprocess that has the plugin installed."""
    paths = [str(PLUGIN_DIR), str(plugin_site), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
