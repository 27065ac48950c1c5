package podrunner

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Programs of the chassis's maintenance Jobs, from Debian's ovn-common.
const (
	// OVNNbctlPath is Debian's ovn-nbctl.
	OVNNbctlPath = "/usr/bin/ovn-nbctl"
	// OVNSbctlPath is Debian's ovn-sbctl.
	OVNSbctlPath = "/usr/bin/ovn-sbctl"
)

// ovnMaintenanceMappings run a chassis's evacuate and chassis-del Jobs
// (docs/design/ovn.md, "Maintenance Jobs") as this host's OVN clients; the
// apply Job's container is apply-node, which OVNChassisMappings runs.
func ovnMaintenanceMappings() ImageMap {
	return ImageMap{
		{Name: "ovn-evacuate", Match: matchContainerName("evacuate", nil), Build: buildEvacuate},
		{Name: "ovn-chassis-del", Match: matchContainerName("chassis-del", nil), Build: buildChassisDel},
		{Name: "ovn-install-identity", Match: matchContainerName("install-identity", nil), Build: buildInstallIdentity},
	}
}

// buildInstallIdentity copies the node's identity, the Secret mounted at
// /etc/ovn/identity, into the node's identity directory mounted at
// /etc/ovn/tls, as the image's install-identity script does: each file
// written beside its place and renamed over it, the key readable by its
// owner alone.
func buildInstallIdentity(c Container) (Command, error) {
	src, err := mountedDir(c, ovnIdentityDir)
	if err != nil {
		return Command{}, err
	}
	dst, err := mountedDir(c, ovnTLSDir)
	if err != nil {
		return Command{}, err
	}
	script := []string{"set -e"}
	for _, f := range []struct{ name, mode string }{{"ca.crt", "0644"}, {"tls.key", "0600"}, {"tls.crt", "0644"}} {
		tmp := filepath.Join(dst, "."+f.name+".new")
		script = append(script,
			shellLine("install", "-m", f.mode, filepath.Join(src, f.name), tmp),
			shellLine("mv", "-f", tmp, filepath.Join(dst, f.name)))
	}
	return Command{Path: shellPath, Args: []string{"-c", strings.Join(script, "\n")}}, nil
}

// maintenanceArgs returns the translated database address of env and the
// client TLS options, and the chassis's system-id.
func maintenanceArgs(c Container, env string) (db []string, systemID string, err error) {
	if c.Env[env] == "" {
		return nil, "", fmt.Errorf("%s is empty", env)
	}
	addr, err := c.translate(c.Env[env])
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", env, err)
	}
	systemID = c.Env["SYSTEM_ID"]
	if systemID == "" {
		return nil, "", fmt.Errorf("SYSTEM_ID is empty")
	}
	key, cert, ca, err := tlsFiles(c)
	if err != nil {
		return nil, "", err
	}
	return []string{"--db=" + addr, "--timeout=60", "--private-key=" + key, "--certificate=" + cert, "--ca-cert=" + ca}, systemID, nil
}

// buildChassisDel removes the chassis from the Southbound database.
func buildChassisDel(c Container) (Command, error) {
	db, id, err := maintenanceArgs(c, "OVN_SB_DB")
	if err != nil {
		return Command{}, err
	}
	return Command{Path: OVNSbctlPath, Args: append(db, "--if-exists", "chassis-del", id)}, nil
}

// buildEvacuate takes every Gateway_Chassis and HA_Chassis row naming the
// chassis out of the router ports and HA groups that hold it, in one
// transaction, and fails when any is left, as the image's evacuate script
// does. The rows are not in root tables: destroying one that is still
// referenced does nothing, dropping its last reference deletes it.
func buildEvacuate(c Container) (Command, error) {
	db, id, err := maintenanceArgs(c, "OVN_NB_DB")
	if err != nil {
		return Command{}, err
	}
	nbctl := shellLine(append([]string{OVNNbctlPath}, db...)...)
	find := func(table, cond string) string {
		return "$(" + nbctl + " --bare --columns=_uuid find " + table + " " + cond + ")"
	}
	named := "chassis_name=" + shellQuote(id)
	script := []string{
		"set -e",
		"cmds=''",
		"for row in " + find("Gateway_Chassis", named) + "; do for port in " + find("Logical_Router_Port", `"gateway_chassis{>=}$row"`) +
			"; do cmds=\"$cmds -- remove Logical_Router_Port $port gateway_chassis $row\"; done; done",
		"for row in " + find("HA_Chassis", named) + "; do for group in " + find("HA_Chassis_Group", `"ha_chassis{>=}$row"`) +
			"; do cmds=\"$cmds -- remove HA_Chassis_Group $group ha_chassis $row\"; done; done",
		"if [ -n \"$cmds\" ]; then " + nbctl + " ${cmds# -- }; fi",
		"left=\"" + find("Gateway_Chassis", named) + find("HA_Chassis", named) + "\"",
		"[ -z \"$left\" ] || { echo \"rows still name chassis " + strings.ReplaceAll(id, "\"", "") + "\" >&2; exit 1; }",
	}
	return Command{Path: shellPath, Args: []string{"-c", strings.Join(script, "\n")}}, nil
}
