"""User mistakes end as one clear line on stderr and a non-zero exit, never a traceback.

These run the real command in a subprocess, so exit codes and stderr are the real ones.
"""

from __future__ import annotations

import sqlite3

import pytest

from recallstore.backends.sqlite.schema import SCHEMA_VERSION


def assert_one_line_error(result, code: int, *needles: str) -> str:
    assert result.code == code, result
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("recallstore")
    assert ": error: " in lines[0]
    for needle in needles:
        assert needle in lines[0]
    first: str = lines[0]
    return first


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["x", "=acme", "user"])
def test_bad_scope_syntax(process, seeded, bad) -> None:
    result = process("list", "--db", seeded.path, "--scope", bad)
    assert_one_line_error(result, 2, f"error: --scope expects key=value, got {bad!r}")
    assert result.out == ""


@pytest.mark.slow
def test_missing_database_is_not_created(process, tmp_path) -> None:
    missing = tmp_path / "nowhere" / "memory.db"
    for command in (["list"], ["show", "x"], ["export"]):
        result = process(*command, "--db", missing)
        assert_one_line_error(result, 1, f"no memory database at '{missing}'")
    assert not missing.parent.exists()


@pytest.mark.slow
def test_newer_schema_database_is_refused_unchanged(process, seeded) -> None:
    with sqlite3.connect(seeded.path) as conn:
        conn.execute("PRAGMA user_version = 999")
    conn.close()
    before = seeded.path.read_bytes()
    for command in (["list"], ["invalidate", seeded.purple.id]):
        result = process(*command, "--db", seeded.path)
        line = assert_one_line_error(result, 1, "999", str(SCHEMA_VERSION))
        assert "newer" in line
    assert seeded.path.read_bytes() == before


@pytest.mark.slow
def test_unknown_database_scheme(process) -> None:
    result = process("list", "--db", "mysql://localhost/memory")
    assert_one_line_error(result, 2, "unknown scheme", "mysql")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["list", "--colour"], "unrecognized arguments: --colour"),
        (["list", "--limit", "many"], "must be a whole number from 1 to 1000, got 'many'"),
        (["list", "--kind", "opinion"], "invalid choice: 'opinion'"),
        (["show"], "the following arguments are required: ID"),
        (["events", "manifest"], "one of the arguments --check --write is required"),
    ],
)
@pytest.mark.slow
def test_bad_command_lines(process, seeded, argv, needle) -> None:
    result = process(*argv, "--db", seeded.path) if argv[0] in ("list", "show") else process(*argv)
    assert_one_line_error(result, 2, needle)


@pytest.mark.slow
def test_limit_out_of_range_names_the_field(process, seeded) -> None:
    result = process("list", "--db", seeded.path, "--limit", "-1")
    assert_one_line_error(result, 2, "limit")


@pytest.mark.slow
def test_unknown_id(process, seeded) -> None:
    result = process("show", "no-such-id", "--db", seeded.path)
    assert_one_line_error(result, 1, "no memory record with id 'no-such-id'")


@pytest.mark.slow
def test_blank_search_query(process, seeded) -> None:
    result = process("search", "  ", "--db", seeded.path)
    assert_one_line_error(result, 2, "search needs query text")


@pytest.mark.slow
def test_bare_command_prints_help(process) -> None:
    result = process()
    assert result.code == 2
    assert "Traceback" not in result.err
    for command in ("demo", "serve", "list", "search", "show", "export", "import", "events"):
        assert command in result.err


@pytest.mark.slow
def test_database_that_is_not_sqlite(process, tmp_path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_text("this is not a database\n" * 200)
    result = process("list", "--db", junk)
    assert_one_line_error(result, 1, str(junk))
    assert junk.read_text() == "this is not a database\n" * 200


@pytest.mark.slow
def test_database_path_is_a_directory(process, tmp_path) -> None:
    result = process("list", "--db", tmp_path)
    assert_one_line_error(result, 1, "is a directory")


@pytest.mark.slow
def test_export_into_a_missing_folder(process, seeded, tmp_path) -> None:
    target = tmp_path / "nowhere" / "out.jsonl"
    result = process("export", "--db", seeded.path, "-o", target)
    assert_one_line_error(result, 1, f"--output '{target}': no folder '{target.parent}'")
    assert not target.parent.exists()


@pytest.mark.slow
def test_a_database_folder_that_cannot_be_created(process, seeded, tmp_path) -> None:
    exported = tmp_path / "memory.jsonl"
    assert process("export", "--db", seeded.path, "-o", exported).code == 0
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    result = process("import", exported, "--db", blocker / "memory.db")
    assert_one_line_error(result, 1, str(blocker))


@pytest.mark.slow
def test_import_names_an_unusable_input_file(process, tmp_path) -> None:
    result = process("import", tmp_path, "--db", tmp_path / "m.db")
    assert_one_line_error(result, 1, f"'{tmp_path}' is a directory")
    binary = tmp_path / "photo.jsonl"
    binary.write_bytes(b'{"id": "x"}\n\xff\xd8\xff\xe0 not text\n')
    result = process("import", binary, "--db", tmp_path / "m.db")
    assert_one_line_error(result, 1, f"{binary}: not UTF-8 text")
    assert not (tmp_path / "m.db").exists()
