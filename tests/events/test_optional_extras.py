"""The core imports with neither Starlette nor OpenTelemetry; the extras say how to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import asyncio, importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"starlette", "sse_starlette", "opentelemetry", "uvicorn"}:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Block())

    import recallstore
    from recallstore import InMemoryMemoryStore, MemoryWriteInput
    from recallstore.errors import MissingDependencyError
    from recallstore.events import EventBus, ObservedMemoryStore, build_manifest

    async def main():
        bus = EventBus()
        store = ObservedMemoryStore(InMemoryMemoryStore(), bus)
        await store.write([MemoryWriteInput(scope={"user": "u"}, content="x")])
        assert bus.stats().published == 1
        assert "agent.memory.write" in build_manifest()["events"]

    asyncio.run(main())
    from recallstore.events import sse, otel
    for label, call in (
        ("server", lambda: sse.create_sse_app(EventBus(), token="t")),
        ("otel", lambda: otel.OtelInstrumentation()),
    ):
        try:
            call()
        except MissingDependencyError as exc:
            print(label, exc.install_command)
        else:
            raise SystemExit(f"{label}: no MissingDependencyError")
    assert not any(m.split(".")[0] in {"starlette", "opentelemetry"} for m in sys.modules)
    """
)


@pytest.mark.slow
def test_core_works_without_the_extras_and_extras_name_their_install_command() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "server pip install 'recallstore[server]'",
        "otel pip install 'recallstore[otel]'",
    ]
