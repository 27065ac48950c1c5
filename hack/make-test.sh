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
#
# The tests mostly wait, on apiservers, controllers and OpenStack: on two
# cores the e2e phase keeps the CPU about half busy. So the e2e checks run
# before the unit and integration tests, and beside them a lane at the
# lowest CPU priority compiles every test package (the integration phase
# then only links and runs), builds the linter, and runs it: it takes what
# the e2e checks leave and delays them little. The linter does not start
# with the tool build any more: there it took CPU the clusters' binaries
# needed, since a tool build has few idle moments to give.
# Each phase's line shows its wall time, the CPU time the whole machine
# spent meanwhile, and how busy the cores were.
set -euo pipefail

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
  echo $((SECONDS - start)) >"$logs/setup-seconds"
}

# beside_lane runs beside the e2e checks. It first compiles every package
# and test package of the module without linking (`go list -export` builds
# what it reports), so that the integration phase finds them in the build
# cache, then builds golangci-lint and govulncheck; both at nice 19, where
# a compiler only waits its turn. Its own process group lets an early exit
# stop it whole.
#
# The linter then runs at the normal priority, on one thread. It does not
# run at nice 19: starved of CPU, golangci-lint's goimports lost a `go env`
# it had started (x/tools gives a go command's output 30 seconds after the
# command ends) and the lint failed. GOMAXPROCS=1 bounds it, and the go
# commands it starts, to one core.
beside_lane() {
  local start=$SECONDS busy0 total0
  read -r busy0 total0 < <(cpu_now)
  # A package that does not compile fails here and again, with its
  # errors, in the integration phase, which is the one that reports it.
  nice -n 19 go list -test -export -e ./... >/dev/null || echo "make test: some test packages did not compile"
  phase_line "test packages compiled (nice 19)" $((SECONDS - start)) "$busy0" "$total0" >"$logs/compile-line"
  start=$SECONDS
  read -r busy0 total0 < <(cpu_now)
  nice -n 19 "${make[@]}" tools-lint
  phase_line "lint build (nice 19)" $((SECONDS - start)) "$busy0" "$total0" >"$logs/lint-build-line"
  start=$SECONDS
  read -r busy0 total0 < <(cpu_now)
  GOMAXPROCS=1 "${make[@]}" lint
  phase_line "lint run (one thread)" $((SECONDS - start)) "$busy0" "$total0" >"$logs/lint-run-line"
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
phase "tools (packages, services beside)" "${make[@]}" tools-kube
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
set -m
beside_lane >"$logs/beside.log" 2>&1 &
lint_pid=$!
set +m
phase e2e stamped "${make[@]}" test-e2e
phase "unit and integration" stamped "${make[@]}" test-go
echo "make test: waiting for the linter"
wait_lint "$logs/beside.log"
cat "$logs/beside.log"
for line in compile lint-build lint-run; do
  phases+=("  beside: $(cat "$logs/$line-line")")
done
