#!/bin/bash
# Serves the node's Open vSwitch database on its unix socket only; nothing
# off the node talks to it.
set -euo pipefail
exec ovsdb-server /etc/openvswitch/conf.db \
  --remote=punix:/run/openvswitch/db.sock \
  --remote=db:Open_vSwitch,Open_vSwitch,manager_options \
  --pidfile=/run/openvswitch/ovsdb-server.pid \
  --unixctl=/run/openvswitch/ovsdb-server.ctl
