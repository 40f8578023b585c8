"""The project's habits are wired up: one list of checks, run by make, pre-commit and CI,
and a coverage floor that fails `make test` when coverage drops."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def make_rules() -> dict[str, tuple[list[str], list[str]]]:
    """Makefile target → (prerequisites, recipe lines)."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    current: list[str] | None = None
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith("\t") and current is not None:
            current.append(line.strip())
            continue
        found = re.match(r"^([A-Za-z][\w.-]*):(?!=)\s*([^|]*)", line)
        current = None
        if found:
            current = []
            rules[found.group(1)] = (found.group(2).split(), current)
    return rules


def pre_commit_entries() -> list[str]:
    config: dict[str, Any] = yaml.safe_load(
        (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    )
    return [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]


def test_make_check_runs_lint_typecheck_and_layers() -> None:
    rules = make_rules()
    prerequisites, _ = rules["check"]
    assert prerequisites == ["lint", "typecheck", "layers"]
    assert any(line.startswith("$(BIN)/ruff check") for line in rules["lint"][1])
    assert any(line.startswith("$(BIN)/ruff format --check") for line in rules["lint"][1])
    assert "$(BIN)/mypy --strict src" in rules["typecheck"][1]
    assert "$(BIN)/mypy --strict tests" in rules["typecheck"][1]
    assert any(line.startswith("$(BIN)/lint-imports") for line in rules["layers"][1])


def test_pre_commit_runs_exactly_what_make_check_runs(run_tool: Any) -> None:
    prerequisites, _ = make_rules()["check"]
    assert pre_commit_entries() == [f"make {target}" for target in prerequisites]
    validated = run_tool("pre-commit", "validate-config", timeout=60)
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_ci_runs_make_check_and_make_test() -> None:
    commands = [
        line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ]
    assert commands.index("make check") < commands.index("make test")


def test_make_test_measures_coverage_against_a_floor() -> None:
    _, recipe = make_rules()["test"]
    # `coverage run` starts before pytest loads its plugins (ours imports the package).
    assert any("coverage run -m pytest" in line for line in recipe)
    assert any("coverage report" in line for line in recipe)
    coverage = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "coverage"
    ]
    assert coverage["run"]["source"] == ["recallstore"]
    assert coverage["report"]["fail_under"] >= 80


def test_the_changelog_has_an_unreleased_section() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog")
    assert "\n## [Unreleased]\n" in changelog


@pytest.mark.slow
def test_a_run_below_the_coverage_floor_fails(run_tool: Any, tmp_path: Path) -> None:
    # One small test file covers a sliver of the package: the floor must fail the run.
    floor = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "coverage"
    ]["report"]["fail_under"]
    env = {"COVERAGE_FILE": str(tmp_path / ".coverage")}
    tests = run_tool(
        "python", *("-m", "coverage", "run", "-m", "pytest", "-q", "tests/test_version.py"), env=env
    )
    assert tests.returncode == 0, tests.stdout
    assert "2 passed" in tests.stdout  # the tests passed; the floor fails the report
    report = run_tool("python", "-m", "coverage", "report", env=env)
    assert report.returncode != 0, report.stdout
    assert "Coverage failure: total of" in report.stdout
    assert f"is less than fail-under={floor}" in report.stdout


def test_ci_holds_make_test_to_the_coverage_floor() -> None:
    # .ci/run sets RECALLSTORE_REQUIRE_POSTGRES=1 with PostgreSQL up: then the floor holds;
    # a newcomer's run without PostgreSQL shows the report without failing on it.
    def report_line(env: dict[str, str]) -> str:
        dry_run = subprocess.run(
            ["make", "-n", "test"],
            cwd=ROOT,
            env={key: value for key, value in {**os.environ, **env}.items() if value},
            capture_output=True,
            text=True,
            check=True,
        )
        return next(line for line in dry_run.stdout.splitlines() if "coverage report" in line)

    assert "--fail-under" not in report_line({"RECALLSTORE_REQUIRE_POSTGRES": "1"})
    assert "--fail-under=0" in report_line({"RECALLSTORE_REQUIRE_POSTGRES": ""})
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "export RECALLSTORE_REQUIRE_POSTGRES=1" in ci
