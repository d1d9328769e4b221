# perfbot server image: webhook intake under gunicorn, as an unprivileged user.
#   docker build -t perfbot .
#   docker run -p 8000:8000 -v perfbot-data:/data -e PERFBOT_WEBHOOK_SECRET=... \
#     -e PERFBOT_APP_ID=... -e PERFBOT_PRIVATE_KEY_PATH=/run/secrets/app.pem perfbot
# The default command is `perfbot serve` (gunicorn + a queue consumer process on SQLite in /data).
# At scale, run the same image twice: `perfbot serve --workers N` and `perfbot worker`, with
# PERFBOT_DATABASE_URL=postgresql+psycopg://... and PERFBOT_QUEUE_URL=redis://... (docs/deployment.md).
#
# Debian's own python3 on Debian's slim image: the server only, installed from the hashed lock
# (requirements/server.txt): no torch and no git (the server never runs it); NumPy and SciPy are
# there because the server judges the runners' results and finds the dashboard's change points.
# BASE is an argument so that CI can build on the same distribution made with debootstrap. The
# default is pinned by digest (the multi-platform index of Debian's dated bookworm-20260918-slim, as
# the Docker Official Images' repo-info records it): a tag alone can be moved to other contents.
# Bump both together to take a newer Debian point release (docs/deployment.md).
ARG BASE=debian:bookworm-20260918-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251

FROM ${BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY requirements/server.txt requirements/server.txt
RUN python3 -m venv /opt/perfbot \
 && /opt/perfbot/bin/pip install --no-cache-dir --require-hashes -r requirements/server.txt
COPY pyproject.toml README.md LICENSE ./
COPY bot ./bot
# The server needs no installer at run time: leave out the venv's pip and setuptools.
RUN /opt/perfbot/bin/pip install --no-cache-dir --no-deps . \
 && /opt/perfbot/bin/pip uninstall --yes --quiet pip setuptools

FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system perfbot \
 && useradd --system --gid perfbot --home-dir /data --shell /usr/sbin/nologin perfbot \
 && mkdir /data && chown perfbot:perfbot /data
COPY --from=build /opt/perfbot /opt/perfbot
ENV PATH=/opt/perfbot/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PERFBOT_DATABASE_URL=sqlite:////data/perfbot.db
USER perfbot
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["perfbot", "serve", "--host", "0.0.0.0", "--port", "8000"]
