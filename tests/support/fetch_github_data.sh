#!/usr/bin/env bash
# Fetch GitHub's own test data (pinned npm packages, verified by npm against the registry's
# integrity hashes) into a git-ignored cache: the REST description the API emulator validates
# against, the webhook schemas, and the webhook payload examples. Idempotent: a filled cache is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST="${PERFBOT_GITHUB_DATA_DIR:-.cache/github-test-data}"
PACKAGES=(
  "@octokit/openapi@23.0.2:package/generated/api.github.com.json:rest-openapi.json"
  "@octokit/openapi-webhooks@12.1.0:package/generated/api.github.com.json:webhooks-openapi.json"
  "@octokit/webhooks-examples@7.6.1:package/api.github.com/index.json:webhooks-examples.json"
)
mkdir -p "$DEST"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for entry in "${PACKAGES[@]}"; do
  IFS=: read -r spec member target <<<"$entry"
  [[ -s "$DEST/$target" ]] && grep -qx "$spec" "$DEST/$target.source" 2>/dev/null && continue
  tarball="$(cd "$work" && npm pack --silent "$spec" | tail -n 1)"
  tar -xzf "$work/$tarball" -C "$work" "$member"
  mv "$work/$member" "$DEST/$target"
  echo "$spec" > "$DEST/$target.source"
  echo "fetched $spec -> $DEST/$target"
done
