#!/usr/bin/env bash
# Build the server image from the Dockerfile and run it, with no Docker daemon and no registry:
# buildah (chroot isolation, vfs storage) on a Debian bookworm base made here with debootstrap, the
# same distribution as the Dockerfile's default debian:bookworm-slim. Then tests/container runs the
# image: `perfbot serve` answers /healthz and a signed ping, `perfbot worker` stops on SIGTERM, both as
# the unprivileged user. Fails when the image does not build or does not serve. .ci/run calls it
# after `make test` (it uses .venv's pytest); needs root, as CI has, to install buildah and debootstrap.
#
# PERFBOT_REUSE_BASE=1 keeps a base image from an earlier run (CI always makes it afresh).
set -euo pipefail
cd "$(dirname "$0")/../.."
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
IMAGE=localhost/perfbot:ci
BASE=localhost/perfbot-ci-base:bookworm
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap >/dev/null
fi

elapsed() { echo "$(( $(date +%s) - $1 )) s"; }

if [ "${PERFBOT_REUSE_BASE:-0}" != 1 ] || ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  started=$(date +%s)
  # minbase is what Debian's slim images hold (passwd brings useradd, as there).
  debootstrap --variant=minbase --include=passwd bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; exit 1; }
  # Slimmed as Debian's slim images are: no package cache, and no documentation, manual pages or
  # translations, now or from packages installed later.
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  printf 'path-exclude /usr/share/%s/*\n' doc man info locale groff lintian \
    >"$work/rootfs/etc/dpkg/dpkg.cfg.d/slim"
  rm -rf "$work"/rootfs/usr/share/{doc,man,info,locale,groff,lintian}/*
  container="$(buildah from scratch)"
  buildah copy --quiet "$container" "$work/rootfs" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$container"
  buildah commit --quiet --rm "$container" "$BASE" >/dev/null
  rm -rf "$work/rootfs"
  echo "base image $BASE made with debootstrap in $(elapsed "$started")"
fi

# Package access is configured on the host, and the build's RUN steps see it read-only: apt's folder
# as it is, and for pip a configuration of its own that names the host's certificate bundle (under
# /run: the image's own ca-certificates package owns /etc/ssl/certs/ca-certificates.crt, and writes
# it while installing) and the host's package indexes, where those are web addresses.
read -r ca_bundle < <(python3 - "$work/pip.conf" <<'PY'
import re, subprocess, sys

settings = dict(re.findall(r"^[\w:-]*\.([\w-]+)='(.*)'$",
                           subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                                          capture_output=True, text=True).stdout, re.M))
lines = ["[global]", "cert = /run/host-ca.crt"]
for key in ("index-url", "extra-index-url"):
    urls = [url for url in settings.get(key, "").split() if url.startswith(("http://", "https://"))]
    if urls:
        lines.append(f"{key} = {' '.join(urls)}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
print(settings.get("cert", "/etc/ssl/certs/ca-certificates.crt"))
PY
)
mounts=(-v "/etc/apt:/etc/apt:ro" -v "$work/pip.conf:/etc/pip.conf:ro" -v "$ca_bundle:/run/host-ca.crt:ro")

started=$(date +%s)
buildah bud --quiet --pull-never --layers=false --format docker --build-arg "BASE=$BASE" "${mounts[@]}" -t "$IMAGE" . >/dev/null
echo "image $IMAGE built in $(elapsed "$started"); $(buildah images --format '{{.Size}}' "$IMAGE")"

status=0
PERFBOT_TEST_IMAGE="$IMAGE" .venv/bin/pytest -q -p no:cacheprovider tests/container || status=$?
buildah rmi --prune >/dev/null 2>&1 || true
[ "${PERFBOT_REUSE_BASE:-0}" = 1 ] || buildah rmi "$IMAGE" "$BASE" >/dev/null 2>&1 || true
exit "$status"
