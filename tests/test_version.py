"""The version is written once, in pyproject.toml, and read from package metadata."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import recallstore
from recallstore._version import __version__

ROOT = Path(__file__).resolve().parents[1]


def test_every_surface_reports_the_installed_distribution_version() -> None:
    installed = importlib.metadata.version("recallstore")
    assert recallstore.__version__ == __version__ == installed


def test_no_source_file_spells_the_version_again() -> None:
    written = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    version = written["project"]["version"]
    spelled = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "src").rglob("*.py")
        if f'"{version}"' in path.read_text(encoding="utf-8")
    ]
    assert spelled == []
