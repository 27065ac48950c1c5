#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target of the module in turn, each for
# FUZZTIME (default 10m), and stops at the first failure. A failing input
# lands in the package's testdata/fuzz/<target>/, where `go test` (and so
# `make test`) replays it from then on; commit it with the fix.
#
#   hack/fuzz.sh [FUZZTIME]        e.g. hack/fuzz.sh 30s
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${1:-${FUZZTIME:-10m}}"

# Each "package target" pair, from the test files' func Fuzz... lines.
mapfile -t targets < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . \
  | sed -E 's#^\./(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)$#./\1 \2#' | sort -u)
((${#targets[@]} > 0)) || { echo "fuzz.sh: no fuzz target found" >&2; exit 1; }
for entry in "${targets[@]}"; do
  read -r pkg name <<<"$entry"
  echo "fuzz: $name in $pkg for $fuzztime"
  # -short: a package's TestMain then starts no apiservers, which every
  # fuzz worker would otherwise do.
  go test -short -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
done
echo "fuzz: ${#targets[@]} target(s) passed, each for $fuzztime"
