# Two commands matter: `make run` (a demo on the embedded SQLite default) and
# `make test` (the whole suite). Both create .venv and install pinned dependencies.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: run test lint format bench install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) install -c constraints.txt -e '.[dev]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PIP) install -c constraints.txt -e '.[dev,bench]'
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/python -m rota.demo

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: install
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache rota-demo.db*
