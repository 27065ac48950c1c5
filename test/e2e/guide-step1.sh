#!/usr/bin/env bash
# End-to-end check of step 1 of the guide "Connect a compute cluster": on a
# fresh devstack, run the guide's commands as written and check that the
# Nova publishes the remote contract with the URL that was handed over, and
# that the URL shows up nowhere it should not.
#
# The only plumbing around the guide's commands is the kubeconfig: they
# carry no --context, so KUBECONFIG points at the devstack's and its current
# context is the management cluster. The URL goes in on stdin, as a user
# would type it, and never onto a command line.
#
# It uses its own state directory, so it never touches a developer's
# .devstack. With E2E_GUIDE_SHARED set it runs on the devstack in
# E2E_GUIDE_DIR that test/e2e/guide.sh started, and leaves it up.
set -euo pipefail
# Name the command that stopped the script; the text is the script's, with
# its variables unexpanded, so no secret shows.
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $?" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
state="${E2E_GUIDE_DIR:-$root/.devstack-guide-e2e}"
anvil_dev="$root/bin/anvil-dev"
# The guide says `kubectl`; the one in bin/ matches the clusters' version.
export PATH="$root/bin:$PATH"
export KUBECONFIG="$state/kubeconfig"

# The URL handed over. It is made up for this run, but it is treated as the
# credential it stands for: it is never printed, and it reaches commands
# only through stdin or file descriptors, never through their arguments.
password="$(head -c 24 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
url="rabbit://nova:${password}@rabbit.127-0-0-1.nip.io:5671/"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# redact prints stdin with the URL and its password masked, in bash alone
# so neither becomes an argument of another process.
redact() {
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line//"$url"/<redacted-url>}"
    printf '%s\n' "${line//"$password"/<redacted>}"
  done
}

cleanup() {
  local rc=$?
  if [[ $rc != 0 && -f "$state/operator.log" ]]; then
    echo "--- operator log (last 40 lines) ---" >&2
    tail -40 "$state/operator.log" | redact >&2 || true
  fi
  # Under guide.sh the devstack is the caller's, which takes it down.
  [[ -n "${E2E_GUIDE_SHARED:-}" ]] || "$anvil_dev" devstack down --state-dir "$state" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

# contains_secret tells whether a file holds the URL or its password. The
# patterns reach grep through a file descriptor, not its command line.
contains_secret() {
  grep -qF -f <(printf '%s\n%s\n' "$url" "$password") "$1"
}

if [[ -z "${E2E_GUIDE_SHARED:-}" ]]; then
  go build -o "$anvil_dev" ./internal/dev/cmd/anvil-dev
  # A stale stack from an aborted run would hide bugs in `up`.
  "$anvil_dev" devstack down --state-dir "$state" >/dev/null
  # up's output is kept, to check below that it never carries the URL.
  mkdir -p "$state"
  "$anvil_dev" devstack up --state-dir "$state" --compute-clusters 1 | tee "$state/up.log"
fi

kubectl config use-context anvil-mgmt >/dev/null
[[ "$(kubectl config current-context)" == anvil-mgmt ]] || fail "the current context is not anvil-mgmt"

# The guide's prerequisite: the ControlPlane controlplane has projected the
# Nova controlplane-nova. `kubectl wait` in step 1 fails at once on a Nova
# that does not exist yet, so wait for it here.
kubectl get controlplane controlplane -n openstack >/dev/null || fail "up did not create the ControlPlane controlplane"
projected=""
for _ in $(seq 1 120); do
  if kubectl get nova controlplane-nova -n openstack >/dev/null 2>&1; then
    projected=yes
    break
  fi
  sleep 1
done
if [[ -z "$projected" ]]; then
  echo "ControlPlane conditions:" >&2
  kubectl get controlplane controlplane -n openstack \
    -o go-template='{{range .status.conditions}}  {{.type}}={{.status}} {{.reason}}: {{.message}}{{"\n"}}{{end}}' >&2 || true
  fail "the operator does not project the Nova controlplane-nova (is the ControlPlane controller wired into the operator?)"
fi
pass "the ControlPlane controlplane projects the Nova controlplane-nova"

# Admission through the devstack's webhook: the step-1 patch on a bus
# without TLS is refused, and the same patch with TLS is admitted. Both are
# server-side dry runs, so the ControlPlane is not touched.
hooks="$(kubectl get validatingwebhookconfigurations -l app.kubernetes.io/managed-by=anvil-devstack \
  -o go-template='{{range .items}}{{range .webhooks}}{{.clientConfig.url}}{{"\n"}}{{end}}{{end}}')"
if grep -q '/validate-c5c3-io-v1alpha1-controlplane$' <<<"$hooks"; then
  remote='"remoteCompute":{"transportURLSecretRef":{"name":"controlplane-nova-remote-transport"}}'
  if refused="$(kubectl patch controlplane controlplane -n openstack --type merge --dry-run=server \
    -p '{"spec":{"infrastructure":{"messaging":{"tls":null}},"services":{"nova":{'"$remote"'}}}}' 2>&1)"; then
    fail "admission accepted remoteCompute on a bus without tls"
  fi
  # kubectl prints a webhook's field errors without the "denied the
  # request" prefix, so the refusal is recognised by the field it names;
  # the CRD schema has no rule that ties tls to remoteCompute, and a webhook
  # the apiserver cannot reach fails with "failed calling webhook" instead.
  grep -q 'spec\.infrastructure\.messaging\.tls' <<<"$refused" \
    || fail "the refusal does not name spec.infrastructure.messaging.tls: $refused"
  kubectl patch controlplane controlplane -n openstack --type merge --dry-run=server \
    -p '{"spec":{"services":{"nova":{'"$remote"'}}}}' >/dev/null \
    || fail "admission refused remoteCompute on the sample ControlPlane, whose bus has tls"
  pass "the ControlPlane webhook refuses remoteCompute without messaging tls, and admits it with tls"
  # The security review's B4: the admin password goes to the ControlPlane's
  # Keystone, so the operator's --allowed-keystone-hosts decides which one.
  # Its public URL is admitted over https only; another host not at all.
  public="$(kubectl get controlplane controlplane -n openstack -o jsonpath='{.spec.services.keystone.publicEndpoint}')"
  if refused="$(kubectl patch controlplane controlplane -n openstack --type merge --dry-run=server \
    -p '{"spec":{"services":{"keystone":{"internalEndpoint":"'"${public/https:/http:}"'"}}}}' 2>&1)"; then
    fail "admission accepted a plain http Keystone that the operator admits over https only"
  fi
  grep -q 'spec\.services\.keystone\.internalEndpoint.*must use https' <<<"$refused" \
    || fail "the plain http refusal does not name spec.services.keystone.internalEndpoint: $refused"
  if refused="$(kubectl patch controlplane controlplane -n openstack --type merge --dry-run=server \
    -p '{"spec":{"services":{"keystone":{"publicEndpoint":"https://keystone.invalid/v3"}}}}' 2>&1)"; then
    fail "admission accepted a Keystone outside --allowed-keystone-hosts"
  fi
  grep -q 'spec\.services\.keystone\.publicEndpoint.*is not allowed' <<<"$refused" \
    || fail "the allowlist refusal does not name spec.services.keystone.publicEndpoint: $refused"
  pass "the ControlPlane webhook refuses a plain http Keystone and one outside --allowed-keystone-hosts"
else
  # The operator serves this webhook (internal/webhook/controlplane.go) and
  # the devstack registers every path it serves, so its absence is a broken
  # devstack or operator, never a reason to run step 1 unchecked.
  fail "the devstack registered no ControlPlane webhook (/validate-c5c3-io-v1alpha1-controlplane); registered: ${hooks:-none}"
fi

# Step 1, as the guide writes it. The block reads the URL from its stdin,
# which here is a pipe instead of a terminal.
set +e
printf '%s\n' "$url" | (
  set -e
  printf 'external bus URL: '
  IFS= read -r -s REMOTE_TRANSPORT_URL
  printf '\n'
  printf '%s' "$REMOTE_TRANSPORT_URL" | kubectl create secret generic \
    controlplane-nova-remote-transport -n openstack --from-file=transport_url=/dev/stdin
  unset REMOTE_TRANSPORT_URL
  kubectl patch controlplane controlplane -n openstack --type merge \
    -p '{"spec":{"services":{"nova":{"remoteCompute":{"transportURLSecretRef":{"name":"controlplane-nova-remote-transport"}}}}}}'
  kubectl wait nova/controlplane-nova -n openstack --timeout=5m \
    --for=jsonpath='{.status.remoteComputeConfigSecretRef.name}'=controlplane-nova-remote-compute-config
) 2>&1 | redact
rc=("${PIPESTATUS[@]}")
set -e
[[ "${rc[1]}" == 0 ]] || fail "step 1 of the guide failed (exit ${rc[1]})"
pass "step 1 ran as written and the Nova names controlplane-nova-remote-compute-config"

keys="$(kubectl get secret controlplane-nova-remote-compute-config -n openstack \
  -o go-template='{{range $k, $v := .data}}{{$k}}{{"\n"}}{{end}}')"
want_keys="ca.crt
cell_name
metadata_proxy_shared_secret
nova-compute.conf
password
transport_url"
[[ "$keys" == "$want_keys" ]] || fail "the remote contract has the keys [$(tr '\n' ' ' <<<"$keys")], want [$(tr '\n' ' ' <<<"$want_keys")]"
pass "the remote contract has exactly its six keys"

# Compared in the shell; neither value is printed.
handed="$(kubectl get secret controlplane-nova-remote-transport -n openstack -o go-template='{{index .data "transport_url" | base64decode}}')"
[[ "$handed" == "$url" ]] || fail "controlplane-nova-remote-transport does not hold the URL that was typed in"
published="$(kubectl get secret controlplane-nova-remote-compute-config -n openstack -o go-template='{{index .data "transport_url" | base64decode}}')"
[[ "$published" == "$url" ]] || fail "the remote contract's transport_url is not the URL that was handed over"
unset handed published
pass "the remote contract's transport_url is the URL that was handed over"

for f in "$state/operator.log" "$state/up.log"; do
  [[ -f "$f" ]] || fail "$f is missing"
  if contains_secret "$f"; then
    fail "$(basename "$f") contains the handed-over URL or its password"
  fi
done
pass "neither the operator log nor the output of up contains the URL"

if [[ -n "${E2E_GUIDE_SHARED:-}" ]]; then
  # The rest of the guide runs on this devstack with the devstack's own
  # bus, as the URL typed in here leads nowhere: hand the ControlPlane back
  # its in-cluster bus until step 1 runs again there.
  kubectl patch controlplane controlplane -n openstack --type json \
    -p '[{"op":"remove","path":"/spec/services/nova/remoteCompute"}]' >/dev/null
  kubectl delete secret controlplane-nova-remote-transport -n openstack >/dev/null
  trap - EXIT
  echo "guide step 1 e2e: 1 passed, 0 failed"
  exit 0
fi
"$anvil_dev" devstack down --state-dir "$state"
sleep 1
if leftovers="$(pgrep -fa -- "$state")"; then
  fail "processes survived down: $leftovers"
fi
[[ ! -e "$state" ]] || fail "down left $state behind"
pass "down stopped every process and removed the state"
trap - EXIT
echo "guide step 1 e2e: 1 passed, 0 failed"
