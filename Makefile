# Two commands for a fresh machine: `make run` (the daemon) and `make test` (the whole suite).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
ARGS   ?=

.PHONY: run demo test lint typecheck unit deps-debian bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml setup.py | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml setup.py | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/inferwatch run $(ARGS)

demo: $(VENV)/.installed
	$(BIN)/inferwatch demo $(ARGS)

deps-debian:
	bash scripts/install-test-deps.sh

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check daemon tests bench
	$(BIN)/ruff format --check daemon tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: $(VENV)/.installed-dev
	$(BIN)/pytest -m "not integration and not kmsg"

test: deps-debian $(VENV)/.installed-dev lint
	$(BIN)/pytest

# Every figure of bench/RESULTS.md, one table at the end (bench/run_all.py; root for the kmsg figure).
bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py $(ARGS)

bench-quick: $(VENV)/.installed
	$(BIN)/python bench/run_all.py --quick $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist daemon/*.egg-info
