"""Every snapshot folder belongs to a test file that still exists.

syrupy fails the run on unused snapshots of the test files it collected; this closes
the remaining gap, a folder left behind by a deleted, renamed or moved test file.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
SNAPSHOTS = TESTS.parent / "snapshots"


def test_no_snapshot_folder_outlives_its_test_file() -> None:
    # conftest.py lays snapshots out as snapshots/<test folder>/<test file stem>/.
    folders = sorted(path.relative_to(SNAPSHOTS) for path in SNAPSHOTS.glob("*/*") if path.is_dir())
    assert folders  # the prompt tests do write snapshots
    orphans = [str(f) for f in folders if not (TESTS / f.parent / f"{f.name}.py").is_file()]
    assert orphans == []
