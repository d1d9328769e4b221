# Set-up is part of every target: a fresh clone needs only `make test` or `make run`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install test lint unit run bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

lint: install
	$(BIN)/ruff check bot tests benchmarks
	$(BIN)/lint-imports

unit: install
	$(BIN)/pytest -q

test: lint unit

# Score the diff of the last commit of this repository, as a first look at what perfbot says.
run: install
	git diff HEAD~1 HEAD | $(BIN)/perfbot score -

bench: install
	$(BIN)/python benchmarks/bench_score.py
	$(BIN)/python benchmarks/bench_triage.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .import_linter_cache *.egg-info
