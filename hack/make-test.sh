#!/usr/bin/env bash
# `make test` (mode gate) and `make test-all` (mode all): every check, from
# scratch, in the order that costs the least wall time on two cores, with
# the time of each phase printed at the end.
#
# The gate is what CI runs and what must stay under 30 minutes on a fresh
# two-core machine: the tools, verify, gofmt and go test's vet, and the
# unit and integration tests without the long suites
# (ANVIL_SKIP_LONG_SUITES, see internal/dev/testenv/long.go). `all` adds
# the long suites, golangci-lint with govulncheck, and the e2e checks of
# the devstack and the guide on one devstack; docs/design/foundation.md
# says why the gate holds what it holds.
#
# The Go tool build is the longest phase of a first run and needs the CPU.
# Installing the Debian packages, starting the OpenStack service set and
# downloading Anvil's modules need the network and the disk instead, so they
# run beside it. The service set, once started here, serves the integration
# tests and the e2e devstack, and this script stops it again at the end.
# Services that ran before are left running.
#
# The tests mostly wait, on apiservers, controllers and OpenStack: on two
# cores the e2e phase keeps the CPU about half busy. So the linter is
# built beside everything else, at the lowest CPU priority, and run beside
# the e2e checks: it takes what the tests leave and delays them little.
# Each phase's line shows its wall time, the CPU time the whole machine
# spent meanwhile, and how busy the cores were.
set -euo pipefail

mode="${1:-gate}"
case "$mode" in
  gate | all) ;;
  *) echo "usage: $0 [gate|all]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
make=("${MAKE:-make}" --no-print-directory)
logs="$(mktemp -d "${TMPDIR:-/tmp}/anvil-make-test.XXXXXX")"
phases=()
# The lines of go test and of the e2e scripts that say what failed.
failure_lines='^\[ *[0-9]+ s\] *(--- FAIL|FAIL|panic:)'
openstack_started=false
ticks="$(getconf CLK_TCK)"
cores="$(nproc)"

# cpu_now prints the machine's busy and total CPU ticks since boot.
cpu_now() {
  local _ user nice sys idle iowait irq softirq steal
  read -r _ user nice sys idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + sys + irq + softirq + steal)) $((user + nice + sys + idle + iowait + irq + softirq + steal))"
}

read -r busy_start total_start < <(cpu_now)

# phase_line NAME SECONDS BUSY0 TOTAL0 formats a phase's line from the
# ticks at its start.
phase_line() {
  local name="$1" secs="$2" busy0="$3" total0="$4" busy total
  read -r busy total < <(cpu_now)
  local dt=$((total - total0))
  ((dt > 0)) || dt=1
  printf '%-34s %5d s %6d CPU-s %3d %% busy' "$name" "$secs" $(((busy - busy0) / ticks)) $((100 * (busy - busy0) / dt))
}

# phase NAME CMD... runs one phase and records its duration.
phase() {
  local name="$1" start=$SECONDS busy0 total0
  shift
  read -r busy0 total0 < <(cpu_now)
  echo "make test: $name"
  "$@"
  phases+=("$(phase_line "$name" $((SECONDS - start)) "$busy0" "$total0")")
}

# stamped CMD... runs a long phase with the seconds since its start before
# each line, so that a slow step shows in the log.
stamped() {
  local start=$SECONDS line
  "$@" 2>&1 | while IFS= read -r line || [[ -n $line ]]; do
    printf '[%4d s] %s\n' $((SECONDS - start)) "$line"
  done | tee -a "$logs/stamped.log"
}

report() {
  local rc=$?
  # A failed tool build leaves the setup running; it is stopped, and the
  # services it started are stopped with the rest.
  if [[ -n "${setup_pid:-}" ]] && kill "$setup_pid" 2>/dev/null; then wait "$setup_pid" 2>/dev/null || true; fi
  if [[ -n "${lint_pid:-}" ]] && kill -- "-$lint_pid" 2>/dev/null; then wait "$lint_pid" 2>/dev/null || true; fi
  [[ -e "$logs/openstack-started" ]] && openstack_started=true
  if [[ $openstack_started == true ]]; then
    hack/openstack/openstack.sh stop >/dev/null 2>&1 || true
  fi
  echo "make test: phases (wall time, CPU time of the machine, busy cores; $cores cores)"
  printf '  %s\n' "${phases[@]}"
  printf '  %s\n' "$(phase_line total "$SECONDS" "$busy_start" "$total_start")"
  if [[ $rc != 0 ]]; then
    # CI keeps only the end of a long log: the failed tests and packages
    # are repeated here, where the end shows them.
    if [[ -s "$logs/stamped.log" ]] && grep -Eq "$failure_lines" "$logs/stamped.log"; then
      echo "make test: what failed (the first 40 lines; the log above has the rest):" >&2
      grep -E "$failure_lines" "$logs/stamped.log" | head -40 >&2
    fi
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
  # test/monitoring is a module of its own (docs/design/monitoring.md).
  (cd test/monitoring && go mod download)
  echo $((SECONDS - start)) >"$logs/setup-seconds"
}

# lint_build_lane builds golangci-lint beside everything, at the lowest CPU
# priority: a compiler only waits its turn. Its own process group lets an
# early exit stop it whole.
lint_build_lane() {
  local start=$SECONDS busy0 total0
  read -r busy0 total0 < <(cpu_now)
  nice -n 19 "${make[@]}" tools-lint
  phase_line "lint build (beside, at nice 19)" $((SECONDS - start)) "$busy0" "$total0" >"$logs/lint-build-line"
}

# lint_run_lane runs golangci-lint beside the e2e checks, which keep the
# cores about half busy, at the normal priority and on one thread. It does
# not run at nice 19: starved of CPU, golangci-lint's goimports lost a
# `go env` it had started (x/tools gives a go command's output 30 seconds
# after the command ends) and the lint failed. GOMAXPROCS=1 bounds it, and
# the go commands it starts, to one core.
lint_run_lane() {
  local start=$SECONDS busy0 total0
  read -r busy0 total0 < <(cpu_now)
  GOMAXPROCS=1 "${make[@]}" lint
  phase_line "lint run (beside e2e, one thread)" $((SECONDS - start)) "$busy0" "$total0" >"$logs/lint-run-line"
}

# wait_lint LOG waits for the lint lane in lint_pid and fails with its log
# when it failed.
wait_lint() {
  local log="$1"
  if ! wait "$lint_pid"; then
    lint_pid=
    echo "make test: lint failed:" >&2
    cat "$log" >&2
    exit 1
  fi
  lint_pid=
}

setup >"$logs/setup.log" 2>&1 &
setup_pid=$!
if [[ $mode == all ]]; then
  set -m
  lint_build_lane >"$logs/lint-build.log" 2>&1 &
  lint_pid=$!
  set +m
fi
# The gate builds only the tools its Go tests run; test-all's e2e checks
# need kubectl and kwokctl too.
tools_target=tools-test
[[ $mode == all ]] && tools_target=tools-kube
phase "tools (packages, services beside)" "${make[@]}" "$tools_target"
if ! wait "$setup_pid"; then
  [[ -e "$logs/openstack-started" ]] && openstack_started=true
  echo "make test: installing the packages or starting the OpenStack services failed:" >&2
  tail -50 "$logs/setup.log" >&2
  exit 1
fi
setup_pid=
[[ -e "$logs/openstack-started" ]] && openstack_started=true
phases+=("$(printf '%-34s %5d s' "  packages, services (beside tools)" "$(cat "$logs/setup-seconds")")")

phase verify "${make[@]}" verify
# The gate's lint: gofmt here, go test's vet with the tests. make test-all
# runs golangci-lint instead, whose checks include both.
gofmt_check() {
  local unformatted
  unformatted="$("$(go env GOROOT)/bin/gofmt" -l $(git ls-files '*.go'))"
  [[ -z $unformatted ]] || { echo "gofmt would change:" >&2; echo "$unformatted" >&2; return 1; }
}
[[ $mode == gate ]] && phase gofmt gofmt_check
# scratch_dirs lists the test scratch directories in the temporary
# directory, the script's own log directory left out.
scratch_dirs() {
  find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'anvil-*' ! -path "$logs" -print 2>/dev/null | LC_ALL=C sort
}
scratch_dirs >"$logs/scratch-before"
if [[ $mode == gate ]]; then
  phase "unit and integration (long suites left out)" stamped env "ANVIL_SKIP_LONG_SUITES=1" "${make[@]}" test-go
else
  phase "unit and integration" stamped "${make[@]}" test-go TEST_VET=-vet=off
fi
# Every test binary ends what its clusters and pod runners started; a
# process still running from a test's scratch directory would hold ports
# and database connections the e2e devstack needs.
if leftovers="$(pgrep -fa -- "${TMPDIR:-/tmp}/anvil-")"; then
  echo "make test: processes of the tests outlived them:" >&2
  echo "$leftovers" >&2
  exit 1
fi
# And a test binary removes what it wrote: a directory the phase made and
# left would fill a developer's disk, one run at a time.
if leftovers="$(scratch_dirs | LC_ALL=C comm -13 "$logs/scratch-before" -)" && [[ -n $leftovers ]]; then
  echo "make test: the tests left scratch directories behind:" >&2
  echo "$leftovers" >&2
  exit 1
fi
[[ $mode == gate ]] && exit 0
echo "make test: waiting for the linter's build"
wait_lint "$logs/lint-build.log"
phases+=("$(cat "$logs/lint-build-line")")
set -m
lint_run_lane >"$logs/lint-run.log" 2>&1 &
lint_pid=$!
set +m
phase e2e stamped "${make[@]}" test-e2e
echo "make test: waiting for the linter"
wait_lint "$logs/lint-run.log"
cat "$logs/lint-run.log"
phases+=("$(cat "$logs/lint-run-line")")
