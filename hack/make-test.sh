#!/usr/bin/env bash
# `make test`: every check, from scratch, in the order that costs the least
# wall time on two cores, with the time of each phase printed at the end.
#
# The Go tool build is the longest phase of a first run and needs the CPU.
# Installing the Debian packages, starting the OpenStack service sets and
# downloading Anvil's modules need the network and the disk instead, so they
# run beside it. The service sets started here, one for the integration
# tests and one for the e2e devstack, are stopped again at the end; sets
# that ran before are left running.
#
# The tests mostly wait, on apiservers, controllers and OpenStack. So two
# lanes run beside the unit and integration tests. The e2e checks run on a
# devstack with a service set of its own, started beside the tool build, in
# a network namespace of its own (see make_e2e_netns). The linter is built
# and run beside everything, at the lowest CPU priority: it takes what the
# tests leave and delays them little. Each phase's line shows its wall
# time, the CPU time the whole machine spent meanwhile, and how busy the
# cores were; a lane's output is printed when it ends.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
make=("${MAKE:-make}" --no-print-directory)
logs="$(mktemp -d "${TMPDIR:-/tmp}/anvil-make-test.XXXXXX")"
phases=()
ticks="$(getconf CLK_TCK)"
cores="$(nproc)"

# cpu_now prints the machine's busy and total CPU ticks since boot.
cpu_now() {
  local _ user nice sys idle iowait irq softirq steal
  read -r _ user nice sys idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + sys + irq + softirq + steal)) $((user + nice + sys + idle + iowait + irq + softirq + steal))"
}

read -r busy_start total_start < <(cpu_now)

# The e2e devstack's service set: a state directory and ports of its own
# (20 above the defaults), so that it never meets the integration tests'
# in the state directory, and would not on the ports either without the
# namespace.
e2e_openstack=(
  ANVIL_OPENSTACK_DIR="$root/.devstack/openstack-e2e"
  ANVIL_OPENSTACK_MARIADB_PORT=13326 ANVIL_OPENSTACK_EPMD_PORT=14389
  ANVIL_OPENSTACK_RABBITMQ_PORT=15702 ANVIL_OPENSTACK_RABBITMQ_TLS_PORT=15701 ANVIL_OPENSTACK_RABBITMQ_DIST_PORT=15703
  ANVIL_OPENSTACK_KEYSTONE_PORT=15520 ANVIL_OPENSTACK_KEYSTONE_TLS_PORT=15521
  ANVIL_OPENSTACK_PLACEMENT_PORT=18798 ANVIL_OPENSTACK_NOVA_API_PORT=18794
  ANVIL_OPENSTACK_NEUTRON_PORT=19716 ANVIL_OPENSTACK_IMAGE_PORT=19312
  ANVIL_OPENSTACK_OVN_NB_PORT=16661 ANVIL_OPENSTACK_OVN_SB_PORT=16662
  ANVIL_OPENSTACK_OVN_NB_RAFT_PORT=16663 ANVIL_OPENSTACK_OVN_SB_RAFT_PORT=16664
)

# make_e2e_netns makes the e2e lane's network namespace, with its loopback
# up, and sets e2e_netns and e2e_in (the command prefix that enters it).
# The devstack's pod runners bind the containers' ports (Nova API's 8774
# and the others) on 127.0.0.1, and so do the integration suites' runners:
# beside each other they need two loopbacks. nsenter changes the network
# namespace only; `ip netns exec` would also give the lane a private mount
# namespace, which hides the metadata agent's mounts under /run/netns from
# the pod runner. Without root, or without iproute2, there is no
# namespace, and the e2e checks run after the integration tests instead,
# on their service set.
e2e_netns=""
e2e_in=()
make_e2e_netns() {
  local name="anvil-e2e-$$"
  [[ $(id -u) == 0 ]] && command -v ip >/dev/null && command -v nsenter >/dev/null || return 0
  ip netns add "$name" 2>/dev/null || return 0
  e2e_netns="$name"
  ip -n "$name" link set lo up
  e2e_in=(nsenter "--net=/run/netns/$name")
}

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
  done
}

# start_lane NAME LOG CMD... runs CMD in the background, in a process group
# of its own so that an early exit stops it whole, with its output stamped
# into LOG and its phase line into LOG.line. It sets lane_pid.
start_lane() {
  local name="$1" log="$2"
  shift 2
  set -m
  (
    start=$SECONDS
    read -r busy0 total0 < <(cpu_now)
    stamped "$@" >"$log"
    phase_line "$name" $((SECONDS - start)) "$busy0" "$total0" >"$log.line"
  ) &
  lane_pid=$!
  set +m
}

# finish_lane NAME PID LOG waits for a lane, prints its output, and fails
# when it failed.
finish_lane() {
  local name="$1" pid="$2" log="$3"
  echo "make test: waiting for $name"
  if ! wait "$pid"; then
    echo "make test: $name failed:" >&2
    cat "$log" >&2
    return 1
  fi
  echo "make test: $name:"
  cat "$log"
  phases+=("$(cat "$log.line")")
}

# stop_group PID stops a lane's process group, if it still runs.
stop_group() {
  if [[ -n "${1:-}" ]] && kill -- "-$1" 2>/dev/null; then wait "$1" 2>/dev/null || true; fi
}

report() {
  local rc=$?
  # A failed phase leaves the setup and the lanes running; they are
  # stopped, and the services the setup started are stopped with the rest.
  if [[ -n "${setup_pid:-}" ]] && kill "$setup_pid" 2>/dev/null; then wait "$setup_pid" 2>/dev/null || true; fi
  stop_group "${e2e_pid:-}"
  stop_group "${lint_pid:-}"
  if [[ -e "$logs/openstack-started" ]]; then
    hack/openstack/openstack.sh stop >/dev/null 2>&1 || true
  fi
  if [[ -e "$logs/openstack-e2e-started" ]]; then
    "${e2e_in[@]}" env "${e2e_openstack[@]}" hack/openstack/openstack.sh stop >/dev/null 2>&1 || true
  fi
  [[ -z "$e2e_netns" ]] || ip netns delete "$e2e_netns" 2>/dev/null || true
  echo "make test: phases (wall time, CPU time of the machine, busy cores; $cores cores)"
  printf '  %s\n' "${phases[@]}"
  printf '  %s\n' "$(phase_line total "$SECONDS" "$busy_start" "$total_start")"
  if [[ $rc != 0 ]]; then
    echo "make test: FAILED (exit $rc)" >&2
  fi
  rm -rf "$logs"
  exit $rc
}
trap report EXIT

# setup runs beside the tool build: the Debian packages, the OpenStack
# service sets (the e2e lane's in its namespace), Anvil's modules and the Go
# toolchain the image is built with, all of which need the network, which
# the e2e lane's namespace does not have. Its output goes to a log, printed
# when it fails, so it does not interleave with the build's.
setup() {
  local start=$SECONDS
  local up=true e2e_up=true
  "${make[@]}" deps
  hack/openstack/openstack.sh status >/dev/null 2>&1 || up=false
  if [[ -n "$e2e_netns" ]]; then
    "${e2e_in[@]}" env "${e2e_openstack[@]}" hack/openstack/openstack.sh status >/dev/null 2>&1 || e2e_up=false
  fi
  if [[ $up == false || $e2e_up == false ]]; then
    hack/openstack/openstack.sh install
  fi
  if [[ $up == false ]]; then
    hack/openstack/openstack.sh start
    touch "$logs/openstack-started"
  fi
  if [[ $e2e_up == false ]]; then
    touch "$logs/openstack-e2e-started"
    "${e2e_in[@]}" env "${e2e_openstack[@]}" hack/openstack/openstack.sh start
  fi
  go mod download
  GOTOOLCHAIN="$(sed -n 's/^toolchain //p' go.mod)" go version
  echo $((SECONDS - start)) >"$logs/setup-seconds"
}

make_e2e_netns
start_lane "lint (beside, at nice 19)" "$logs/lint.log" nice -n 19 "${make[@]}" lint
lint_pid=$lane_pid
setup >"$logs/setup.log" 2>&1 &
setup_pid=$!
phase "tools (packages, services beside)" "${make[@]}" tools-kube
if ! wait "$setup_pid"; then
  setup_pid=
  echo "make test: installing the packages or starting the OpenStack services failed:" >&2
  tail -50 "$logs/setup.log" >&2
  exit 1
fi
setup_pid=
phases+=("$(printf '%-34s %5d s' "  packages, services (beside tools)" "$(cat "$logs/setup-seconds")")")

phase verify "${make[@]}" verify
if [[ -n "$e2e_netns" ]]; then
  # Both lanes below build from the same packages; compiling them once here
  # keeps two go commands from compiling each of them at the same time.
  phase compile go build ./...
  start_lane "e2e (beside, own netns)" "$logs/e2e.log" "${e2e_in[@]}" env "${e2e_openstack[@]}" "${make[@]}" test-e2e
  e2e_pid=$lane_pid
  phase "unit and integration" stamped "${make[@]}" test-go
  finish_lane e2e "$e2e_pid" "$logs/e2e.log"
  e2e_pid=
else
  phase "unit and integration" stamped "${make[@]}" test-go
  phase e2e stamped "${make[@]}" test-e2e
fi
finish_lane lint "$lint_pid" "$logs/lint.log"
lint_pid=
