#!/usr/bin/env bash
# Installs the Debian packages the tests use, and nothing when they are
# already there: python3-nova brings oslo-config-validator, which checks the
# rendered compute contract against real Nova's option definitions, and jq
# runs the guide's commands in the e2e scripts as the guide writes them.
#
# It never starts a daemon: python3-nova is the library, not a service.
set -euo pipefail

want=(python3-nova jq)
missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "debian deps: up to date"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "debian deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "debian deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
command -v oslo-config-validator >/dev/null || { echo "debian deps: oslo-config-validator is still missing" >&2; exit 1; }
echo "debian deps: installed ${missing[*]}"
