# Set-up is part of every target: a fresh clone needs only `make test` or `make run`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install test lint unit slow run bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

lint: install
	$(BIN)/ruff check bot tests benchmarks examples
	$(BIN)/lint-imports
	$(BIN)/mypy

# The quick tests (pytest leaves the slow ones out by default), then the slow ones: end-to-end
# benchmark and bisect runs on CPU, a 50 MiB diff. `make test` runs everything, as CI does.
unit: install
	$(BIN)/pytest -q

slow: install
	$(BIN)/pytest -q -m slow

test: lint unit slow

# Run the bot: webhook server + in-process queue on the embedded defaults (SQLite files here).
# Needs PERFBOT_WEBHOOK_SECRET (and GitHub credentials to publish reviews): see docs/github-app.md.
run: install
	$(BIN)/perfbot serve

bench: install
	$(BIN)/python benchmarks/bench_score.py
	$(BIN)/python benchmarks/bench_triage.py
	$(BIN)/python benchmarks/bench_cli_startup.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .import_linter_cache .mypy_cache *.egg-info
