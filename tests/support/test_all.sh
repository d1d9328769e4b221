#!/usr/bin/env bash
# `make test-all`: `make test` with nothing skipped. PostgreSQL, Redis, npm (for GitHub's test data)
# and Chromium are installed from Debian's packages when missing and started as CI starts them
# (tests/support/ci_services.sh, which .ci/run sources too); that takes root or password-less sudo.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ] && ! sudo -n true 2>/dev/null; then
  echo "make test-all: installing and starting PostgreSQL, Redis, npm and Chromium needs root: run it as root, or after 'sudo -v'" >&2
  exit 2
fi
source tests/support/ci_services.sh
exec make test
