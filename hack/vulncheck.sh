#!/usr/bin/env bash
# vulncheck.sh runs govulncheck (built by `make tools-lint`) over Anvil
# against a pinned snapshot of the Go vulnerability database: the module
# golang.org/x/vulndb, whose data/osv holds one OSV entry per
# vulnerability, read through govulncheck's file source. The module proxy
# serves it where vuln.go.dev cannot be reached, and a pinned snapshot
# gives the same verdict for the same commit on every machine. Raise
# VULNDB_VERSION to learn of newer vulnerabilities; see
# docs/design/security.md.
#
# The scan runs with go.mod's toolchain, the one the image is built with,
# so the standard library it judges is the one Anvil ships, whatever Go
# the machine has.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${ANVIL_BIN:-$root/bin}"
VULNDB_VERSION="v0.0.0-20261105234957-e22db6528018"

# Downloaded from outside any module, so that no go.mod or go.sum changes.
db="$(cd "${TMPDIR:-/tmp}" && GOFLAGS= go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "$db/data/osv" ]] || { echo "vulncheck: golang.org/x/vulndb@$VULNDB_VERSION has no data/osv" >&2; exit 1; }

toolchain="$(sed -n 's/^toolchain //p' "$root/go.mod")"
cd "$root"
GOTOOLCHAIN="${toolchain:-local}" "$bin/govulncheck" -db "file://$db/data/osv" ./...
