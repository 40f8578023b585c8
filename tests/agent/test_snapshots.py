"""Every snapshot folder belongs to a test file that still exists.

syrupy fails the run on unused snapshots of the test files it collected; this closes
the remaining gap, a folder left behind by a deleted or renamed test file.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
SNAPSHOTS = TESTS.parents[1] / "snapshots" / TESTS.name


def test_no_snapshot_folder_outlives_its_test_file() -> None:
    folders = sorted(path.name for path in SNAPSHOTS.iterdir() if path.is_dir())
    assert folders  # the agent tests do write snapshots
    orphans = [name for name in folders if not (TESTS / f"{name}.py").is_file()]
    assert orphans == []
