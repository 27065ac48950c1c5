#!/usr/bin/env bash
# `make test`: every check, from scratch, in the order that costs the least
# wall time on two cores, with the time of each phase printed at the end.
#
# The Go tool build is the longest phase of a first run and needs the CPU.
# Installing the Debian packages, starting the OpenStack service set and
# downloading Anvil's modules need the network and the disk instead, so they
# run beside it. The service set, once started here, serves the integration
# tests and the e2e devstack, and this script stops it again at the end.
# Services that ran before are left running.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
make=("${MAKE:-make}" --no-print-directory)
logs="$(mktemp -d "${TMPDIR:-/tmp}/anvil-make-test.XXXXXX")"
phases=()
openstack_started=false

# phase NAME CMD... runs one phase and records its duration.
phase() {
  local name="$1" start=$SECONDS
  shift
  echo "make test: $name"
  "$@"
  phases+=("$(printf '%-34s %5d s' "$name" $((SECONDS - start)))")
}

report() {
  local rc=$?
  # A failed tool build leaves the setup running; it is stopped, and the
  # services it started are stopped with the rest.
  if [[ -n "${setup_pid:-}" ]] && kill "$setup_pid" 2>/dev/null; then wait "$setup_pid" 2>/dev/null || true; fi
  [[ -e "$logs/openstack-started" ]] && openstack_started=true
  if [[ $openstack_started == true ]]; then
    hack/openstack/openstack.sh stop >/dev/null 2>&1 || true
  fi
  echo "make test: phases (wall time)"
  printf '  %s\n' "${phases[@]}"
  printf '  %-34s %5d s\n' "total" "$SECONDS"
  if [[ $rc != 0 ]]; then
    echo "make test: FAILED (exit $rc)" >&2
  fi
  rm -rf "$logs"
  exit $rc
}
trap report EXIT

# setup runs beside the tool build: the Debian packages, the OpenStack
# services and Anvil's modules. Its output goes to a log, printed when it
# fails, so it does not interleave with the build's.
setup() {
  local start=$SECONDS
  "${make[@]}" deps
  if ! hack/openstack/openstack.sh status >/dev/null 2>&1; then
    hack/openstack/openstack.sh install
    hack/openstack/openstack.sh start
    touch "$logs/openstack-started"
  fi
  go mod download
  echo $((SECONDS - start)) >"$logs/setup-seconds"
}

setup >"$logs/setup.log" 2>&1 &
setup_pid=$!
phase "tools (packages, services beside)" "${make[@]}" tools
if ! wait "$setup_pid"; then
  [[ -e "$logs/openstack-started" ]] && openstack_started=true
  echo "make test: installing the packages or starting the OpenStack services failed:" >&2
  tail -50 "$logs/setup.log" >&2
  exit 1
fi
[[ -e "$logs/openstack-started" ]] && openstack_started=true
phases+=("$(printf '%-34s %5d s' "  packages, services (beside tools)" "$(cat "$logs/setup-seconds")")")

phase verify "${make[@]}" verify
phase lint "${make[@]}" lint
phase unit "${make[@]}" test-unit
phase integration "${make[@]}" test-integration
phase e2e "${make[@]}" test-e2e
