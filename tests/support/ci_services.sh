# Sourced by .ci/run: start what the server's tests need on a fresh machine and export where it is.
# PostgreSQL (Debian's cluster tools) and Redis listen on loopback only; GitHub's test data is
# fetched once into the git-ignored cache; Debian's Chromium is the browser of the dashboard's
# browser tests. With CI=true, tests fail rather than skip without them.
export CI="${CI:-true}"

_perfbot_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

_perfbot_apt() {
  _perfbot_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  _perfbot_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v pg_ctlcluster >/dev/null || _perfbot_apt postgresql
command -v redis-server >/dev/null || _perfbot_apt redis-server
command -v npm >/dev/null || _perfbot_apt npm
[ -x /usr/bin/chromium ] || _perfbot_apt chromium

pg_version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$pg_version" ]; then
  pg_version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
  _perfbot_root pg_createcluster "$pg_version" main >/dev/null
fi
_perfbot_root pg_ctlcluster "$pg_version" main start 2>/dev/null || true
pg_port="$(pg_lsclusters -h | awk -v v="$pg_version" '$1 == v && $2 == "main" {print $3}')"
_perfbot_root su postgres -c "psql -q -p $pg_port -tAc \"SELECT 1 FROM pg_roles WHERE rolname = 'perfbot'\"" \
  | grep -q 1 \
  || _perfbot_root su postgres -c "psql -q -p $pg_port -c \"CREATE ROLE perfbot LOGIN PASSWORD 'perfbot' CREATEDB\""
# The tests drop their databases WITH (FORCE), which must also end an autovacuum worker that
# happens to be in one: without pg_signal_backend that fails the test's teardown at random.
_perfbot_root su postgres -c "psql -q -p $pg_port -c \"GRANT pg_signal_backend TO perfbot\"" >/dev/null
export PERFBOT_TEST_POSTGRES_URL="postgresql+psycopg://perfbot:perfbot@127.0.0.1:${pg_port}/postgres"

redis_port=6390
redis-cli -p "$redis_port" ping >/dev/null 2>&1 \
  || redis-server --port "$redis_port" --bind 127.0.0.1 --daemonize yes --save '' --appendonly no \
       --pidfile "${TMPDIR:-/tmp}/perfbot-test-redis.pid" >/dev/null
export PERFBOT_TEST_REDIS_URL="redis://127.0.0.1:${redis_port}/0"

tests/support/fetch_github_data.sh
