#!/bin/bash
# Installs this node's chassis identity where ovn-controller and the
# metadata agent on the node read it (docs/design/ovn.md, "Each chassis
# writes only its own rows"). Each file is written beside its place and
# renamed over it, so a reader sees the old file or the new one, never half
# of one; OVS reloads a key and certificate whose files changed. The key is
# readable by root alone.
set -euo pipefail
src=/etc/ovn/identity
dst=/etc/ovn/tls
for f in ca.crt tls.key tls.crt; do
  [[ -s "${src}/${f}" ]] || { echo "the identity Secret carries no ${f}" >&2; exit 1; }
done
install -m 0644 "${src}/ca.crt" "${dst}/.ca.crt.new"
install -m 0600 "${src}/tls.key" "${dst}/.tls.key.new"
install -m 0644 "${src}/tls.crt" "${dst}/.tls.crt.new"
for f in ca.crt tls.key tls.crt; do
  mv -f "${dst}/.${f}.new" "${dst}/${f}"
done
