#!/usr/bin/env bash
# leak-census.sh STATE_DIR scans what a devstack's operator made visible for
# every credential the devstack holds, and fails on any hit. It ends each
# e2e run, so every credential a run created or rotated is in the census.
#
# The credentials: every password, token, shared secret and private key in
# the Secrets of every cluster (a URL's password alone, since its user and
# host are no secret), and every secret file of the local OpenStack
# services. The places they must not be: the operator's log and the
# devstack's own output, every event on every cluster, the annotations and
# status of every Anvil object, and the operator's metrics.
#
# No credential is ever an argument of a process or printed: the needles
# go to grep through a file of mode 0600, and a hit is reported by the
# place it was found and the needle's source, never by its value.
set -euo pipefail
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $?" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="${1:?usage: leak-census.sh STATE_DIR}"
export PATH="$root/bin:$PATH" KUBECONFIG="$state/kubeconfig"
os_dir="${ANVIL_OPENSTACK_DIR:-$root/.devstack/openstack}"
work="$(mktemp -d "$state/census.XXXXXX")"
chmod 700 "$work"
trap 'rm -rf "$work"' EXIT

contexts=()
while read -r ctx; do contexts+=("$ctx"); done < <(kubectl config get-contexts -o name)

# Needles: one per line, at least 8 characters, so that a short common
# word stored in a Secret key by chance cannot match everywhere.
for ctx in "${contexts[@]}"; do
  kubectl --context "$ctx" get secrets -A -o json | jq -r '
    .items[] | .data // {} | to_entries[]
    | select(.key | test("pass|token|secret|transport_url|connection|\\.key$|^key$"; "i"))
    | .value | @base64d' >>"$work/values"
  # A registration Secret's kubeconfig carries the compute cluster's token.
  kubectl --context "$ctx" get secrets -A -o json | jq -r '
    .items[] | .data.kubeconfig // empty | @base64d' \
    | sed -nE 's#^[[:space:]]*token:[[:space:]]*"?([^"[:space:]]+)"?[[:space:]]*$#\1#p' >>"$work/values"
done
for f in "$os_dir"/secrets/*; do
  [[ -f "$f" ]] && { cat "$f"; echo; } >>"$work/values"
done
{
  # A URL's password; the rest of a single-line value as it is. Lines of a
  # PEM key are needles too: its base64 body is secret.
  sed -nE 's#^[a-z0-9+]+://[^:/@]*:([^@]+)@.*#\1#p' "$work/values"
  grep -vE '^[a-z0-9+]+://|^-----' "$work/values" || true
} | awk 'length($0) >= 8' | sort -u >"$work/needles"
count="$(wc -l <"$work/needles")"
((count > 0)) || { echo "FAIL: the census found no credential to look for" >&2; exit 1; }

# Haystacks, one file per place.
cp "$state/operator.log" "$work/operator.log"
for f in "$state"/*up.log; do [[ -f "$f" ]] && cat "$f"; done >"$work/devstack-output" || true
for ctx in "${contexts[@]}"; do
  kubectl --context "$ctx" get events -A -o json >"$work/events-$ctx"
done
kinds="$(kubectl --context anvil-mgmt api-resources -o name | grep -E '\.(c5c3\.io|openstack\.c5c3\.io)$' || true)"
for kind in $kinds; do
  kubectl --context anvil-mgmt get "$kind" -A -o json \
    | jq '[.items[] | {name: .metadata.name, annotations: .metadata.annotations, status}]' >"$work/objects-$kind"
done
metrics_addr="$(jq -r '.operator.metricsAddr // empty' "$state/state.json" 2>/dev/null || true)"
if [[ -n "$metrics_addr" ]]; then
  kubectl --context anvil-mgmt create serviceaccount e2e-census -n anvil-system >/dev/null 2>&1 || true
  kubectl --context anvil-mgmt create clusterrolebinding e2e-census --clusterrole=anvil-operator-metrics-reader \
    --serviceaccount=anvil-system:e2e-census >/dev/null 2>&1 || true
  (umask 077; printf 'Authorization: Bearer %s\n' "$(kubectl --context anvil-mgmt create token e2e-census -n anvil-system)" >"$work/headers")
  curl -sfk -H @"$work/headers" "https://$metrics_addr/metrics" >"$work/metrics" \
    || { echo "FAIL: the census could not read the operator's metrics" >&2; exit 1; }
  rm -f "$work/headers"
  # The token just made is a credential of this census, not of the operator.
  kubectl --context anvil-mgmt delete clusterrolebinding e2e-census >/dev/null
  kubectl --context anvil-mgmt delete serviceaccount e2e-census -n anvil-system >/dev/null
fi

hits=0
for hay in "$work"/operator.log "$work"/devstack-output "$work"/events-* "$work"/objects-* "$work"/metrics; do
  [[ -f "$hay" ]] || continue
  n="$(grep -c -F -f "$work/needles" "$hay" || true)"
  if ((n > 0)); then
    echo "FAIL: ${hay##*/} holds a credential on $n line(s)" >&2
    hits=$((hits + n))
  fi
done
((hits == 0)) || exit 1
echo "ok: leak census: none of $count credentials in the operator's log, the devstack's output, events on ${#contexts[@]} clusters, $(wc -w <<<"$kinds") Anvil kinds' status and annotations, or the metrics"
