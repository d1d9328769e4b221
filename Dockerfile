# perfbot server image: webhook intake under gunicorn, as an unprivileged user.
#   docker build -t perfbot .
#   docker run -p 8000:8000 -v perfbot-data:/data -e PERFBOT_WEBHOOK_SECRET=... \
#     -e PERFBOT_APP_ID=... -e PERFBOT_PRIVATE_KEY_PATH=/run/secrets/app.pem perfbot
# The default command is `perfbot serve` (gunicorn + in-process queue consumer on SQLite in /data).
# At scale, run the same image twice: `perfbot serve --workers N` and `perfbot worker`, with
# PERFBOT_DATABASE_URL=postgresql+psycopg://... and PERFBOT_QUEUE_URL=redis://... (docs/deployment.md).
FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN python -m venv /opt/perfbot \
 && /opt/perfbot/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/perfbot/bin/pip install --no-cache-dir '.[server]'

FROM python:3.11-slim-bookworm
RUN groupadd --system perfbot && useradd --system --gid perfbot --home-dir /data --shell /usr/sbin/nologin perfbot \
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
