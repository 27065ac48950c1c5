#!/usr/bin/env bash
# Fails when a generated file is out of date with its source.
#
# It snapshots the generated files, regenerates them, and compares. Comparing
# against a snapshot instead of git keeps the check correct in a working tree
# with uncommitted changes, and in a fresh clone alike.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

snapshot="$(mktemp -d)"
trap 'rm -rf "$snapshot"' EXIT

generated() { find api internal/hypervisor config/crd/bases config/crd/standin charts/anvil-operator/crds config/rbac config/webhook -type f \( -name 'zz_generated*.go' -o -name '*.yaml' \) 2>/dev/null | LC_ALL=C sort; }

generated | while read -r f; do mkdir -p "$snapshot/$(dirname "$f")"; cp "$f" "$snapshot/$f"; done
make --no-print-directory generate manifests >/dev/null

stale=0
while read -r f; do
  if [[ ! -f "$snapshot/$f" ]]; then
    echo "missing generated file (now created): $f" >&2; stale=1
  elif ! cmp -s "$f" "$snapshot/$f"; then
    echo "out of date (now regenerated): $f" >&2; diff -u "$snapshot/$f" "$f" | head -20 >&2 || true; stale=1
  fi
done < <(generated)
if [[ "$stale" != 0 ]]; then
  echo "run 'make generate manifests' and commit the result" >&2
  exit 1
fi
echo "generated files are up to date"
