# Two commands matter: `make run` (a demo on the embedded SQLite default) and
# `make test` (the whole suite). Both create .venv and install pinned dependencies.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: run demo test lint format bench chaos install clean openapi tools screenshots schema

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) install -c constraints.txt -e '.[dev]'
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PIP) install -c constraints.txt -e '.[dev,bench]'
	touch $@

install: $(VENV)/.installed

# rota server with the example handlers and an example schedule on sqlite:///rota.db;
# it prints how to get a token and what to curl. Development mode is asked for here
# (--dev): the server's default is production, which needs ROTA_JWT_SECRET.
# `make run PORT=8080` serves on another port (the printed hints name it).
PORT ?= 5017
run: install
	$(BIN)/python -m rota.examples
	$(BIN)/rota server --dev --app rota.examples:app --port $(PORT)

# Two workers, one SIGKILLed mid-run, and the takeover.
demo: install
	$(BIN)/python -m rota.cli.demo

# The dashboard's browser tests drive Debian's chromium (never a downloaded browser).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -q && apt-get install -y -q chromium

test: install tools $(CHROMIUM)
	$(BIN)/python -m pytest

# The committed OpenAPI document (docs/openapi.json) and the TypeScript client's types
# generated from it; tests fail when either drifts from what the server serves.
openapi: install
	$(BIN)/python -m rota.openapi_document docs/openapi.json
	cd clients/typescript && npm ci --no-audit --no-fund && npm run generate

# promtool (Debian's prometheus package) checks deploy/prometheus/rota-rules.yml in
# `make test`: installed here when missing; if it cannot be, that test says SKIPPED.
tools:
	@command -v promtool >/dev/null 2>&1 || apt-get install -y -qq prometheus >/dev/null 2>&1 \
		|| { apt-get update -qq && apt-get install -y -qq prometheus >/dev/null 2>&1; } \
		|| echo "promtool: cannot be installed here; the alert rules check will be SKIPPED"

# A screenshot of each dashboard page, from a seeded demo database, into docs/dashboard/.
screenshots: install $(CHROMIUM)
	$(BIN)/python -m tests.dashboard.screenshots docs/dashboard

LINTED := src tests chaos examples $(wildcard bench)

lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache   # the layers in pyproject.toml ([tool.importlinter])
	$(BIN)/bandit -q -r src -ll   # fails on any medium or high finding

format: install
	$(BIN)/ruff check --fix $(LINTED)
	$(BIN)/ruff format $(LINTED)

# bench rewrites docs/benchmarks.md; the tools after it add their own marked sections.
# (e) runs half an hour by default, as issue 24's sustained target asks; SUSTAIN_MINUTES=5
# is the shorter run (its last minute against its first).
SUSTAIN_MINUTES ?= 30
bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench --sustain-minutes $(SUSTAIN_MINUTES)
	$(BIN)/python -m bench.server_cost --write
	$(BIN)/python -m bench.defaults --write
	$(BIN)/python -m bench.start_delay --write

# The fault-injection suite (chaos/): real worker processes, a restarted PostgreSQL,
# paused processes, a partition, skewed clocks. Writes docs/reliability.md. Not part of
# `make test`. CHAOS_SIZE=small is CI's reduced run; CHAOS_SKIP=a,b leaves scenarios out.
CHAOS_SIZE ?= full
CHAOS_SKIP ?=
chaos: $(VENV)/.installed
	$(BIN)/python -m chaos --size $(CHAOS_SIZE) --report docs/reliability.md \
		$(if $(CHAOS_SKIP),--skip $(CHAOS_SKIP))

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache rota-demo.db*

# The schema as all migrations leave it, one file per dialect (src/rota/store/schema/);
# a test fails when they drift from the migrations. Needs the PostgreSQL server the
# tests use (ROTA_TEST_DATABASE_URL's, default postgresql://postgres@127.0.0.1:5432).
schema: install
	$(BIN)/python -m rota.store.schema_dump
