"""The kit as a backend author meets it: a plain pytest run in a project of its own.

Each test writes a test module subclassing ``MemoryStoreConformance`` over one of the
deliberately broken backends in ``kit_mutants.py`` into a temporary directory, runs
pytest there in a subprocess (no configuration file, pytest-timeout switched off) and
reads the JUnit report: no test of the run may wait on anything (none reaches the
kit's time limit, none takes half a minute, however busy the machine: the whole run
is counted in tests, not seconds), and its first failure must name the rule the
backend breaks.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

MUTANTS = Path(__file__).resolve().parent
CASE_LIMIT_SECONDS = 30.0
"""No kit test waits: each takes well under a second alone; a hang waits out the limit."""

_MODULE = """\
import sys

import pytest

sys.path.insert(0, {mutants!r})

from kit_mutants import {mutant}  # noqa: E402
from recallstore.testing import MemoryStoreConformance  # noqa: E402


class TestBrokenStore(MemoryStoreConformance):
    kit_time_limit = {limit}

    @pytest.fixture
    def store_factory(self):
        return {mutant}
"""


def run_kit(
    tmp_path: Path, mutant: str, *pytest_args: str, limit: float = 60
) -> tuple[float, list[tuple[str, str]], str]:
    """Run the kit against ``mutant``; return (the slowest test's seconds,
    [(test, failure message)], output)."""
    (tmp_path / "test_broken_store.py").write_text(
        _MODULE.format(mutants=str(MUTANTS), mutant=mutant, limit=limit), encoding="utf-8"
    )
    report = tmp_path / "report.xml"
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_broken_store.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:timeout",
            f"--junitxml={report}",
            *pytest_args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    failures = []
    slowest = 0.0
    for case in ET.parse(report).getroot().iter("testcase"):
        slowest = max(slowest, float(case.get("time", "0")))
        for outcome in (*case.findall("failure"), *case.findall("error")):
            failures.append((case.get("name", ""), outcome.get("message", "")))
    return slowest, failures, finished.stdout + finished.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mutant", "rule"),
    [
        pytest.param("NoOpDelete", "S5", id="no-op-delete"),
        pytest.param("ExactMatchEmptyScopeListing", "S7", id="exact-match-empty-scope"),
        pytest.param("NonInvalidatingSupersede", "S3", id="non-invalidating-supersede"),
        pytest.param("IgnoresAsOf", "S20", id="ignores-as-of"),
        pytest.param("ClosedObservedWindow", "S19", id="closed-observed-window"),
        pytest.param("WindowOnCreatedAt", "S19", id="window-on-created-at"),
    ],
)
@pytest.mark.slow
def test_the_whole_kit_ends_quickly_and_its_first_failure_names_the_broken_rule(
    tmp_path: Path, mutant: str, rule: str
) -> None:
    slowest, failures, output = run_kit(tmp_path, mutant)
    assert failures, output
    first_test, first_message = failures[0]
    assert f"{rule} — " in first_message.splitlines()[0], (first_test, first_message)
    assert f"rule {rule}: " in first_message
    assert not [m for _, m in failures if "did not finish within" in m], output[-3000:]
    assert slowest < CASE_LIMIT_SECONDS, f"{slowest:.1f} s\n{output[-3000:]}"


@pytest.mark.slow
def test_a_store_call_that_never_returns_fails_on_the_kits_own_time_limit(
    tmp_path: Path,
) -> None:
    _, failures, output = run_kit(
        tmp_path, "DeleteNeverReturns", "-k", "test_s5_delete_removes_only_that_record", limit=2
    )
    assert len(failures) == 1, output
    _, message = failures[0]
    assert "did not finish within 2 s" in message
    assert "still waiting for delete(" in message


@pytest.mark.slow
def test_a_store_call_that_blocks_the_event_loop_is_interrupted(tmp_path: Path) -> None:
    _, failures, output = run_kit(
        tmp_path,
        "GetBlocksTheEventLoop",
        "-k",
        "test_s6_get_returns_invalidated_superseded_and_expired_records",
        limit=1,
    )
    assert len(failures) == 1, output
    _, message = failures[0]
    assert "did not finish within 1 s" in message
    assert "get(" in message
