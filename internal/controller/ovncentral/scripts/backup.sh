#!/bin/bash
# Backs up both databases to the backup claim and drops backups older than
# the retention. ovsdb-client backup takes a consistent snapshot from any
# member, so the Job dials the whole member list.
set -euo pipefail
tls=(--private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt)
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p /backup
ovsdb-client "${tls[@]}" backup "${OVN_NB_DB}" OVN_Northbound > "/backup/nb-${stamp}.db.tmp"
ovsdb-client "${tls[@]}" backup "${OVN_SB_DB}" OVN_Southbound > "/backup/sb-${stamp}.db.tmp"
mv "/backup/nb-${stamp}.db.tmp" "/backup/nb-${stamp}.db"
mv "/backup/sb-${stamp}.db.tmp" "/backup/sb-${stamp}.db"
find /backup -name '*.db' -mtime "+${BACKUP_RETENTION_DAYS}" -delete
