#!/usr/bin/env bash
# openstack.sh installs and runs, on 127.0.0.1, the OpenStack services
# Anvil's tests and devstack take as given: MariaDB (with Nova's empty
# databases), RabbitMQ, Keystone, Placement, Neutron (ML2/OVN, with a small
# OVN central of its own) and a stub for Glance. Anvil runs Nova itself. For
# the tests of the node pools alone, which do not exercise the Nova
# controller, start-nova adds a reference Nova control plane of plain
# processes.
#
#   openstack.sh install     install the Debian packages (idempotent, non-interactive)
#   openstack.sh start       start every service; running ones are left alone
#   openstack.sh start-nova  also run nova-api, nova-conductor and nova-scheduler,
#                            and register them in the catalog
#   openstack.sh stop-nova   stop those and remove their catalog entry
#   openstack.sh start-neutron [--nb ssl:ADDR[,ssl:ADDR...] --sb ssl:ADDR[,...] --tls-dir DIR]
#                            restart neutron-server against these OVN databases,
#                            with the client certificate DIR/tls.crt, DIR/tls.key
#                            and the CA DIR/ca.crt (an OVNCentral's published
#                            addresses and client Secret, say); without flags,
#                            against the set's own central again. The set's own
#                            central keeps running either way, and stop forgets
#                            the choice. A neutron-server that already runs
#                            against the same databases and files is left alone.
#   openstack.sh bus-user add NAME
#                            create bus user NAME with the password on stdin (or
#                            set its password), with every right on vhost /: a
#                            second broker credential, to rotate a transport URL
#   openstack.sh bus-user delete NAME
#                            delete that user; the set's own user nova stays
#   openstack.sh service-password nova
#                            set the nova service user's password to the one on
#                            stdin: in its secret file, in Keystone, and in
#                            neutron-server's [nova] section (neutron-server
#                            restarts against the same central), to rotate it
#   openstack.sh stop        stop the processes recorded in the pid files
#   openstack.sh status      one line per service; exit 0 only when all run
#                            (the reference Nova is listed only while it runs)
#
# Every service runs as a plain process in a session of its own, with its pid
# file under <state>/run and its log under <state>/logs. The state directory is
# <repo>/.devstack/openstack unless ANVIL_OPENSTACK_DIR names another.
# See docs/reference/test-infrastructure.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
STATE=${ANVIL_OPENSTACK_DIR:-$REPO/.devstack/openstack}
PY=/usr/bin/python3 # the PATH python3 may be a pyenv without the OpenStack modules
TIMEOUT=${ANVIL_OPENSTACK_TIMEOUT:-180}

# Ports: the environment wins; otherwise the ports this state directory was
# last started with (ports.env); otherwise these defaults, chosen away from
# the services' usual ports.
PORT_VARS=(MARIADB EPMD RABBITMQ RABBITMQ_TLS RABBITMQ_DIST RABBITMQ_MGMT KEYSTONE KEYSTONE_TLS PLACEMENT NOVA_API NEUTRON IMAGE
  OVN_NB OVN_SB OVN_NB_RAFT OVN_SB_RAFT)
if [[ -f $STATE/ports.env ]]; then
  while IFS='=' read -r key value; do
    if [[ $key =~ ^ANVIL_OPENSTACK_[A-Z_]+_PORT$ && $value =~ ^[0-9]+$ && -z ${!key:-} ]]; then
      export "$key=$value"
    fi
  done <"$STATE/ports.env"
fi
MARIADB_PORT=${ANVIL_OPENSTACK_MARIADB_PORT:-13306}
EPMD_PORT=${ANVIL_OPENSTACK_EPMD_PORT:-14369}
RABBITMQ_PORT=${ANVIL_OPENSTACK_RABBITMQ_PORT:-15682}
RABBITMQ_TLS_PORT=${ANVIL_OPENSTACK_RABBITMQ_TLS_PORT:-15681}
RABBITMQ_DIST_PORT=${ANVIL_OPENSTACK_RABBITMQ_DIST_PORT:-15683}
# The management API's TLS listener, where Anvil manages per-cluster users.
RABBITMQ_MGMT_PORT=${ANVIL_OPENSTACK_RABBITMQ_MGMT_PORT:-15684}
KEYSTONE_PORT=${ANVIL_OPENSTACK_KEYSTONE_PORT:-15500}
KEYSTONE_TLS_PORT=${ANVIL_OPENSTACK_KEYSTONE_TLS_PORT:-15501}
PLACEMENT_PORT=${ANVIL_OPENSTACK_PLACEMENT_PORT:-18778}
NOVA_API_PORT=${ANVIL_OPENSTACK_NOVA_API_PORT:-18774}
NEUTRON_PORT=${ANVIL_OPENSTACK_NEUTRON_PORT:-19696}
IMAGE_PORT=${ANVIL_OPENSTACK_IMAGE_PORT:-19292}
# The set's own OVN central: the client ports of the NB and SB databases and
# the Raft ports their one-member clusters listen on.
OVN_NB_PORT=${ANVIL_OPENSTACK_OVN_NB_PORT:-16641}
OVN_SB_PORT=${ANVIL_OPENSTACK_OVN_SB_PORT:-16642}
OVN_NB_RAFT_PORT=${ANVIL_OPENSTACK_OVN_NB_RAFT_PORT:-16643}
OVN_SB_RAFT_PORT=${ANVIL_OPENSTACK_OVN_SB_RAFT_PORT:-16644}

REGION=RegionOne
HOST=127.0.0.1
KEYSTONE_URL=http://$HOST:$KEYSTONE_PORT/v3
KEYSTONE_PUBLIC_URL=https://$HOST:$KEYSTONE_TLS_PORT/v3
PLACEMENT_URL=http://$HOST:$PLACEMENT_PORT
NOVA_URL=http://$HOST:$NOVA_API_PORT/v2.1
NEUTRON_URL=http://$HOST:$NEUTRON_PORT
IMAGE_URL=http://$HOST:$IMAGE_PORT
OVN_NB=ssl:$HOST:$OVN_NB_PORT
OVN_SB=ssl:$HOST:$OVN_SB_PORT
RABBITMQ_NODE=anvil@localhost

RUN=$STATE/run
LOGS=$STATE/logs
SECRETS=$STATE/secrets

# Services in start order, as status lists them.
SERVICES=(mariadb epmd rabbitmq ovn-nb ovn-sb ovn-northd image-stub keystone placement neutron-server)
# The reference Nova of start-nova, in start order.
NOVA_SERVICES=(nova-api nova-conductor nova-scheduler)

# neutron-common holds neutron-server and neutron-db-manage; the
# neutron-server package adds only init scripts and uwsgi's plugin. ovn-host
# and openvswitch-switch are the chassis programs tests run against the set's
# Neutron (openstacktest.StartChassis).
PACKAGES=(
  mariadb-server rabbitmq-server keystone placement-api python3-osc-placement
  nova-api nova-conductor nova-scheduler python3-nova python3-openstackclient
  python3-pymysql uwsgi-core uwsgi-plugin-python3 openssl curl
  ovn-central ovn-host openvswitch-switch neutron-common
)

# The openstack-pkg-tools questions, as package:question. Each is answered
# "false", so the maintainer scripts touch no database and register nothing.
DEBCONF_FALSE=(
  keystone:keystone/configure_db keystone:keystone/create-admin-tenant
  keystone:keystone/register-endpoint
  nova-api:novaapi/configure_db nova-api:nova/configure_api-endpoint
  nova-common:nova/configure_db nova-common:nova/configure_rabbit
  nova-common:nova/configure_neutron nova-common:nova/configure_placement
  nova-common:nova/configure_ksat nova-common:nova/ksat-create-service-user
  placement-api:placement/configure_api-endpoint
  placement-common:placement/configure_db placement-common:placement/configure_ksat
  placement-common:placement/ksat-create-service-user
  neutron-common:neutron/configure_db neutron-common:neutron/configure_rabbit
  neutron-common:neutron/configure_ksat neutron-common:neutron/configure_nova
)

log() { echo "openstack: $*"; }
err() { echo "openstack: $*" >&2; }

# ---------------------------------------------------------------- install

missing_packages() {
  local pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

POLICY_RC=/usr/sbin/policy-rc.d
POLICY_BACKUP=""
SUDO=""

restore_policy_rc() {
  if [[ -n $POLICY_BACKUP ]]; then
    $SUDO mv -f "$POLICY_BACKUP" "$POLICY_RC"
  else
    $SUDO rm -f "$POLICY_RC"
  fi
}

cmd_install() {
  local missing
  mapfile -t missing < <(missing_packages)
  if [[ ${#missing[@]} -eq 0 ]]; then
    log "install: every package is already installed"
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { err "install: need root or sudo to install ${missing[*]}"; exit 1; }
    SUDO=sudo
  fi
  log "install: installing ${missing[*]}"
  local started=$SECONDS entry
  for entry in "${DEBCONF_FALSE[@]}"; do
    echo "${entry%%:*} ${entry#*:} boolean false"
  done | $SUDO debconf-set-selections

  # A policy-rc.d that exits 101 tells invoke-rc.d to start no daemon. An
  # existing one is kept aside and put back afterwards.
  POLICY_BACKUP=$POLICY_RC.anvil-saved
  if [[ -e $POLICY_BACKUP ]]; then
    : # an earlier install died before putting it back; that copy is the original
  elif [[ -e $POLICY_RC ]]; then
    $SUDO cp -a "$POLICY_RC" "$POLICY_BACKUP"
  else
    POLICY_BACKUP=""
  fi
  trap restore_policy_rc EXIT
  printf '#!/bin/sh\n# hack/openstack/openstack.sh install: start no daemon\nexit 101\n' |
    $SUDO tee "$POLICY_RC" >/dev/null
  $SUDO chmod 0755 "$POLICY_RC"

  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}"
  restore_policy_rc
  trap - EXIT

  mapfile -t missing < <(missing_packages)
  if [[ ${#missing[@]} -ne 0 ]]; then
    err "install: still missing after apt-get: ${missing[*]}"
    exit 1
  fi
  log "install: done in $((SECONDS - started))s"
}

# ---------------------------------------------------------------- processes

# A pid file holds "<pid> <start time>". The start time (field 22 of
# /proc/<pid>/stat) tells our process apart from a later one that reuses the
# pid, for example after a reboot.

# proc_fields PID sets FIELDS to /proc/PID/stat from field 3 (state) on, so
# FIELDS[0] is the state, FIELDS[2] the process group, FIELDS[19] the start
# time. It fails for a missing process and for a zombie, which has exited.
proc_fields() {
  local line
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  line=${line##*) } # drop "pid (comm) "; comm may contain spaces
  read -r -a FIELDS <<<"$line"
  [[ ${FIELDS[0]} != Z ]]
}

proc_starttime() {
  local FIELDS
  proc_fields "$1" || return 1
  echo "${FIELDS[19]}"
}

# service_pid NAME prints the pid when the recorded process still runs.
service_pid() {
  local file=$RUN/$1.pid pid start now
  [[ -f $file ]] || return 1
  read -r pid start <"$file" || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  now=$(proc_starttime "$pid") || return 1
  [[ $now == "$start" ]] || return 1
  echo "$pid"
}

# group_alive PGID succeeds while a live (non-zombie) process is in the group.
group_alive() {
  local pid FIELDS
  for pid in $(pgrep -g "$1" 2>/dev/null); do
    proc_fields "$pid" && return 0
  done
  return 1
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# launch NAME PORT... -- COMMAND... starts COMMAND in a new session, so that
# its pid is also its process group and stop reaches every child it forks.
launch() {
  local name=$1 port
  shift
  while [[ $1 != -- ]]; do
    port=$1
    shift
    if port_open "$port"; then
      err "$name: port $port on $HOST is already taken by another process"
      err "$name: stop that process, or choose other ports (see the ANVIL_OPENSTACK_*_PORT variables)"
      exit 1
    fi
  done
  shift
  local logf=$LOGS/$name.log
  echo "==== $(date -Is) starting $name" >>"$logf"
  # fd 9 is the state lock; the service must not keep it.
  (cd "$STATE" && exec setsid "$@" </dev/null >>"$logf" 2>&1 9>&-) &
  local pid=$!
  local start
  start=$(proc_starttime "$pid") || start=0
  echo "$pid $start" >"$RUN/$name.pid"
}

# fail NAME MESSAGE prints the end of the service's log and exits.
fail() {
  local name=$1 logf=$LOGS/$1.log
  shift
  err "$name: $*"
  if [[ -f $logf ]]; then
    err "$name: last lines of $logf:"
    tail -n 40 "$logf" | sed 's/^/    /' >&2
  fi
  exit 1
}

# wait_until NAME WHAT COMMAND... polls COMMAND until it succeeds. It gives up
# when the service's process exits or after TIMEOUT seconds.
wait_until() {
  local name=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    service_pid "$name" >/dev/null || fail "$name" "exited before $what"
    ((SECONDS < deadline)) || fail "$name" "not $what after ${TIMEOUT}s"
    sleep 0.3
  done
}

http_ok() { # URL [CAFILE]
  local args=(--silent --fail --output /dev/null --max-time 5)
  [[ -n ${2:-} ]] && args+=(--cacert "$2")
  curl "${args[@]}" "$1"
}

# stop_services NAME... stops these services together. Each leader (the
# recorded pid; every service starts as the leader of its own process group)
# gets TERM and shuts its children down itself, as uwsgi's master and the
# RabbitMQ wrapper do. Whatever is left of a group after 20 s gets TERM, and
# after 30 s KILL.
stop_services() {
  local name pid start=$SECONDS left phase=0
  local -A pids=()
  for name in "$@"; do
    if pid=$(service_pid "$name"); then
      pids[$name]=$pid
      kill -TERM "$pid" 2>/dev/null || true
    else
      rm -f "$RUN/$name.pid"
    fi
  done
  while :; do
    left=()
    for name in "${!pids[@]}"; do
      group_alive "${pids[$name]}" && left+=("$name")
    done
    ((${#left[@]} == 0)) && break
    if ((phase == 0 && SECONDS - start >= 20)); then
      phase=1
      for name in "${left[@]}"; do
        err "$name: still running after 20s, sending TERM to its process group"
        kill -TERM -- "-${pids[$name]}" 2>/dev/null || true
      done
    elif ((phase == 1 && SECONDS - start >= 30)); then
      for name in "${left[@]}"; do
        err "$name: still running after 30s, sending KILL to its process group"
        kill -KILL -- "-${pids[$name]}" 2>/dev/null || true
      done
      break
    fi
    sleep 0.2
  done
  for name in "${!pids[@]}"; do
    rm -f "$RUN/$name.pid"
    log "$name: stopped (pid ${pids[$name]})"
  done
}

# ---------------------------------------------------------------- state

secret() { # NAME prints the secret, creating it once
  local file=$SECRETS/$1
  if [[ ! -s $file ]]; then
    (umask 077 && openssl rand -hex 24 >"$file.tmp" && mv "$file.tmp" "$file")
  fi
  cat "$file"
}

# write_file PATH writes stdin to PATH with mode 0600, atomically.
write_file() {
  (umask 077 && cat >"$1.tmp" && mv -f "$1.tmp" "$1")
}

# make_tls DIR NAME [EKU] creates a CA and a server certificate for 127.0.0.1
# and localhost, once. The CA key never leaves DIR. EKU is the server
# certificate's extended key usage, serverAuth unless given.
make_tls() {
  local dir=$1 name=$2 eku=${3:-serverAuth}
  [[ -s $dir/server.crt && -s $dir/ca.crt && -s $dir/server.key ]] && return 0
  mkdir -p "$dir"
  chmod 0700 "$dir"
  (
    umask 077
    cd "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
      -keyout ca.key -out ca.crt -subj "/O=Anvil local test/CN=Anvil $name CA" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  )
  issue_cert "$dir" server localhost "$eku" "IP:127.0.0.1,DNS:localhost"
  chmod 0644 "$dir/ca.crt" "$dir/server.crt"
}

# issue_cert DIR NAME CN EKU [SAN] signs DIR/NAME.crt, with its key
# DIR/NAME.key, by the CA in DIR.
issue_cert() {
  local dir=$1 name=$2 cn=$3 eku=$4 san=${5:-}
  (
    umask 077
    cd "$dir"
    openssl req -new -newkey rsa:2048 -nodes -sha256 \
      -keyout "$name.key" -out "$name.csr" -subj "/O=Anvil local test/CN=$cn" 2>/dev/null
    printf '%s\n' "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=$eku" >"$name.ext"
    if [[ -n $san ]]; then
      echo "subjectAltName=$san" >>"$name.ext"
    fi
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
      -sha256 -days 3650 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm -f "$name.csr" "$name.ext" ca.srl
  )
}

# pkg_version PACKAGE, for markers that redo a schema sync after an upgrade.
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }

marker_is() { [[ -f $1 && $(cat "$1") == "$2" ]]; }

prepare_state() {
  mkdir -p "$STATE"
  chmod 0700 "$STATE"
  mkdir -p "$RUN" "$LOGS" "$SECRETS" "$STATE"/{mariadb,rabbitmq,keystone,placement,nova,ovn,neutron}
  chmod 0700 "$SECRETS"
  local missing
  mapfile -t missing < <(missing_packages)
  if [[ ${#missing[@]} -ne 0 ]]; then
    err "packages are missing: ${missing[*]}"
    err "run: $0 install"
    exit 1
  fi
  make_tls "$STATE/rabbitmq/tls" RabbitMQ
  make_tls "$STATE/keystone/tls" Keystone
  make_ovn_pki
  cp -f "$STATE/rabbitmq/tls/ca.crt" "$STATE/rabbitmq/ca.crt"
  cp -f "$STATE/keystone/tls/ca.crt" "$STATE/keystone-ca.crt"
}

db_url() { # USER DATABASE
  echo "mysql+pymysql://$1:$(secret "db-$1")@$HOST:$MARIADB_PORT/$2?charset=utf8mb4"
}

# ---------------------------------------------------------------- MariaDB

MARIADB_DIR=$STATE/mariadb
MARIADB_SOCKET=$MARIADB_DIR/mariadb.sock

mariadb_sql() {
  mariadb --no-defaults --socket="$MARIADB_SOCKET" --user="$(id -un)" --batch --skip-column-names
}

start_mariadb() {
  if ! service_pid mariadb >/dev/null; then
    if [[ ! -d $MARIADB_DIR/data/mysql ]]; then
      log "mariadb: creating the data directory"
      rm -rf "$MARIADB_DIR/data"
      mkdir -p "$MARIADB_DIR/data"
      mariadb-install-db --no-defaults --datadir="$MARIADB_DIR/data" --user="$(id -un)" \
        --auth-root-authentication-method=socket --skip-test-db >>"$LOGS/mariadb.log" 2>&1 ||
        fail mariadb "mariadb-install-db failed"
    fi
    mkdir -p "$MARIADB_DIR/tmp"
    launch mariadb "$MARIADB_PORT" -- /usr/sbin/mariadbd --no-defaults \
      --datadir="$MARIADB_DIR/data" --tmpdir="$MARIADB_DIR/tmp" \
      --socket="$MARIADB_SOCKET" --pid-file="$MARIADB_DIR/mariadbd.pid" \
      --bind-address=$HOST --port="$MARIADB_PORT" --user="$(id -un)" \
      --skip-name-resolve --max-connections=500 \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
      --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 \
      --performance-schema=OFF
    log "mariadb: started on $HOST:$MARIADB_PORT"
  fi
  wait_until mariadb "accepting connections" mariadb-admin --no-defaults \
    --socket="$MARIADB_SOCKET" --user="$(id -un)" ping
  # Databases and users; the statements are idempotent and go through stdin.
  {
    local db user
    for db in keystone placement nova_api nova nova_cell0 neutron; do
      echo "CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4;"
    done
    for user in keystone placement nova neutron; do
      for h in 127.0.0.1 localhost; do
        echo "CREATE USER IF NOT EXISTS '$user'@'$h' IDENTIFIED BY '$(secret "db-$user")';"
        echo "ALTER USER '$user'@'$h' IDENTIFIED BY '$(secret "db-$user")';"
      done
    done
    for h in 127.0.0.1 localhost; do
      echo "GRANT ALL PRIVILEGES ON keystone.* TO 'keystone'@'$h';"
      echo "GRANT ALL PRIVILEGES ON placement.* TO 'placement'@'$h';"
      echo "GRANT ALL PRIVILEGES ON neutron.* TO 'neutron'@'$h';"
      for db in nova_api nova nova_cell0; do
        echo "GRANT ALL PRIVILEGES ON \`$db\`.* TO 'nova'@'$h';"
      done
    done
  } | mariadb_sql >>"$LOGS/mariadb.log" 2>&1 || fail mariadb "creating the databases failed"
}

# ---------------------------------------------------------------- RabbitMQ

RABBITMQ_DIR=$STATE/rabbitmq
RABBITMQ_BIN=/usr/lib/rabbitmq/bin

rabbitmq_env() {
  echo HOME="$RABBITMQ_DIR/home"
  echo ERL_EPMD_ADDRESS=$HOST
  echo ERL_EPMD_PORT="$EPMD_PORT"
  echo RABBITMQ_NODENAME=$RABBITMQ_NODE
  echo RABBITMQ_USE_LONGNAME=false
  echo RABBITMQ_CONF_ENV_FILE="$RABBITMQ_DIR/rabbitmq-env.conf"
  echo RABBITMQ_CONFIG_FILE="$RABBITMQ_DIR/rabbitmq.conf"
  echo RABBITMQ_ADVANCED_CONFIG_FILE="$RABBITMQ_DIR/advanced.config"
  echo RABBITMQ_ENABLED_PLUGINS_FILE="$RABBITMQ_DIR/enabled_plugins"
  echo RABBITMQ_MNESIA_BASE="$RABBITMQ_DIR/mnesia"
  echo RABBITMQ_LOG_BASE="$LOGS"
  echo RABBITMQ_LOGS=-
  echo RABBITMQ_PID_FILE="$RABBITMQ_DIR/rabbitmq.pid"
  echo ERL_CRASH_DUMP="$LOGS/erl_crash.dump"
  echo RABBITMQ_DIST_PORT="$RABBITMQ_DIST_PORT"
  echo "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}"
}

rabbitmqctl() {
  local -a envs
  mapfile -t envs < <(rabbitmq_env)
  env "${envs[@]}" "$RABBITMQ_BIN/rabbitmqctl" -n "$RABBITMQ_NODE" "$@"
}

start_epmd() {
  service_pid epmd >/dev/null && return 0
  launch epmd "$EPMD_PORT" -- /usr/bin/epmd -address $HOST -port "$EPMD_PORT"
  wait_until epmd "listening" port_open "$EPMD_PORT"
  log "epmd: started on $HOST:$EPMD_PORT"
}

write_rabbitmq_config() {
  mkdir -p "$RABBITMQ_DIR/home" "$RABBITMQ_DIR/mnesia"
  local cookie=$RABBITMQ_DIR/home/.erlang.cookie
  if [[ ! -s $cookie ]]; then
    (umask 077 && secret erlang-cookie | tr -d '\n' >"$cookie")
    chmod 0400 "$cookie"
  fi
  : >"$RABBITMQ_DIR/rabbitmq-env.conf"
  # The management plugin serves the HTTP API a ControlPlane's
  # brokerAdminSecretRef names; its statistics are off, which nothing here
  # reads and which would cost CPU on every node event.
  echo "[rabbitmq_management]." >"$RABBITMQ_DIR/enabled_plugins"
  write_file "$RABBITMQ_DIR/rabbitmq.conf" <<CONF
# Written by hack/openstack/openstack.sh; regenerated on every start.
listeners.tcp.1 = $HOST:$RABBITMQ_PORT
listeners.ssl.1 = $HOST:$RABBITMQ_TLS_PORT
ssl_options.cacertfile = $RABBITMQ_DIR/tls/ca.crt
ssl_options.certfile = $RABBITMQ_DIR/tls/server.crt
ssl_options.keyfile = $RABBITMQ_DIR/tls/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
log.console = true
log.console.level = info
log.file = false
management.ssl.port = $RABBITMQ_MGMT_PORT
management.ssl.ip = $HOST
management.ssl.cacertfile = $RABBITMQ_DIR/tls/ca.crt
management.ssl.certfile = $RABBITMQ_DIR/tls/server.crt
management.ssl.keyfile = $RABBITMQ_DIR/tls/server.key
management.disable_stats = true
management_agent.disable_metrics_collector = true
CONF
}

start_rabbitmq() {
  service_pid rabbitmq >/dev/null && return 0
  write_rabbitmq_config
  local -a envs
  mapfile -t envs < <(rabbitmq_env)
  launch rabbitmq "$RABBITMQ_PORT" "$RABBITMQ_TLS_PORT" "$RABBITMQ_DIST_PORT" "$RABBITMQ_MGMT_PORT" -- \
    env "${envs[@]}" "$RABBITMQ_BIN/rabbitmq-server"
  log "rabbitmq: started on $HOST:$RABBITMQ_PORT (plain), $HOST:$RABBITMQ_TLS_PORT (TLS) and $HOST:$RABBITMQ_MGMT_PORT (management, TLS)"
}

finish_rabbitmq() {
  wait_until rabbitmq "listening on $RABBITMQ_PORT" port_open "$RABBITMQ_PORT"
  wait_until rabbitmq "listening on $RABBITMQ_TLS_PORT" port_open "$RABBITMQ_TLS_PORT"
  local pw users marker=$RABBITMQ_DIR/mnesia/.anvil-nova-user quorum=$RABBITMQ_DIR/mnesia/.anvil-quorum-queues
  # Every Nova service uses quorum queues, as the compute contract makes the
  # computes do; their exchanges are durable. A vhost that classic queues
  # declared earlier holds non-durable exchanges of the same names, which a
  # durable declaration fails against, so it is recreated once.
  if ! marker_is "$quorum" 1; then
    log "rabbitmq: recreating vhost / for quorum queues"
    rabbitmqctl delete_vhost / >>"$LOGS/rabbitmq.log" 2>&1 || true
    rabbitmqctl add_vhost / >>"$LOGS/rabbitmq.log" 2>&1 || fail rabbitmq "creating vhost / failed"
    rm -f "$marker"
    echo 1 >"$quorum"
  fi
  pw=$(secret rabbitmq-nova)
  if ! marker_is "$marker" "$(sha256sum <<<"$pw" | cut -c1-16)"; then
    # Captured first: grep -q would close the pipe early under pipefail.
    users=$(rabbitmqctl list_users --silent 2>>"$LOGS/rabbitmq.log") || fail rabbitmq "listing users failed"
    if grep -q '^nova[[:space:]]' <<<"$users"; then
      printf '%s\n' "$pw" | rabbitmqctl change_password nova >>"$LOGS/rabbitmq.log" 2>&1 ||
        fail rabbitmq "setting the password of user nova failed"
    else
      printf '%s\n' "$pw" | rabbitmqctl add_user nova >>"$LOGS/rabbitmq.log" 2>&1 ||
        fail rabbitmq "creating user nova failed"
    fi
    rabbitmqctl set_permissions -p / nova '.*' '.*' '.*' >>"$LOGS/rabbitmq.log" 2>&1 ||
      fail rabbitmq "granting user nova the vhost / failed"
    sha256sum <<<"$pw" | cut -c1-16 >"$marker"
  fi
  finish_rabbitmq_admin
  echo "rabbit://nova:$pw@$HOST:$RABBITMQ_PORT/" | write_file "$STATE/transport_url"
  echo "rabbit://nova:$pw@$HOST:$RABBITMQ_TLS_PORT/" | write_file "$STATE/transport_url_tls"
}

# finish_rabbitmq_admin gives the management API an administrator,
# anvil-admin, whose password is the secret rabbitmq-admin: what a
# ControlPlane's brokerAdminSecretRef holds on the devstack and in tests.
finish_rabbitmq_admin() {
  wait_until rabbitmq "listening on $RABBITMQ_MGMT_PORT" port_open "$RABBITMQ_MGMT_PORT"
  local pw users marker=$RABBITMQ_DIR/mnesia/.anvil-admin-user
  pw=$(secret rabbitmq-admin)
  marker_is "$marker" "$(sha256sum <<<"$pw" | cut -c1-16)" && return 0
  users=$(rabbitmqctl list_users --silent 2>>"$LOGS/rabbitmq.log") || fail rabbitmq "listing users failed"
  if grep -q '^anvil-admin[[:space:]]' <<<"$users"; then
    printf '%s\n' "$pw" | rabbitmqctl change_password anvil-admin >>"$LOGS/rabbitmq.log" 2>&1 ||
      fail rabbitmq "setting the password of user anvil-admin failed"
  else
    printf '%s\n' "$pw" | rabbitmqctl add_user anvil-admin >>"$LOGS/rabbitmq.log" 2>&1 ||
      fail rabbitmq "creating user anvil-admin failed"
  fi
  rabbitmqctl set_user_tags anvil-admin administrator >>"$LOGS/rabbitmq.log" 2>&1 ||
    fail rabbitmq "tagging user anvil-admin administrator failed"
  sha256sum <<<"$pw" | cut -c1-16 >"$marker"
}

# cmd_bus_user add|delete NAME manages a broker user besides nova. The
# password comes on stdin, so it is never an argument of any process.
cmd_bus_user() {
  local action=${1:-} name=${2:-} pw
  [[ $action =~ ^(add|delete)$ && $name =~ ^[a-z][a-z0-9-]*$ && $name != nova ]] ||
    { err "usage: bus-user add|delete NAME (lower case, not nova); add reads the password on stdin"; exit 2; }
  service_pid rabbitmq >/dev/null || { err "run openstack.sh start first"; exit 1; }
  if [[ $action == delete ]]; then
    rabbitmqctl delete_user "$name" >>"$LOGS/rabbitmq.log" 2>&1 || true
    return 0
  fi
  IFS= read -r pw || true
  [[ -n $pw ]] || { err "bus-user add: no password on stdin"; exit 2; }
  # Captured first: grep -q would close the pipe early under pipefail.
  local users
  users=$(rabbitmqctl list_users --silent 2>>"$LOGS/rabbitmq.log") || fail rabbitmq "listing users failed"
  if grep -q "^$name[[:space:]]" <<<"$users"; then
    printf '%s\n' "$pw" | rabbitmqctl change_password "$name" >>"$LOGS/rabbitmq.log" 2>&1 ||
      fail rabbitmq "setting the password of user $name failed"
  else
    printf '%s\n' "$pw" | rabbitmqctl add_user "$name" >>"$LOGS/rabbitmq.log" 2>&1 ||
      fail rabbitmq "creating user $name failed"
  fi
  rabbitmqctl set_permissions -p / "$name" '.*' '.*' '.*' >>"$LOGS/rabbitmq.log" 2>&1 ||
    fail rabbitmq "granting user $name the vhost / failed"
  log "rabbitmq: user $name may use vhost /"
}

# cmd_service_password nova rotates the nova service user's password. Of
# the set's own services only neutron-server holds it (its [nova] section),
# so only neutron-server restarts, against the central it used before. The
# reference Nova, when it runs, keeps the old password until its next start.
cmd_service_password() {
  local user=${1:-} pw
  [[ $user == nova ]] || { err "usage: service-password nova, with the password on stdin"; exit 2; }
  IFS= read -r pw || true
  [[ $pw =~ ^[A-Za-z0-9._~-]{16,}$ ]] ||
    { err "service-password: give 16 or more characters of A-Z a-z 0-9 . _ ~ - on stdin"; exit 2; }
  lock_state
  service_pid keystone >/dev/null || { err "run openstack.sh start first"; exit 1; }
  printf '%s\n' "$pw" | write_file "$SECRETS/keystone-$user"
  # The catalog's marker hashes the secret files, so this resets the
  # password in Keystone, which refuses the old one from then on.
  register_catalog
  if service_pid neutron-server >/dev/null; then
    stop_services neutron-server
    write_neutron_config
    start_neutron
    finish_neutron
  fi
  log "keystone: user $user has its new password"
}

# ---------------------------------------------------------------- Glance stub

# One fixed image, enough to boot a server on nova-compute's fake driver,
# plus the images clients create (anvil-dev devstack fixtures makes
# cirros-kvm). Those live in <state>/image-stub/images.json, so a restart
# keeps them.
start_image_stub() {
  service_pid image-stub >/dev/null && return 0
  launch image-stub "$IMAGE_PORT" -- $PY "$HERE/image-stub.py" --host $HOST --port "$IMAGE_PORT" \
    --state "$STATE/image-stub"
  log "image-stub: started on $IMAGE_URL"
}

# ---------------------------------------------------------------- OVN central

# Neutron's ML2/OVN driver writes networks and ports into an OVN Northbound
# database and learns the chassis from the Southbound one. The set runs a
# small central of its own for it: one NB and one SB ovsdb-server, each a
# one-member Raft cluster as an OVNCentral's members are, and ovn-northd, all
# on 127.0.0.1 with mutual TLS. They take about 13 MiB and start in a
# quarter of a second. start-neutron can point Neutron at another central;
# this one keeps running then, since it costs next to nothing.

OVN_DIR=$STATE/ovn
# The CA, with its key, and the members' server certificate.
OVN_TLS=$OVN_DIR/tls
# northd's, Neutron's and the test chassis' client certificate, under
# cert-manager's file names: the shape start-neutron --tls-dir takes.
OVN_CLIENT_TLS=$OVN_DIR/client
OVN_CLIENT_ARGS=(--private-key="$OVN_CLIENT_TLS/tls.key" --certificate="$OVN_CLIENT_TLS/tls.crt"
  --ca-cert="$OVN_CLIENT_TLS/ca.crt")

# The OVS and OVN programs put what they are not told about into these
# directories; none of it may land in the host's /var/run/openvswitch or
# /etc/ovn.
ovn_env() {
  local v
  for v in OVS_RUNDIR OVS_LOGDIR OVS_DBDIR OVS_SYSCONFDIR OVN_RUNDIR OVN_LOGDIR OVN_DBDIR OVN_SYSCONFDIR; do
    echo "$v=$OVN_DIR"
  done
}

# make_ovn_pki makes the central's CA and certificates, once. OVS checks the
# extended key usage of every certificate but not its name, and the members
# of a Raft cluster dial each other with their server certificate, so that
# one carries clientAuth as well as serverAuth, as an OVNCentral's do. A new
# CA gets a new client certificate.
make_ovn_pki() {
  make_tls "$OVN_TLS" OVN serverAuth,clientAuth
  if [[ -s $OVN_CLIENT_TLS/tls.crt && -s $OVN_CLIENT_TLS/tls.key ]] &&
    cmp -s "$OVN_TLS/ca.crt" "$OVN_CLIENT_TLS/ca.crt"; then
    return 0
  fi
  mkdir -p "$OVN_CLIENT_TLS"
  chmod 0700 "$OVN_CLIENT_TLS"
  issue_cert "$OVN_TLS" client anvil-ovn-client clientAuth
  mv -f "$OVN_TLS/client.key" "$OVN_CLIENT_TLS/tls.key"
  mv -f "$OVN_TLS/client.crt" "$OVN_CLIENT_TLS/tls.crt"
  cp -f "$OVN_TLS/ca.crt" "$OVN_CLIENT_TLS/ca.crt"
  chmod 0644 "$OVN_CLIENT_TLS/tls.crt" "$OVN_CLIENT_TLS/ca.crt"
}

start_ovn_db() { # nb | sb
  local db=$1 name=ovn-$1 port raft schema file=$OVN_DIR/$1.db
  service_pid "$name" >/dev/null && return 0
  if [[ $db == nb ]]; then
    port=$OVN_NB_PORT raft=$OVN_NB_RAFT_PORT schema=/usr/share/ovn/ovn-nb.ovsschema
  else
    port=$OVN_SB_PORT raft=$OVN_SB_RAFT_PORT schema=/usr/share/ovn/ovn-sb.ovsschema
  fi
  # A clustered database records its member's Raft address, and its schema
  # is the package's. One made for other ports or an older OVN is made
  # again: it holds only what Neutron wrote, and Neutron writes it again
  # when it starts (neutron_sync_mode = repair).
  local want
  want="ssl:$HOST:$raft $(pkg_version ovn-central)"
  if [[ -e $file ]] && ! marker_is "$file.made" "$want"; then
    log "$name: making the database again for ${want}"
    rm -f "$file" "$file.made"
  fi
  if [[ ! -e $file ]]; then
    ovsdb-tool create-cluster "$file" "$schema" "ssl:$HOST:$raft" >>"$LOGS/$name.log" 2>&1 ||
      fail "$name" "ovsdb-tool create-cluster failed"
    echo "$want" >"$file.made"
  fi
  local -a envs
  mapfile -t envs < <(ovn_env)
  launch "$name" "$port" "$raft" -- env "${envs[@]}" /usr/sbin/ovsdb-server "$file" \
    --remote="pssl:$port:$HOST" --remote="punix:$OVN_DIR/$db.sock" --unixctl="$OVN_DIR/$db.ctl" \
    --private-key="$OVN_TLS/server.key" --certificate="$OVN_TLS/server.crt" --ca-cert="$OVN_TLS/ca.crt" \
    -vconsole:info -vsyslog:off
  log "$name: started on ssl:$HOST:$port (Raft on $raft)"
}

start_ovn_northd() {
  service_pid ovn-northd >/dev/null && return 0
  local -a envs
  mapfile -t envs < <(ovn_env)
  launch ovn-northd -- env "${envs[@]}" /usr/bin/ovn-northd \
    --ovnnb-db="$OVN_NB" --ovnsb-db="$OVN_SB" "${OVN_CLIENT_ARGS[@]}" \
    --unixctl="$OVN_DIR/northd.ctl" -vconsole:info -vsyslog:off
  log "ovn-northd: started"
}

start_ovn() {
  start_ovn_db nb
  start_ovn_db sb
  start_ovn_northd
}

# ovn_db_serves ADDRESS DATABASE: the member serves DATABASE over TLS to the
# client certificate.
ovn_db_serves() {
  ovsdb-client --timeout=5 "${OVN_CLIENT_ARGS[@]}" list-dbs "$1" | grep -qx "$2"
}

ovn_northd_active() {
  ovn-appctl --timeout=5 -t "$OVN_DIR/northd.ctl" status | grep -q 'Status: active'
}

finish_ovn() {
  wait_until ovn-nb "serving OVN_Northbound on $OVN_NB" ovn_db_serves "$OVN_NB" OVN_Northbound
  wait_until ovn-sb "serving OVN_Southbound on $OVN_SB" ovn_db_serves "$OVN_SB" OVN_Southbound
  wait_until ovn-northd "active" ovn_northd_active
}

# ---------------------------------------------------------------- Neutron

NEUTRON_DIR=$STATE/neutron
NEUTRON_CONF=$NEUTRON_DIR/neutron.conf
# start-neutron --nb/--sb/--tls-dir records another central here as
# NB=, SB=, TLS_DIR= and TLS_SHA256= lines. stop removes it, because the
# central it names may be gone by the next start.
NEUTRON_TARGET=$NEUTRON_DIR/ovn-target

# neutron_target sets N_NB, N_SB and N_TLS: the OVN databases and the client
# certificate directory neutron-server uses.
neutron_target() {
  N_NB=$OVN_NB N_SB=$OVN_SB N_TLS=$OVN_CLIENT_TLS
  [[ -f $NEUTRON_TARGET ]] || return 0
  local key value
  while IFS='=' read -r key value; do
    case $key in
      NB) N_NB=$value ;;
      SB) N_SB=$value ;;
      TLS_DIR) N_TLS=$value ;;
    esac
  done <"$NEUTRON_TARGET"
}

write_neutron_config() {
  neutron_target
  mkdir -p "$NEUTRON_DIR/state" "$NEUTRON_DIR/lock"
  cp -f /etc/neutron/api-paste.ini "$NEUTRON_DIR/api-paste.ini"
  write_file "$NEUTRON_CONF" <<CONF
# Written by hack/openstack/openstack.sh; regenerated on every start.
[DEFAULT]
bind_host = $HOST
bind_port = $NEUTRON_PORT
core_plugin = ml2
service_plugins = ovn-router
auth_strategy = keystone
api_paste_config = $NEUTRON_DIR/api-paste.ini
state_path = $NEUTRON_DIR/state
use_stderr = true
# One API worker: about 320 MiB for the whole server as it is.
api_workers = 1
rpc_workers = 0
rpc_state_report_workers = 0
# stop gives a service 20 s before it signals the whole group.
graceful_shutdown_timeout = 5
# Nothing speaks RPC to neutron-server under ML2/OVN: ovn-controller and the
# OVN metadata agent read the Southbound database, and no DHCP, L3 or OVS
# agent runs. oslo.messaging's in-memory driver keeps Neutron off the shared
# RabbitMQ, whose vhost belongs to Nova.
transport_url = fake:/
# Port events reach Nova (network-vif-plugged, network-vif-deleted) as in a
# real cloud, so that a server booted with a port sees it become active.
# Neutron finds Nova in the catalog; while no compute endpoint is registered
# it logs the failure and drops the event, which changes nothing else.
notify_nova_on_port_status_changes = true
notify_nova_on_port_data_changes = true

[database]
connection = $(db_url neutron neutron)

[oslo_concurrency]
lock_path = $NEUTRON_DIR/lock

[oslo_messaging_notifications]
driver = noop

$(authtoken_section neutron)

$(keystone_user_section nova neutron)
endpoint_type = internal

[ml2]
mechanism_drivers = ovn
type_drivers = local,flat,vlan,geneve
tenant_network_types = geneve
extension_drivers = port_security
overlay_ip_version = 4

[ml2_type_geneve]
vni_ranges = 1:65536
max_header_size = 38

[ovn]
ovn_nb_connection = $N_NB
ovn_nb_private_key = $N_TLS/tls.key
ovn_nb_certificate = $N_TLS/tls.crt
ovn_nb_ca_cert = $N_TLS/ca.crt
ovn_sb_connection = $N_SB
ovn_sb_private_key = $N_TLS/tls.key
ovn_sb_certificate = $N_TLS/tls.crt
ovn_sb_ca_cert = $N_TLS/ca.crt
ovn_metadata_enabled = true
ovsdb_connection_timeout = 30
# On start Neutron makes the Northbound database match its own: a new or
# remade central, or one start-neutron names, gets Neutron's networks and
# ports, and loses what Neutron does not know.
neutron_sync_mode = repair
CONF
}

# neutron_db_current: the schema was migrated for this package and the
# database still has it (a new MariaDB data directory does not).
neutron_db_current() {
  marker_is "$NEUTRON_DIR/.db-synced" "$(pkg_version neutron-common)" &&
    [[ $(echo "SELECT COUNT(*) FROM neutron.alembic_version;" | mariadb_sql 2>/dev/null) -gt 0 ]]
}

# The migrations take about 17 s on the first start. They need only MariaDB,
# so they run while Keystone and Placement start. The child keeps the state
# lock: a start that fails meanwhile leaves the next one waiting for the
# migrations instead of running them twice.
NEUTRON_SYNC_PID=""
begin_neutron_db_sync() {
  service_pid neutron-server >/dev/null && return 0
  neutron_db_current && return 0
  log "neutron: migrating the database"
  echo "==== $(date -Is) neutron-db-manage upgrade heads" >>"$LOGS/neutron-manage.log"
  neutron-db-manage --config-file "$NEUTRON_CONF" upgrade heads >>"$LOGS/neutron-manage.log" 2>&1 &
  NEUTRON_SYNC_PID=$!
}

end_neutron_db_sync() {
  [[ -n $NEUTRON_SYNC_PID ]] || return 0
  wait "$NEUTRON_SYNC_PID" || fail neutron-manage "neutron-db-manage upgrade heads failed"
  NEUTRON_SYNC_PID=""
  pkg_version neutron-common >"$NEUTRON_DIR/.db-synced"
}

start_neutron() {
  end_neutron_db_sync
  service_pid neutron-server >/dev/null && return 0
  launch neutron-server "$NEUTRON_PORT" -- /usr/bin/neutron-server --config-file "$NEUTRON_CONF"
  log "neutron-server: started on $NEUTRON_URL against $N_NB"
}

# finish_neutron waits for the API, then for GET /v2.0/agents through the
# catalog as the admin, the request "openstack network agent list" makes.
# ML2/OVN answers it from the Southbound database, so it also proves the
# OVN connections.
finish_neutron() {
  wait_until neutron-server "answering on $NEUTRON_URL" http_ok "$NEUTRON_URL/"
  if ! $PY "$HERE/catalog.py" wait-network --timeout "$TIMEOUT" \
    --auth-url "$KEYSTONE_URL" --admin-password-file "$SECRETS/keystone-admin" --region "$REGION" \
    >>"$LOGS/catalog.log" 2>&1; then
    service_pid neutron-server >/dev/null || fail neutron-server "exited before listing its agents"
    err "neutron-server: GET /v2.0/agents did not succeed; see $LOGS/catalog.log"
    tail -n 5 "$LOGS/catalog.log" | sed 's/^/    /' >&2
    fail neutron-server "not listing its agents"
  fi
  # The API answers before the parent has forked its RPC, maintenance and
  # periodic workers. A stop in that window makes the parent die with a
  # traceback in the log, so start waits for the five processes. Past 30 s
  # it goes on: the API already works.
  local deadline=$((SECONDS + 30))
  until neutron_forked || ((SECONDS >= deadline)); do
    sleep 0.3
  done
}

neutron_forked() {
  local pid
  pid=$(service_pid neutron-server) && (($(pgrep -g "$pid" | wc -l) >= 5))
}

# ---------------------------------------------------------------- uwsgi

# uwsgi_launch NAME WSGI_FILE PROCESSES THREADS SOCKETS... -- ENV...
uwsgi_launch() {
  local name=$1 wsgi=$2 procs=$3 threads=$4
  shift 4
  local -a sockets=() ports=() envargs=()
  local re='^[0-9.]+:([0-9]+)'
  while [[ $1 != -- ]]; do
    sockets+=("$1")
    [[ $1 =~ $re ]] && ports+=("${BASH_REMATCH[1]}")
    shift
  done
  shift
  local e
  for e in "$@"; do envargs+=(--env "$e"); done
  launch "$name" "${ports[@]}" -- /usr/bin/uwsgi --plugin python3 \
    --master --die-on-term --need-app --lazy-apps --enable-threads --thunder-lock \
    --processes "$procs" --threads "$threads" --buffer-size 65535 --listen 100 \
    --procname-prefix-spaced "anvil-$name" \
    --add-header "Connection: close" \
    --no-orphans --skip-atexit-teardown --worker-reload-mercy 10 --reload-mercy 10 \
    "${sockets[@]}" --wsgi-file "$wsgi" "${envargs[@]}"
}

# ---------------------------------------------------------------- Keystone

KEYSTONE_DIR=$STATE/keystone

keystone_manage() {
  keystone-manage --config-file "$KEYSTONE_DIR/keystone.conf" "$@" >>"$LOGS/keystone-manage.log" 2>&1
}

authtoken_section() { # USER
  cat <<CONF
[keystone_authtoken]
www_authenticate_uri = http://$HOST:$KEYSTONE_PORT/
auth_url = http://$HOST:$KEYSTONE_PORT/
auth_type = password
user_domain_name = Default
project_domain_name = Default
project_name = service
username = $1
password = $(secret "keystone-$1")
region_name = $REGION
interface = internal
service_token_roles_required = true
CONF
}

start_keystone() {
  service_pid keystone >/dev/null && return 0
  write_file "$KEYSTONE_DIR/keystone.conf" <<CONF
# Written by hack/openstack/openstack.sh; regenerated on every start.
[DEFAULT]
log_file =
use_stderr = true

[database]
connection = $(db_url keystone keystone)

[token]
provider = fernet

[fernet_tokens]
key_repository = $KEYSTONE_DIR/fernet-keys

[fernet_receipts]
key_repository = $KEYSTONE_DIR/fernet-keys

[credential]
key_repository = $KEYSTONE_DIR/credential-keys

[identity]
# Cheap bcrypt: these are throwaway test passwords, and every password
# authentication pays the hashing cost. 72 is bcrypt's real limit.
password_hash_rounds = 4
max_password_length = 72

[cache]
enabled = true
backend = oslo_cache.dict
CONF
  local marker=$KEYSTONE_DIR/.db-synced
  if ! marker_is "$marker" "$(pkg_version keystone)"; then
    log "keystone: syncing the database"
    keystone_manage db_sync || fail keystone-manage "keystone-manage db_sync failed"
    pkg_version keystone >"$marker"
  fi
  if [[ ! -s $KEYSTONE_DIR/fernet-keys/0 ]]; then
    keystone_manage fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" ||
      fail keystone-manage "keystone-manage fernet_setup failed"
  fi
  if [[ ! -s $KEYSTONE_DIR/credential-keys/0 ]]; then
    keystone_manage credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" ||
      fail keystone-manage "keystone-manage credential_setup failed"
  fi
  marker=$KEYSTONE_DIR/.bootstrapped
  local want
  want="$KEYSTONE_URL $KEYSTONE_PUBLIC_URL $(sha256sum <<<"$(secret keystone-admin)" | cut -c1-16)"
  if ! marker_is "$marker" "$want"; then
    log "keystone: bootstrapping admin and the identity endpoints"
    # The password travels in the environment, which only this user can read.
    OS_BOOTSTRAP_PASSWORD=$(secret keystone-admin) keystone_manage bootstrap \
      --bootstrap-username admin --bootstrap-project-name admin --bootstrap-role-name admin \
      --bootstrap-service-name keystone --bootstrap-region-id "$REGION" \
      --bootstrap-admin-url "$KEYSTONE_URL" --bootstrap-internal-url "$KEYSTONE_URL" \
      --bootstrap-public-url "$KEYSTONE_PUBLIC_URL" ||
      fail keystone-manage "keystone-manage bootstrap failed"
    echo "$want" >"$marker"
  fi
  # One process, so the in-memory cache is the only cache and never stale.
  uwsgi_launch keystone /usr/bin/keystone-wsgi-public 1 8 \
    --http-socket "$HOST:$KEYSTONE_PORT" \
    --https-socket "$HOST:$KEYSTONE_TLS_PORT,$KEYSTONE_DIR/tls/server.crt,$KEYSTONE_DIR/tls/server.key" -- \
    OS_KEYSTONE_CONFIG_DIR="$KEYSTONE_DIR"
  log "keystone: started on $KEYSTONE_URL and $KEYSTONE_PUBLIC_URL"
}

finish_keystone() {
  wait_until keystone "answering on $KEYSTONE_URL" http_ok "$KEYSTONE_URL"
  wait_until keystone "answering on $KEYSTONE_PUBLIC_URL" http_ok "$KEYSTONE_PUBLIC_URL" "$STATE/keystone-ca.crt"
}

# The catalog: service users, services and endpoints. catalog.py is
# idempotent; a marker skips it while nothing it registers has changed.
# The service users hold the role service as well as admin: Nova sends a
# service token with its calls to Neutron, and keystonemiddleware accepts
# one only with that role (service_token_roles_required).
register_catalog() {
  local spec want marker=$STATE/.catalog-registered
  spec=$(
    cat <<JSON
{
  "auth_url": "$KEYSTONE_URL",
  "region": "$REGION",
  "admin_password_file": "$SECRETS/keystone-admin",
  "roles": ["admin", "service"],
  "users": {
    "nova": "$SECRETS/keystone-nova",
    "placement": "$SECRETS/keystone-placement",
    "neutron": "$SECRETS/keystone-neutron"
  },
  "services": [
    {"name": "keystone", "type": "identity", "description": "OpenStack Identity",
     "endpoints": {"public": "$KEYSTONE_PUBLIC_URL", "internal": "$KEYSTONE_URL", "admin": "$KEYSTONE_URL"}},
    {"name": "placement", "type": "placement", "description": "Placement API",
     "endpoints": {"public": "$PLACEMENT_URL", "internal": "$PLACEMENT_URL", "admin": "$PLACEMENT_URL"}},
    {"name": "neutron", "type": "network", "description": "Neutron (ML2/OVN) of hack/openstack",
     "previous_descriptions": ["Neutron stub (empty lists)"],
     "endpoints": {"public": "$NEUTRON_URL", "internal": "$NEUTRON_URL", "admin": "$NEUTRON_URL"}},
    {"name": "glance", "type": "image", "description": "Glance stub (one fake image)",
     "endpoints": {"public": "$IMAGE_URL", "internal": "$IMAGE_URL", "admin": "$IMAGE_URL"}}
  ]
}
JSON
  )
  secret keystone-nova >/dev/null
  secret keystone-placement >/dev/null
  secret keystone-neutron >/dev/null
  want=$(cat "$SECRETS/keystone-admin" "$SECRETS/keystone-nova" "$SECRETS/keystone-placement" \
    "$SECRETS/keystone-neutron" - <<<"$spec" | sha256sum | cut -c1-16)
  marker_is "$marker" "$want" && return 0
  log "keystone: registering service users, services and endpoints"
  $PY "$HERE/catalog.py" register <<<"$spec" >>"$LOGS/catalog.log" 2>&1 ||
    fail catalog "registering the catalog failed"
  echo "$want" >"$marker"
}

# nova_catalog_spec is the reference Nova's catalog entry, for catalog.py
# register and unregister. Its description tells it apart from a compute
# service an Anvil ControlPlane registers.
nova_catalog_spec() {
  cat <<JSON
{
  "auth_url": "$KEYSTONE_URL",
  "region": "$REGION",
  "admin_password_file": "$SECRETS/keystone-admin",
  "users": {},
  "services": [
    {"name": "nova", "type": "compute", "description": "Reference Nova of hack/openstack (start-nova)",
     "previous_descriptions": ["OpenStack Compute"],
     "endpoints": {"public": "$NOVA_URL", "internal": "$NOVA_URL", "admin": "$NOVA_URL"}}
  ]
}
JSON
}

# ---------------------------------------------------------------- Placement

PLACEMENT_DIR=$STATE/placement

start_placement() {
  service_pid placement >/dev/null && return 0
  write_file "$PLACEMENT_DIR/placement.conf" <<CONF
# Written by hack/openstack/openstack.sh; regenerated on every start.
[DEFAULT]
use_stderr = true

[api]
auth_strategy = keystone

[placement_database]
connection = $(db_url placement placement)

$(authtoken_section placement)
CONF
  local marker=$PLACEMENT_DIR/.db-synced
  if ! marker_is "$marker" "$(pkg_version placement-common)"; then
    log "placement: syncing the database"
    placement-manage --config-file "$PLACEMENT_DIR/placement.conf" db sync >>"$LOGS/placement-manage.log" 2>&1 ||
      fail placement-manage "placement-manage db sync failed"
    pkg_version placement-common >"$marker"
  fi
  uwsgi_launch placement /usr/bin/placement-api 1 4 --http-socket "$HOST:$PLACEMENT_PORT" -- \
    OS_PLACEMENT_CONFIG_DIR="$PLACEMENT_DIR"
  log "placement: started on $PLACEMENT_URL"
}

# ---------------------------------------------------------------- Nova

NOVA_DIR=$STATE/nova
NOVA_CONF=$NOVA_DIR/nova.conf

nova_manage() {
  nova-manage --config-file "$NOVA_CONF" "$@" >>"$LOGS/nova-manage.log" 2>&1
}

keystone_user_section() { # SECTION USER
  cat <<CONF
[$1]
auth_type = password
auth_url = http://$HOST:$KEYSTONE_PORT/v3
user_domain_name = Default
project_domain_name = Default
project_name = service
username = $2
password = $(secret "keystone-$2")
region_name = $REGION
valid_interfaces = internal
CONF
}

write_nova_config() {
  mkdir -p "$NOVA_DIR/lock"
  # nova-api reads its paste pipeline from the first of its config files.
  cp -f /etc/nova/api-paste.ini "$NOVA_DIR/api-paste.ini"
  write_file "$NOVA_CONF" <<CONF
# Written by hack/openstack/openstack.sh; regenerated on every start.
# The reference Nova uses the TLS bus with the very URL the Novas Anvil runs
# here use, so cell1's mapping reads the same whoever wrote it last.
[DEFAULT]
transport_url = rabbit://nova:$(secret rabbitmq-nova)@$HOST:$RABBITMQ_TLS_PORT/
my_ip = $HOST
state_path = $NOVA_DIR
use_stderr = true

[api]
auth_strategy = keystone

[api_database]
connection = $(db_url nova nova_api)

[database]
connection = $(db_url nova nova)

[conductor]
workers = 1

[scheduler]
workers = 1
# Hosts are discovered by Anvil's discovery Job, never by the scheduler.
discover_hosts_in_cells_interval = -1

[oslo_concurrency]
lock_path = $NOVA_DIR/lock

# The compute contract runs every compute on quorum queues; the control
# plane must declare the same kind, or the shared exchanges conflict.
[oslo_messaging_rabbit]
rabbit_quorum_queue = true
ssl = true
ssl_ca_file = $RABBITMQ_DIR/ca.crt

$(authtoken_section nova)

$(keystone_user_section placement nova)

$(keystone_user_section neutron nova)

$(keystone_user_section service_user nova)
send_service_user_token = true

[glance]
region_name = $REGION
valid_interfaces = internal
CONF
}

setup_nova_databases() {
  local marker=$NOVA_DIR/.db-synced
  marker_is "$marker" "$(pkg_version nova-common)" && return 0
  log "nova: syncing the databases and mapping the cells"
  nova_manage api_db sync || fail nova-manage "nova-manage api_db sync failed"
  nova_manage cell_v2 map_cell0 || fail nova-manage "nova-manage cell_v2 map_cell0 failed"
  # The cell takes its transport URL and database from nova.conf.
  if [[ $(echo "SELECT COUNT(*) FROM nova_api.cell_mappings WHERE name = 'cell1';" | mariadb_sql) == 0 ]]; then
    nova_manage cell_v2 create_cell --name cell1 || fail nova-manage "nova-manage cell_v2 create_cell failed"
  fi
  nova_manage db sync || fail nova-manage "nova-manage db sync failed"
  pkg_version nova-common >"$marker"
}

# point_cell1 makes cell1's mapping carry this config's bus and database, as
# the cell1 Job of a Nova Anvil runs does for its own: a mapping left on
# another URL would send the API's and the conductor's casts to a listener
# they cannot speak to.
point_cell1() {
  local uuid
  uuid=$(echo "SELECT uuid FROM nova_api.cell_mappings WHERE name = 'cell1';" | mariadb_sql)
  [[ -n $uuid ]] || return 0
  nova_manage cell_v2 update_cell --cell_uuid "$uuid" || fail nova-manage "nova-manage cell_v2 update_cell failed"
}

start_nova_api() {
  service_pid nova-api >/dev/null && return 0
  # Eventlet is patched into nova-api, so it runs single-threaded processes.
  uwsgi_launch nova-api /usr/bin/nova-api-wsgi 2 1 --http-socket "$HOST:$NOVA_API_PORT" -- \
    OS_NOVA_CONFIG_DIR="$NOVA_DIR" "OS_NOVA_CONFIG_FILES=api-paste.ini;nova.conf"
  log "nova-api: started on $NOVA_URL"
}

start_nova_service() { # nova-conductor | nova-scheduler
  service_pid "$1" >/dev/null && return 0
  launch "$1" -- "/usr/bin/$1" --config-file "$NOVA_CONF"
  log "$1: started"
}

# ---------------------------------------------------------------- outputs

write_outputs() {
  neutron_target
  write_file "$STATE/clouds.yaml" <<YAML
# Written by hack/openstack/openstack.sh.
# OS_CLIENT_CONFIG_FILE=$STATE/clouds.yaml openstack --os-cloud anvil ...
clouds:
  anvil:
    auth:
      auth_url: $KEYSTONE_URL
      username: admin
      password: $(secret keystone-admin)
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: $REGION
    interface: internal
    identity_api_version: 3
  anvil-public:
    auth:
      auth_url: $KEYSTONE_PUBLIC_URL
      username: admin
      password: $(secret keystone-admin)
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: $REGION
    interface: public
    identity_api_version: 3
    cacert: $STATE/keystone-ca.crt
YAML
  local v
  for v in "${PORT_VARS[@]}"; do
    local var=${v}_PORT
    echo "ANVIL_OPENSTACK_${v}_PORT=${!var}"
  done | write_file "$STATE/ports.env"
  # Addresses only, no secrets: for scripts and the Go test helper.
  write_file "$STATE/endpoints.env" <<ENV
ANVIL_OPENSTACK_KEYSTONE_URL=$KEYSTONE_URL
ANVIL_OPENSTACK_KEYSTONE_PUBLIC_URL=$KEYSTONE_PUBLIC_URL
ANVIL_OPENSTACK_KEYSTONE_CA=$STATE/keystone-ca.crt
ANVIL_OPENSTACK_PLACEMENT_URL=$PLACEMENT_URL
ANVIL_OPENSTACK_NOVA_URL=$NOVA_URL
ANVIL_OPENSTACK_NEUTRON_URL=$NEUTRON_URL
ANVIL_OPENSTACK_IMAGE_URL=$IMAGE_URL
ANVIL_OPENSTACK_IMAGE_ID=a0a0a0a0-0000-4000-8000-000000000001
ANVIL_OPENSTACK_REGION=$REGION
ANVIL_OPENSTACK_RABBITMQ_HOST=$HOST
ANVIL_OPENSTACK_RABBITMQ_PORT=$RABBITMQ_PORT
ANVIL_OPENSTACK_RABBITMQ_TLS_PORT=$RABBITMQ_TLS_PORT
ANVIL_OPENSTACK_RABBITMQ_CA=$STATE/rabbitmq/ca.crt
ANVIL_OPENSTACK_TRANSPORT_URL_FILE=$STATE/transport_url
ANVIL_OPENSTACK_TRANSPORT_URL_TLS_FILE=$STATE/transport_url_tls
ANVIL_OPENSTACK_RABBITMQ_MANAGEMENT_URL=https://$HOST:$RABBITMQ_MGMT_PORT
ANVIL_OPENSTACK_MARIADB_PORT=$MARIADB_PORT
ANVIL_OPENSTACK_NOVA_CONF=$NOVA_CONF
ANVIL_OPENSTACK_CLOUDS_YAML=$STATE/clouds.yaml
ANVIL_OPENSTACK_OVN_NB=$OVN_NB
ANVIL_OPENSTACK_OVN_SB=$OVN_SB
ANVIL_OPENSTACK_OVN_NB_UNIX=unix:$OVN_DIR/nb.sock
ANVIL_OPENSTACK_OVN_SB_UNIX=unix:$OVN_DIR/sb.sock
ANVIL_OPENSTACK_OVN_TLS_DIR=$OVN_CLIENT_TLS
ANVIL_OPENSTACK_NEUTRON_OVN_NB=$N_NB
ANVIL_OPENSTACK_NEUTRON_OVN_SB=$N_SB
ANVIL_OPENSTACK_NEUTRON_OVN_TLS_DIR=$N_TLS
ENV
}

# ---------------------------------------------------------------- commands

lock_state() {
  mkdir -p "$RUN"
  exec 9>"$RUN/.lock"
  flock -w 600 9 || { err "another openstack.sh holds $RUN/.lock"; exit 1; }
}

cmd_start() {
  local started=$SECONDS
  # The lock comes first: two starts at once must not both make secrets.
  lock_state
  prepare_state
  start_mariadb
  start_epmd
  start_rabbitmq
  start_ovn
  write_neutron_config
  begin_neutron_db_sync
  # neutron-server takes 10 to 20 s to import and fork, and needs nothing
  # of Keystone until a request comes. With its schema in place it starts
  # now, alongside Keystone; on the first start it follows the migrations.
  [[ -n $NEUTRON_SYNC_PID ]] || start_neutron
  start_image_stub
  start_keystone
  start_placement
  finish_keystone
  register_catalog
  finish_rabbitmq
  finish_ovn
  start_neutron
  write_nova_config
  write_outputs
  wait_until image-stub "answering" http_ok "$IMAGE_URL/versions"
  wait_until placement "answering on $PLACEMENT_URL" http_ok "$PLACEMENT_URL/"
  finish_neutron
  log "all services up in $((SECONDS - started))s; state in $STATE"
  log "try: OS_CLIENT_CONFIG_FILE=$STATE/clouds.yaml openstack --os-cloud anvil catalog list"
}

# cmd_start_nova runs the reference Nova on top of a started set.
cmd_start_nova() {
  local started=$SECONDS
  lock_state
  service_pid keystone >/dev/null || { err "run openstack.sh start first"; exit 1; }
  setup_nova_databases
  point_cell1
  start_nova_api
  $PY "$HERE/catalog.py" register <<<"$(nova_catalog_spec)" >>"$LOGS/catalog.log" 2>&1 ||
    fail catalog "registering the reference Nova failed"
  # Both exit when the nova user is missing, so they start after the catalog.
  # A restarted one must report again before it counts as up.
  local since fresh=() s
  since=$(date +%s)
  for s in nova-conductor nova-scheduler; do
    service_pid "$s" >/dev/null || fresh+=("$s")
    start_nova_service "$s"
  done
  wait_until nova-api "answering on $NOVA_URL" http_ok "http://$HOST:$NOVA_API_PORT/"
  if ! $PY "$HERE/catalog.py" wait-compute --timeout "$TIMEOUT" \
    --auth-url "$KEYSTONE_URL" --admin-password-file "$SECRETS/keystone-admin" --region "$REGION" \
    --since "$since" --fresh "${fresh[@]}" >>"$LOGS/catalog.log" 2>&1; then
    for s in "${NOVA_SERVICES[@]}"; do
      service_pid "$s" >/dev/null || fail "$s" "exited"
    done
    err "nova-conductor or nova-scheduler did not report up; see $LOGS/catalog.log"
    tail -n 5 "$LOGS/catalog.log" | sed 's/^/    /' >&2
    fail nova-conductor "compute services not up"
  fi
  log "reference Nova up in $((SECONDS - started))s"
}

# cmd_stop_nova stops the reference Nova and withdraws its catalog entry, so
# that a Nova Anvil runs can register its own.
cmd_stop_nova() {
  lock_state
  stop_services nova-scheduler nova-conductor nova-api
  if service_pid keystone >/dev/null; then
    $PY "$HERE/catalog.py" unregister <<<"$(nova_catalog_spec)" >>"$LOGS/catalog.log" 2>&1 ||
      fail catalog "removing the reference Nova's catalog entry failed"
  fi
}

# cmd_start_neutron restarts neutron-server against the OVN central the
# flags name, or against the set's own without flags.
cmd_start_neutron() {
  local nb="" sb="" tls="" a
  while (($#)); do
    case $1 in
      --nb | --sb | --tls-dir)
        (($# >= 2)) || { err "start-neutron: $1 needs a value"; exit 2; }
        case $1 in --nb) nb=$2 ;; --sb) sb=$2 ;; --tls-dir) tls=$2 ;; esac
        shift 2
        ;;
      --nb=*) nb=${1#*=} && shift ;;
      --sb=*) sb=${1#*=} && shift ;;
      --tls-dir=*) tls=${1#*=} && shift ;;
      *)
        err "start-neutron: unknown argument $1"
        exit 2
        ;;
    esac
  done
  if [[ -n $nb$sb$tls ]]; then
    if [[ -z $nb || -z $sb || -z $tls ]]; then
      err "start-neutron: give --nb, --sb and --tls-dir together, or none of them"
      exit 2
    fi
    # OVS clients take a comma list of members; the central requires TLS.
    for a in ${nb//,/ } ${sb//,/ }; do
      [[ $a =~ ^ssl:.+:[0-9]+$ ]] || { err "start-neutron: $a is not an ssl:HOST:PORT address"; exit 2; }
    done
    [[ -d $tls ]] || { err "start-neutron: $tls is not a directory"; exit 2; }
    tls=$(cd "$tls" && pwd)
    for a in tls.crt tls.key ca.crt; do
      [[ -r $tls/$a ]] || { err "start-neutron: $tls/$a is missing"; exit 2; }
    done
  fi
  local started=$SECONDS want=""
  lock_state
  service_pid mariadb >/dev/null && service_pid keystone >/dev/null ||
    { err "run openstack.sh start first"; exit 1; }
  # The target records the certificate files' digest too: the same paths
  # with a new certificate need a restart, the same target does not.
  if [[ -n $nb ]]; then
    want=$(printf 'NB=%s\nSB=%s\nTLS_DIR=%s\nTLS_SHA256=%s' "$nb" "$sb" "$tls" \
      "$(cat "$tls/tls.crt" "$tls/tls.key" "$tls/ca.crt" | sha256sum | cut -d' ' -f1)")
  fi
  if service_pid neutron-server >/dev/null && [[ $want == "$(cat "$NEUTRON_TARGET" 2>/dev/null)" ]]; then
    # A restart costs about 15 s and drops Neutron's OVN connections, for
    # nothing: a second devstack up asks for the central it already uses.
    neutron_target
    log "neutron-server already runs against $N_NB"
    return 0
  fi
  if [[ -n $nb ]]; then
    printf '%s\n' "$want" | write_file "$NEUTRON_TARGET"
  else
    rm -f "$NEUTRON_TARGET"
  fi
  start_ovn
  finish_ovn
  stop_services neutron-server
  write_neutron_config
  begin_neutron_db_sync
  start_neutron
  write_outputs
  finish_neutron
  log "neutron-server up against $N_NB in $((SECONDS - started))s"
}

cmd_stop() {
  lock_state
  # The API services and Nova first, then the OVN central Neutron used, then
  # the bus, then epmd and the database.
  stop_services nova-scheduler nova-conductor nova-api placement keystone neutron-server image-stub
  stop_services ovn-northd ovn-nb ovn-sb
  stop_services rabbitmq
  stop_services epmd mariadb
  rm -f "$NEUTRON_TARGET"
}

service_ports() {
  case $1 in
    mariadb) echo "$MARIADB_PORT" ;;
    epmd) echo "$EPMD_PORT" ;;
    rabbitmq) echo "$RABBITMQ_PORT,$RABBITMQ_TLS_PORT/tls,$RABBITMQ_MGMT_PORT/mgmt" ;;
    ovn-nb) echo "$OVN_NB_PORT/ssl,$OVN_NB_RAFT_PORT/raft" ;;
    ovn-sb) echo "$OVN_SB_PORT/ssl,$OVN_SB_RAFT_PORT/raft" ;;
    neutron-server)
      neutron_target
      if [[ $N_NB == "$OVN_NB" ]]; then
        echo "$NEUTRON_PORT (OVN: the set's own)"
      else
        echo "$NEUTRON_PORT (OVN: $N_NB)"
      fi
      ;;
    image-stub) echo "$IMAGE_PORT" ;;
    keystone) echo "$KEYSTONE_PORT,$KEYSTONE_TLS_PORT/https" ;;
    placement) echo "$PLACEMENT_PORT" ;;
    nova-api) echo "$NOVA_API_PORT" ;;
    *) echo "-" ;;
  esac
}

cmd_status() {
  local name pid all=0
  for name in "${NOVA_SERVICES[@]}"; do
    if pid=$(service_pid "$name"); then
      printf '%-15s running  pid %-8s port %s\n' "$name" "$pid" "$(service_ports "$name")"
    fi
  done
  for name in "${SERVICES[@]}"; do
    if pid=$(service_pid "$name"); then
      printf '%-15s running  pid %-8s port %s\n' "$name" "$pid" "$(service_ports "$name")"
    else
      printf '%-15s stopped  pid %-8s port %s\n' "$name" "-" "$(service_ports "$name")"
      all=3
    fi
  done
  return $all
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  start-nova) cmd_start_nova ;;
  start-neutron)
    shift
    cmd_start_neutron "$@"
    ;;
  stop-nova) cmd_stop_nova ;;
  bus-user)
    shift
    cmd_bus_user "$@"
    ;;
  service-password)
    shift
    cmd_service_password "$@"
    ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  -h | --help | help) usage ;;
  *)
    usage >&2
    exit 2
    ;;
esac
