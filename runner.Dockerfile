# perfbot's runner image: GitHub's Actions runner as actions-runner-controller (ARC) runs it, with
# perfbot installed in a virtual environment of its own, for ephemeral self-hosted GPU runners.
#
#   docker build -f runner.Dockerfile -t perfbot-runner .
#   docker build -f runner.Dockerfile --build-arg RUNNER_IMAGE=registry.example.com/engine-runner:1 \
#     --build-arg PYTHON=python3.12 -t engine-runner-perfbot .
#
# RUNNER_IMAGE: ARC's runner image by default (Ubuntu 22.04); name your own runner image, the one
# with the inference engine, CUDA and torch, to layer perfbot on top of it. PYTHON: a Python 3.11+
# that the base's apt installs with its -venv package (python3.11 on Ubuntu 22.04 and Debian 12,
# python3.12 on Ubuntu 24.04). perfbot's environment never sees the engine's packages, nor the
# engine perfbot's: the action runs the suites with the engine's interpreter (its `engine-python`
# input or the config's bench.python). With this image, give the action `install: false`.
# The default is pinned by digest (what the tag 2.334.0 resolved to): a tag alone can be moved to
# other contents, a digest names them. Bump the tag and the digest together.
ARG RUNNER_IMAGE=ghcr.io/actions/actions-runner:2.334.0@sha256:b6614fce332517f74d0a76e7c762fb08e4f2ff13dcf333183397c8a5725b6e8e
FROM ${RUNNER_IMAGE}
ARG PYTHON=python3.11

USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends "${PYTHON}" "${PYTHON}-venv" \
 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md LICENSE /tmp/perfbot-src/
COPY requirements/runner.txt requirements/build.txt /tmp/perfbot-src/requirements/
COPY bot /tmp/perfbot-src/bot
# Not on PATH itself: `python3` in a job must stay the engine's. Only the command is linked.
# Everything from hashed locks, the build backend included: perfbot is built without build
# isolation and without an index, so that nothing unpinned is fetched.
RUN "${PYTHON}" -I -m venv /opt/perfbot \
 && /opt/perfbot/bin/python -I -m pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      -r /tmp/perfbot-src/requirements/build.txt \
 && /opt/perfbot/bin/python -I -m pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      -r /tmp/perfbot-src/requirements/runner.txt \
 && /opt/perfbot/bin/python -I -m pip install --no-cache-dir --disable-pip-version-check --no-deps \
      --no-build-isolation --no-index /tmp/perfbot-src \
 && rm -rf /tmp/perfbot-src \
 && ln -s /opt/perfbot/bin/perfbot /usr/local/bin/perfbot \
 && /usr/local/bin/perfbot bench --help > /dev/null
# ARC's image lets its runner user sudo without a password; the jobs here run pull requests' code.
RUN if id -nG runner 2>/dev/null | grep -qw sudo; then gpasswd -d runner sudo; fi
USER runner
