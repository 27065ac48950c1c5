package podrunner

import (
	"context"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Command is the local program that stands in for a container.
type Command struct {
	// Path is the absolute path of the program.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Files are written, mode 0600, before the program starts, keyed by
	// absolute path. Mappings put generated configuration here instead of
	// writing it themselves, so that building a Command stays free of side
	// effects and can be tested on its own.
	Files map[string][]byte
	// Dirs are created before the program starts.
	Dirs []string
	// Executables are written like Files, but mode 0700: programs a
	// script the container runs finds on PATH.
	Executables map[string][]byte
	// PathDirs are put in front of the process's PATH.
	PathDirs []string
	// Env is set in the process's environment over the container's own
	// variables: where a program keeps its sockets and logs, say. Values
	// are paths and names, never credentials, since the runner logs them.
	Env map[string]string
	// Relays are the TCP addresses, "host:port", the program dials. On a
	// node with a network namespace of its own (Node.NetNS) the runner
	// makes each reachable from inside it, at the same address, before
	// the program starts; elsewhere they are ignored.
	Relays []string
	// LogCopy, if set, is a file that receives the program's output too,
	// appended, and is not removed with the pod.
	LogCopy string
	// BeforeStart, if set, runs before every start of the program, to
	// clear host state an earlier run left behind. An error counts as a
	// failed start, so the container is retried with backoff.
	BeforeStart func(ctx context.Context) error
}

// Container is what a Mapping knows when it builds a Command: the container
// and where its volumes ended up on this host.
type Container struct {
	// Pod is the pod the container belongs to; it must not be modified.
	Pod *corev1.Pod
	// Spec is the container; it must not be modified.
	Spec *corev1.Container
	// NodeName is the node the pod is bound to.
	NodeName string
	// NodeAnnotations are the node's annotations as the runner read them
	// when it prepared the pod; nil when the runner cannot read Nodes, as
	// in unit tests. A change takes effect when the pod is recreated.
	NodeAnnotations map[string]string
	// Mounts are the container's volume mounts, materialised.
	Mounts Mounts
	// WorkDir is a directory of the container's own, under the pod's work
	// directory, for state the program keeps.
	WorkDir string
	// Env are the container's resolved variables that came from no Secret,
	// for expanding $(VAR) references in its command line. Variables taken
	// from Secrets are left out so that a credential never ends up in an
	// argument list, which any local user can read from /proc.
	Env map[string]string
	// PodIP is the address the pod reports: its own loopback address when a
	// mapping of the pod asks for one (Mapping.OwnAddress), else HostIP.
	PodIP string
	// NetNS is the name of the node's network namespace, in /run/netns,
	// when the node has one of its own (Node.NetNS), else empty. A
	// mapping starts the programs that must share the node's network
	// inside it.
	NetNS string
	// HostRoot is the directory under which the node's hostPaths live, for
	// a program that expects a host path no mount provides.
	HostRoot string
	// Resolve translates a host and port the container would dial into the
	// local address and port that reach the same server: a member's DNS
	// name becomes its pod's loopback address, a Service's cluster IP the
	// selected pod's address and target port. Anything else comes back as
	// given. Nil means no translation.
	Resolve func(host string, port int) (string, int, error)
}

// resolve applies c.Resolve, or returns host and port unchanged without one.
func (c Container) resolve(host string, port int) (string, int, error) {
	if c.Resolve == nil {
		return host, port, nil
	}
	return c.Resolve(host, port)
}

// hostPath returns the local path of an absolute container path: inside a
// mount when one holds it, else where a hostPath of that path would be.
// The chassis's containers share /etc/openvswitch and the run directories
// through hostPaths on a real node; a pod that does not mount one still
// finds the node's copy here.
func (c Container) hostPath(p string) string {
	if local, ok := c.Mounts.Path(p); ok {
		return local
	}
	if c.HostRoot == "" {
		return filepath.Join(c.WorkDir, filepath.FromSlash(path.Clean("/"+p)))
	}
	return hostPathDir(c.HostRoot, p)
}

// Mapping decides whether a container runs locally and with which program.
type Mapping struct {
	// Name identifies the mapping in logs.
	Name string
	// Match reports whether the mapping applies to a container. It sees only
	// the spec, because whether a pod is run or simulated is decided before
	// anything is materialised.
	Match func(c *corev1.Container) bool
	// Build returns the Command that runs the container.
	Build func(c Container) (Command, error)
	// OwnAddress gives the pod of a matching container a loopback address
	// of its own, 127.x.y.z derived from its namespace and name, reported as
	// its pod IP. Servers that must all listen on the same port, such as the
	// members of one OVN database, need it: on a real cluster each pod has
	// an address, here they all share the host's. A pod on the host network
	// keeps HostIP.
	OwnAddress bool
}

// ImageMap is the table the runner consults for every container, in order;
// the first matching Mapping wins. A container that no entry matches is
// simulated.
type ImageMap []Mapping

// Lookup returns the first Mapping that matches c.
func (m ImageMap) Lookup(c *corev1.Container) (Mapping, bool) {
	for _, mapping := range m {
		if mapping.Match != nil && mapping.Match(c) {
			return mapping, true
		}
	}
	return Mapping{}, false
}

// DefaultImageMap returns the built-in mappings: nova-manage, a pool's
// preflight check and nova-compute from Nova images. Callers may append their own entries or put
// them in front to take precedence.
func DefaultImageMap() ImageMap {
	// nova-manage comes first: it is recognised by the program the container
	// runs, while nova-compute may be recognised by the container's name
	// alone, which would also catch a maintenance container that happens to
	// be called nova-compute but runs nova-manage.
	return ImageMap{NovaManageMapping(), NovaPreflightMapping(), NovaComputeMapping()}
}

// ImageRepository returns the repository part of an image reference: the
// reference without its tag and digest. The registry, if any, stays.
func ImageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	// A colon after the last slash starts the tag; one before it belongs
	// to a registry's port.
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// MatchImage returns a Match function for containers whose image repository
// is exactly repository, whatever the tag or digest.
func MatchImage(repository string) func(*corev1.Container) bool {
	return func(c *corev1.Container) bool {
		return ImageRepository(c.Image) == repository
	}
}

// ExpandArgs returns the container's command line (command followed by
// args) with $(VAR) references expanded from env, the way the kubelet does
// it.
func ExpandArgs(c *corev1.Container, env map[string]string) []string {
	argv := make([]string, 0, len(c.Command)+len(c.Args))
	lookup := func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
	for _, a := range append(append([]string(nil), c.Command...), c.Args...) {
		argv = append(argv, expand(a, lookup))
	}
	return argv
}

// shells are the programs whose "-c" script invocation searches.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true}

// invocation finds where a command line runs program and returns the
// arguments that follow it. The program is either the first word of argv or,
// when argv runs a shell with -c, the first simple command of the script
// that names it. Scripts are split on whitespace and shell operators only;
// this is enough for the one-line wrappers images use ("exec nova-manage
// cell_v2 discover_hosts"), and a script it cannot read is treated as not
// running the program.
func invocation(argv []string, program string) ([]string, bool) {
	if len(argv) == 0 {
		return nil, false
	}
	if path.Base(argv[0]) == program {
		return argv[1:], true
	}
	if !shells[path.Base(argv[0])] {
		return nil, false
	}
	for i := 1; i < len(argv)-1; i++ {
		if argv[i] == "-c" {
			return scriptInvocation(argv[i+1], program)
		}
	}
	return nil, false
}

// scriptInvocation looks for program in the simple commands of a shell
// script.
func scriptInvocation(script, program string) ([]string, bool) {
	var words []string
	flush := func() ([]string, bool) {
		defer func() { words = nil }()
		// Skip "exec" and leading VAR=value assignments, which do not
		// change the program that runs.
		i := 0
		for i < len(words) && (words[i] == "exec" || isAssignment(words[i])) {
			i++
		}
		if i < len(words) && path.Base(words[i]) == program {
			return append([]string(nil), words[i+1:]...), true
		}
		return nil, false
	}
	// Operators may touch their words ("set -e;"), so they are spaced out
	// first; longer operators come first so that "&&" is not read as "&".
	spaced := strings.NewReplacer("\n", " ; ", ";", " ; ", "&&", " && ", "||", " || ", "|", " | ", "&", " & ").Replace(script)
	for _, field := range strings.Fields(spaced) {
		switch field {
		case ";", "&&", "||", "|", "&":
			if args, ok := flush(); ok {
				return args, true
			}
			continue
		}
		words = append(words, unquote(field))
	}
	return flush()
}

// isAssignment reports whether a shell word is a NAME=value prefix.
func isAssignment(word string) bool {
	i := strings.Index(word, "=")
	if i <= 0 {
		return false
	}
	for j, r := range word[:i] {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (j == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// unquote strips one pair of matching quotes around a shell word.
func unquote(word string) string {
	if len(word) >= 2 && (word[0] == '"' || word[0] == '\'') && word[len(word)-1] == word[0] {
		return word[1 : len(word)-1]
	}
	return word
}
