# Set-up is part of every target: a fresh clone needs only `make test` or `make run`.
# Each role installs from its hashed lock file in requirements/ (see requirements/README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TOOLS  := .cache/tools
# A stamp per role, named after pyproject.toml and the role's lock: editing either re-installs.
stamp   = $(VENV)/.installed-$(1)-$(shell cat pyproject.toml $(2) | cksum | cut -d' ' -f1)
STAMP        := $(call stamp,test,requirements/test.txt requirements/torch.txt)
SERVER_STAMP := $(call stamp,server,requirements/server.txt)
TOOLS_STAMP  := $(TOOLS)/.installed-$(shell cksum requirements/tools.txt | cut -d' ' -f1)

.PHONY: install install-server test lint unit slow run bench lock audit clean mutation mutation-changed

install: $(STAMP)

install-server: $(SERVER_STAMP)

# Everything the tests need. torch (for the CPU tests of the verify-step suite) is installed beside
# the hashed set, not in it: requirements/README.md says why.
$(STAMP): pyproject.toml requirements/test.txt requirements/torch.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements/test.txt
	$(BIN)/pip install --quiet -r requirements/torch.txt
	$(BIN)/pip install --quiet --no-deps -e .
	rm -f $(VENV)/.installed-test-* && touch $@

# The server only: no torch, no git.
$(SERVER_STAMP): pyproject.toml requirements/server.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r requirements/server.txt
	$(BIN)/pip install --quiet --no-deps -e .
	rm -f $(VENV)/.installed-server-* && touch $@

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
run: install-server
	$(BIN)/perfbot serve

bench: install
	$(BIN)/python benchmarks/bench_score.py
	$(BIN)/python benchmarks/bench_triage.py
	$(BIN)/python benchmarks/bench_cli_startup.py

# Mutation testing of the core's decision modules (tests/support/mutate.py; scores in
# docs/testing.md): every module, or only those the last commit changed, a sample of each (CI).
mutation: install
	$(BIN)/python -m tests.support.mutate

mutation-changed: install
	$(BIN)/python -m tests.support.mutate --changed HEAD~1 --max-mutants 20

# pip-tools and pip-audit, in a venv of their own (never in .venv: they are not perfbot's).
$(TOOLS_STAMP): requirements/tools.txt
	test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --require-hashes -r requirements/tools.txt
	rm -f $(TOOLS)/.installed-* && touch $@

# Regenerate the lock files after a dependency changed in pyproject.toml (pins already in a lock
# are kept; see requirements/README.md to upgrade). The test lock comes first: the others are
# constrained to its pins, so that every role runs what the tests ran.
lock: $(TOOLS_STAMP)
	$(TOOLS)/bin/pip-compile --quiet --extra test -o requirements/test.txt pyproject.toml
	$(TOOLS)/bin/pip-compile --quiet --extra server -c requirements/test.txt -o requirements/server.txt pyproject.toml
	$(TOOLS)/bin/pip-compile --quiet --extra runner -c requirements/test.txt -o requirements/runner.txt pyproject.toml
	$(TOOLS)/bin/pip-compile --quiet -o requirements/tools.txt requirements/tools.in

# Known vulnerabilities in the locked dependencies (pip-audit); says so loudly when it cannot run.
audit: $(TOOLS_STAMP)
	PIP_AUDIT=$(TOOLS)/bin/pip-audit .ci/audit

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .ruff_cache .hypothesis .import_linter_cache .mypy_cache *.egg-info
