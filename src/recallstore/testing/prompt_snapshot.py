"""``PromptSnapshotExtension``: syrupy writes each prompt snapshot as one readable text file.

A snapshot of ``test_recall_block`` in ``tests/agent/test_prompt.py`` lives at
``snapshots/agent/test_prompt/test_recall_block.md``: the snapshot folder mirrors the test
folder (relative to the ``testpaths`` entry that holds it, else to the rootdir), one
folder per test file, one file per assertion. Strings are stored as they are, so a
prompt change shows up in review as a plain text diff; JSON data (a tool schema, say) is
stored as an indented, fenced ``json`` block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation
from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData

__all__ = ["DEFAULT_SNAPSHOT_DIR", "PromptSnapshotExtension", "prompt_snapshot_extension"]

DEFAULT_SNAPSHOT_DIR = "snapshots"
"""Where snapshots go, relative to pytest's rootdir (ini option ``recallstore_snapshot_dir``)."""


class PromptSnapshotExtension(SingleFileSnapshotExtension):
    """One UTF-8 Markdown file per snapshot, in a folder tree mirroring the tests.

    Use :func:`prompt_snapshot_extension` to get one bound to a project's folders;
    this base class keeps syrupy's default ``__snapshots__`` placement.
    """

    _write_mode = WriteMode.TEXT
    file_extension = "md"
    snapshot_root: ClassVar[Path | None] = None
    """The folder snapshots are written under; None keeps syrupy's default placement."""
    test_roots: ClassVar[tuple[Path, ...]] = ()
    """Folders whose test files map to the top of ``snapshot_root``, first match wins."""

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        """A string as it is; JSON data as an indented ``json`` block."""
        if isinstance(data, str):
            return data
        try:
            text = json.dumps(data, indent=2, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                "prompt_snapshot stores text: pass a str, or JSON data such as a tool "
                f"schema, not {type(data).__name__} ({exc})"
            ) from None
        return f"```json\n{text}\n```\n"

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        """``<snapshot_root>/<test folder relative to its test root>/<test file stem>``."""
        if cls.snapshot_root is None:
            return super().dirname(test_location=test_location)
        test_file = Path(test_location.filepath).resolve()
        for root in cls.test_roots:
            if test_file.is_relative_to(root):
                folder = test_file.parent.relative_to(root)
                return str(cls.snapshot_root / folder / test_location.basename)
        return str(cls.snapshot_root / test_location.basename)


def prompt_snapshot_extension(
    snapshot_root: Path, test_roots: tuple[Path, ...]
) -> type[PromptSnapshotExtension]:
    """A :class:`PromptSnapshotExtension` writing under ``snapshot_root``.

    A test file under one of ``test_roots`` (tried in order) gets the folder of its
    path relative to that root; any other test file gets ``snapshot_root/<file stem>``.
    """
    attributes: dict[str, Any] = {
        "snapshot_root": snapshot_root.resolve(),
        "test_roots": tuple(root.resolve() for root in test_roots),
        "__module__": __name__,
    }
    return type("PromptSnapshotExtension", (PromptSnapshotExtension,), attributes)
