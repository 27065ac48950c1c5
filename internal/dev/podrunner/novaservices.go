package podrunner

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Local programs of Nova's control plane. Debian's nova-conductor and
// nova-scheduler packages install the first two; noVNC's proxy has no
// Debian package of its own, so it starts from python3-nova like
// nova-compute does.
const (
	// NovaConductorPath is Debian's nova-conductor entry point.
	NovaConductorPath = "/usr/bin/nova-conductor"
	// NovaSchedulerPath is Debian's nova-scheduler entry point.
	NovaSchedulerPath = "/usr/bin/nova-scheduler"
	// NovaNoVNCProxyLauncher is the script that starts nova-novncproxy
	// from python3-nova; websockify comes from python3-websockify.
	NovaNoVNCProxyLauncher = "from nova.cmd.novncproxy import main; main()"
)

// noVNCWebDir is where nova-novncproxy looks for noVNC's HTML by default.
// Debian ships no noVNC with Nova, and the proxy refuses to start when its
// web root is missing, so the mapping points it at an empty directory
// instead; the console's websocket proxying works without the HTML. A
// variable so that tests can pretend either way.
var noVNCWebDir = "/usr/share/novnc"

// NovaControlPlaneMappings returns the mappings that run Nova's control
// plane from the Nova image as the Debian programs of this host:
// nova-conductor, nova-scheduler, nova-api and nova-metadata under uwsgi,
// and nova-novncproxy. They are not part of DefaultImageMap, so a cluster
// that only needs its control-plane pods to exist keeps simulating them;
// put them in front of DefaultImageMap to run them.
//
// Every process runs with [DEFAULT] host set to its pod's name, as the pod's
// host name would be in a real cluster, so that Nova's service list names
// the pods; nova-compute alone keeps the node name.
func NovaControlPlaneMappings() ImageMap {
	return ImageMap{
		NovaConductorMapping(),
		NovaSchedulerMapping(),
		NovaAPIMapping(),
		NovaMetadataMapping(),
		NovaNoVNCProxyMapping(),
	}
}

// NovaConductorMapping runs nova-conductor from a Nova image as Debian's
// /usr/bin/nova-conductor, configured like nova-manage: the mounted
// configuration, then the generated overrides, without a compute driver.
func NovaConductorMapping() Mapping {
	return novaServiceMapping("nova-conductor", NovaConductorPath)
}

// NovaSchedulerMapping runs nova-scheduler from a Nova image as Debian's
// /usr/bin/nova-scheduler, configured like NovaConductorMapping.
func NovaSchedulerMapping() Mapping {
	return novaServiceMapping("nova-scheduler", NovaSchedulerPath)
}

// novaServiceMapping runs a Nova service whose Debian program takes the
// same command line as the image's.
func novaServiceMapping(program, local string) Mapping {
	return Mapping{
		Name:  program,
		Match: matchNovaProgram(program),
		Build: func(c Container) (Command, error) {
			args, _ := invocation(ExpandArgs(c.Spec, c.Env), program)
			cmd, err := novaArgs(asPodHost(c), args, false)
			if err != nil {
				return Command{}, err
			}
			cmd.Path = local
			return cmd, nil
		},
	}
}

// NovaNoVNCProxyMapping runs nova-novncproxy from a Nova image under the
// system python3. Besides the usual overrides, the proxy listens on the
// loopback address and on the container's first TCP port, if it declares
// one, so that the pod's port is the one that answers; and it gets an empty
// web root when this host has no noVNC.
func NovaNoVNCProxyMapping() Mapping {
	const program = "nova-novncproxy"
	return Mapping{
		Name:  program,
		Match: matchNovaProgram(program),
		Build: func(c Container) (Command, error) {
			args, _ := invocation(ExpandArgs(c.Spec, c.Env), program)
			cmd, err := novaArgs(asPodHost(c), args, false)
			if err != nil {
				return Command{}, err
			}
			vnc := [][2]string{{"novncproxy_host", HostIP}}
			if port, ok := firstTCPPort(c.Spec); ok {
				vnc = append(vnc, [2]string{"novncproxy_port", strconv.Itoa(int(port))})
			}
			sections := map[string][][2]string{"vnc": vnc}
			if _, err := os.Stat(noVNCWebDir); err != nil {
				web := filepath.Join(c.WorkDir, "novnc")
				sections["DEFAULT"] = [][2]string{{"web", web}}
				cmd.Dirs = append(cmd.Dirs, web)
			}
			appendOverrides(c, cmd, sections)
			cmd.Path = PythonPath
			cmd.Args = append([]string{"-c", NovaNoVNCProxyLauncher}, cmd.Args...)
			return cmd, nil
		},
	}
}

// matchNovaProgram matches containers of a Nova image that run program.
func matchNovaProgram(program string) func(*corev1.Container) bool {
	return func(c *corev1.Container) bool {
		_, ok := invocation(append(append([]string(nil), c.Command...), c.Args...), program)
		return ok && isNovaImage(c.Image)
	}
}

// asPodHost returns c with the pod's name where the overrides take the host
// name from. A control-plane pod's host name is its own name, not its
// node's; with the node name, two replicas on one node would register as
// one service, and the service list would not say which pod is which.
func asPodHost(c Container) Container {
	if c.Pod != nil && c.Pod.Name != "" {
		c.NodeName = c.Pod.Name
	}
	return c
}

// firstTCPPort returns the first TCP port a container declares.
func firstTCPPort(c *corev1.Container) (int32, bool) {
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// appendOverrides adds sections to the generated overrides file of cmd.
// oslo.config merges a section that appears twice in one file, and a later
// line wins, so appending overrides whatever novaOverrides wrote before.
func appendOverrides(c Container, cmd Command, sections map[string][][2]string) {
	path := filepath.Join(c.WorkDir, OverridesFile)
	data := cmd.Files[path]
	var names []string
	if _, ok := sections["DEFAULT"]; ok {
		// DEFAULT first, as in the rest of the file.
		names = append(names, "DEFAULT")
	}
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		if name != "DEFAULT" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		opts := sections[name]
		data = fmt.Appendf(data, "\n[%s]\n", name)
		for _, kv := range opts {
			data = fmt.Appendf(data, "%s = %s\n", kv[0], kv[1])
		}
	}
	cmd.Files[path] = data
}
