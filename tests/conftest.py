"""Snapshot configuration: syrupy writes one readable text file per snapshot.

Snapshots live in the repository's top-level ``snapshots/`` folder, under the test's
folder and file name (``snapshots/agent/test_prompt/test_manual.md``), so a prompt
change shows up in review as a plain text diff. Snapshots no test uses fail the run
(syrupy's default). Update them with ``.venv/bin/pytest tests/agent --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

_TESTS = Path(__file__).resolve().parent
SNAPSHOTS = _TESTS.parent / "snapshots"


class TextSnapshotExtension(SingleFileSnapshotExtension):
    """One UTF-8 Markdown file per snapshot, under the top-level snapshots/ folder."""

    _write_mode = WriteMode.TEXT
    file_extension = "md"

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        """``snapshots/<test folder relative to tests/>/<test file stem>``."""
        test_file = Path(test_location.filepath).resolve()
        folder = test_file.parent.relative_to(_TESTS)
        return str(SNAPSHOTS / folder / test_location.basename)


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's ``snapshot``, writing readable text files into snapshots/."""
    return snapshot.use_extension(TextSnapshotExtension)
