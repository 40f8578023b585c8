"""Anthropic's memory tool (``memory_20250818``) on a MemoryStore: memory files as records.

:class:`RecallstoreMemoryTool` implements the SDK's ``BetaAsyncAbstractMemoryTool``, so
``client.beta.messages.tool_runner(tools=[tool], ...)`` (or your own loop calling
``await tool.call(block.input)``) keeps Claude's ``/memories`` files in recallstore.
Each file is the one valid record of the host's scope whose ``target`` is
``(anthropic.memory, <path>)``; its exact text is in the payload. ``create``,
``str_replace``, ``insert`` and ``rename`` supersede that record, ``delete``
invalidates it: every earlier version stays in the store as the audit trail. The path
is also the record's ``idempotency_key`` (when the store has the extension), so two
writers never leave two versions of one file valid. The scope comes from the host.

Needs the ``anthropic`` extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from recallstore.adapters._framework import _framework_imports
from recallstore.errors import MemoryValidationError
from recallstore.records import (
    MAX_CONTENT_CHARS,
    MAX_KEY_CHARS,
    MAX_LIMIT,
    MemoryRecord,
    MemorySearchQuery,
    MemoryTarget,
    MemoryWriteInput,
)
from recallstore.store import IDEMPOTENCY_EXTENSION, MemoryStore
from recallstore.values import canonical_scope

with _framework_imports("anthropic", "the Anthropic memory tool", "anthropic"):
    from anthropic.lib.tools import BetaAsyncAbstractMemoryTool, ToolError
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )

__all__ = ["MEMORY_FILE_SECTION", "MEMORY_ROOT", "RecallstoreMemoryTool"]

MEMORY_ROOT: Final = "/memories"
"""The directory every memory-tool path lives under."""
MEMORY_FILE_SECTION: Final = "anthropic.memory"
"""``target.section`` of the records that hold memory files."""

_TAG = "memory-file"
_LINE_WIDTH = 6


class RecallstoreMemoryTool(BetaAsyncAbstractMemoryTool):
    """Claude's memory tool backed by ``store``, in the host's ``scope`` (never the model's)."""

    def __init__(self, store: MemoryStore, scope: Mapping[str, str]) -> None:
        super().__init__()
        self.store = store
        self.scope = canonical_scope(scope)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A file's numbered lines (``view_range`` honoured), or a directory's files."""
        path = _checked_path(command.path)
        record = await self._file(path)
        if record is None:
            files = await self._files_under(path)
            if not files and path != MEMORY_ROOT:
                raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
            listing = [f"{len(_text(r).encode())}\t{_path(r)}" for r in files]
            return f"Files in {path}:\n" + "\n".join(listing) if listing else f"{path} is empty."
        lines = _text(record).split("\n")
        start, end = 1, len(lines)
        if command.view_range:
            start, end = command.view_range[0], command.view_range[-1]
            if end == -1:
                end = len(lines)
            if not 1 <= start <= end <= len(lines):
                raise ToolError(f"Invalid view_range {command.view_range} for {len(lines)} lines")
        numbered = [f"{n:>{_LINE_WIDTH}}\t{lines[n - 1]}" for n in range(start, end + 1)]
        return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """Write the file; an existing one is superseded by the new text."""
        path = _checked_path(command.path)
        existing = await self._file(path)
        if existing is None:
            await self._check_new_file(path)
        await self._save(path, command.file_text, existing)
        return f"File created successfully at: {path}"

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replace the one occurrence of ``old_str``; none or several is an error."""
        path = _checked_path(command.path)
        record = await self._existing(path)
        text = _text(record)
        count = text.count(command.old_str) if command.old_str else 0
        if count != 1:
            problem = "did not appear verbatim" if count == 0 else f"appears {count} times"
            raise ToolError(f"No replacement was performed: old_str {problem} in {path}.")
        await self._save(path, text.replace(command.old_str, command.new_str), record)
        return f"The memory file {path} has been edited."

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Insert ``insert_text`` after line ``insert_line`` (0: at the top)."""
        path = _checked_path(command.path)
        record = await self._existing(path)
        lines = _text(record).split("\n")
        if not 0 <= command.insert_line <= len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        added = command.insert_text.removesuffix("\n").split("\n")
        lines[command.insert_line : command.insert_line] = added
        await self._save(path, "\n".join(lines), record)
        return f"The file {path} has been edited."

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Invalidate the file, or every file under a directory; the records stay."""
        path = _checked_path(command.path)
        if path == MEMORY_ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        record = await self._file(path)
        files = [record] if record is not None else await self._files_under(path)
        if not files:
            raise ToolError(f"The path {path} does not exist")
        for file in files:
            await self.store.invalidate(file.id, "deleted by the memory tool")
        return f"Successfully deleted {path}"

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Move a file: a record at the new path supersedes the old one."""
        old_path = _checked_path(command.old_path)
        new_path = _checked_path(command.new_path)
        record = await self._existing(old_path)
        if await self._file(new_path) is not None:
            raise ToolError(f"The destination {new_path} already exists")
        await self._check_new_file(new_path)
        await self._save(new_path, _text(record), record)
        return f"Successfully renamed {old_path} to {new_path}"

    async def _check_new_file(self, path: str) -> None:
        """Refuse a new file where the tree has a directory, or under an existing file.

        A file at ``/memories`` would answer every ``view /memories`` with itself and hide
        the whole tree; a file under a file, or a file over a directory of files, would
        make one path both, and ``view`` and ``delete`` could reach only one of them.
        """
        if path == MEMORY_ROOT:
            raise ToolError(
                f"Cannot create a file at {MEMORY_ROOT}: it is the memory directory. "
                f"Create the file under it, e.g. {MEMORY_ROOT}/notes.md."
            )
        parts = path.split("/")
        for end in range(3, len(parts)):
            ancestor = "/".join(parts[:end])
            if await self._file(ancestor) is not None:
                raise ToolError(
                    f"Cannot create {path}: {ancestor} is a file, not a directory. "
                    f"Choose a path that is not under {ancestor}."
                )
        files = await self._files_under(path)
        if files:
            raise ToolError(
                f"Cannot create the file {path}: it is a directory holding {len(files)} "
                f"file(s), e.g. {_path(files[0])}. Choose another file name."
            )

    async def _file(self, path: str) -> MemoryRecord | None:
        """The valid record holding ``path`` in exactly our scope."""
        hits = await self.store.search(
            MemorySearchQuery(scope=self.scope, target_key=path, limit=MAX_LIMIT)
        )
        found = [hit.record for hit in hits if _is_ours(hit.record, self.scope)]
        return found[0] if found else None

    async def _existing(self, path: str) -> MemoryRecord:
        record = await self._file(path)
        if record is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return record

    async def _files_under(self, directory: str) -> list[MemoryRecord]:
        prefix = directory.rstrip("/") + "/"
        hits = await self.store.search(
            MemorySearchQuery(scope=self.scope, tags=(_TAG,), limit=MAX_LIMIT)
        )
        files = [
            hit.record
            for hit in hits
            if _is_ours(hit.record, self.scope) and _path(hit.record).startswith(prefix)
        ]
        return sorted(files, key=_path)

    async def _save(self, path: str, text: str, replaces: MemoryRecord | None) -> None:
        if len(text) > MAX_CONTENT_CHARS:
            raise ToolError(
                f"The file would be {len(text)} characters; the maximum is {MAX_CONTENT_CHARS}"
            )
        keyed = IDEMPOTENCY_EXTENSION in self.store.capabilities().extensions
        try:
            written = MemoryWriteInput(
                scope=self.scope,
                # Searchable text; the exact file (blank lines, edges) is the payload.
                content=text.strip() or path,
                tags=(_TAG,),
                target=MemoryTarget(section=MEMORY_FILE_SECTION, key=path),
                payload={"text": text},
                supersedes=None if replaces is None else replaces.id,
                idempotency_key=path if keyed else None,
            )
        except MemoryValidationError as exc:  # the model's text: an answer, not a crash
            raise ToolError(f"The file cannot be saved: {exc.message}") from None
        await self.store.write([written])


def _checked_path(path: str) -> str:
    """``/memories`` or a path under it, without ``..`` or empty segments."""
    # What no record can hold is the model's mistake too: an answer, never a crash.
    if len(path) > MAX_KEY_CHARS:
        raise ToolError(f"Path is {len(path)} characters; at most {MAX_KEY_CHARS} are allowed")
    if "\x00" in path:
        raise ToolError("Path must not contain NUL characters")
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError("Path must be valid Unicode (no lone surrogates)") from None
    parts = path.rstrip("/").split("/")
    if parts[:2] != ["", MEMORY_ROOT[1:]] or any(p in ("", ".", "..") for p in parts[1:]):
        raise ToolError(f"Path must be /memories or a path under it, got: {path}")
    return "/".join(parts)


def _is_ours(record: MemoryRecord, scope: Mapping[str, str]) -> bool:
    target = record.target
    return record.scope == scope and target is not None and target.section == MEMORY_FILE_SECTION


def _path(record: MemoryRecord) -> str:
    return record.target.key or "" if record.target is not None else ""


def _text(record: MemoryRecord) -> str:
    payload = record.payload
    text = payload.get("text") if isinstance(payload, dict) else None
    return text if isinstance(text, str) else record.content
