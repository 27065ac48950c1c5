package podrunner

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Local programs of Nova's WSGI services.
const (
	// UWSGIPath is Debian's uwsgi; its Python 3 plugin is loaded
	// explicitly, because Debian's uwsgi-core has no built-in Python.
	UWSGIPath = "/usr/bin/uwsgi"
	// NovaAPIWSGIPath is python3-nova's WSGI script of the compute API.
	NovaAPIWSGIPath = "/usr/bin/nova-api-wsgi"
	// NovaMetadataWSGIPath is python3-nova's WSGI script of the metadata
	// API.
	NovaMetadataWSGIPath = "/usr/bin/nova-metadata-wsgi"
	// DefaultAPIPasteConfig is the paste pipeline the WSGI services load
	// when the configuration names none: Debian's, which nova-api
	// installs.
	DefaultAPIPasteConfig = "/etc/nova/api-paste.ini"
)

// The variables through which Nova's WSGI scripts find their configuration.
const (
	novaConfigDirEnv   = "OS_NOVA_CONFIG_DIR"
	novaConfigFilesEnv = "OS_NOVA_CONFIG_FILES"
)

// novaWSGIDefaults are Nova's defaults for the two variables: the files are
// joined to the directory unless absolute.
var (
	novaWSGIDefaultDir   = "/etc/nova"
	novaWSGIDefaultFiles = []string{"api-paste.ini", "nova.conf"}
)

// uwsgiSocketOptions are the uwsgi options whose value starts with an
// address to listen on.
var uwsgiSocketOptions = map[string]bool{
	"--http-socket": true, "--https-socket": true, "--socket": true, "--uwsgi-socket": true, "--http": true,
}

// uwsgiDroppedOptions take a value and do not apply on this host: the
// mapping loads the plugin and names the processes itself, and the image's
// users do not exist here.
var uwsgiDroppedOptions = map[string]bool{
	"--plugin": true, "--plugins": true, "--procname-prefix": true, "--procname-prefix-spaced": true,
	"--uid": true, "--gid": true,
}

// NovaAPIMapping runs a Nova image's uwsgi serving nova-api-wsgi as this
// host's uwsgi serving Debian's /usr/bin/nova-api-wsgi; see
// NovaMetadataMapping for how the command line and configuration change.
func NovaAPIMapping() Mapping {
	return novaWSGIMapping("nova-api", NovaAPIWSGIPath)
}

// NovaMetadataMapping runs a Nova image's uwsgi serving nova-metadata-wsgi
// as this host's uwsgi serving Debian's /usr/bin/nova-metadata-wsgi.
//
// The container's uwsgi options are kept, with these changes: the Python 3
// plugin is loaded; each socket listens on 127.0.0.1 at the container's
// port, with --reuse-port so that two replicas of one Deployment on one
// host share it instead of the second failing; --wsgi-file is the local
// script; the processes are named after the pod; --die-on-term is added
// when missing, since without it uwsgi reloads on the SIGTERM that stops a
// pod. The image's --plugin, --uid and --gid are dropped.
//
// OS_NOVA_CONFIG_DIR and OS_NOVA_CONFIG_FILES are translated to the
// materialised mounts and handed to uwsgi with --env, which sets them before
// the application loads. The files become absolute paths, handled the way
// novaArgs handles --config-file, with the generated overrides last. The
// paste pipeline, [wsgi] api_paste_config or else DefaultAPIPasteConfig,
// goes first, because Debian's Nova loads the pipeline from the first
// file rather than from that option. Both values are paths, never
// credentials, and the variables are read only from the container's
// non-Secret env.
func NovaMetadataMapping() Mapping {
	return novaWSGIMapping("nova-metadata", NovaMetadataWSGIPath)
}

// novaWSGIMapping runs uwsgi serving the WSGI script whose name is the base
// of script.
func novaWSGIMapping(name, script string) Mapping {
	return Mapping{
		Name: name,
		Match: func(c *corev1.Container) bool {
			if !isNovaImage(c.Image) {
				return false
			}
			args, ok := invocation(append(append([]string(nil), c.Command...), c.Args...), "uwsgi")
			return ok && path.Base(uwsgiWSGIFile(args)) == path.Base(script)
		},
		Build: func(c Container) (Command, error) {
			args, _ := invocation(ExpandArgs(c.Spec, c.Env), "uwsgi")
			opts, err := uwsgiOptions(c, args, script)
			if err != nil {
				return Command{}, err
			}
			cmd, env, err := novaWSGIConfig(asPodHost(c))
			if err != nil {
				return Command{}, err
			}
			cmd.Path = UWSGIPath
			cmd.Args = append([]string{"--plugin", "python3"}, opts...)
			for _, kv := range env {
				cmd.Args = append(cmd.Args, "--env", kv)
			}
			return cmd, nil
		},
	}
}

// uwsgiWSGIFile returns the value of the last --wsgi-file option.
func uwsgiWSGIFile(args []string) string {
	var file string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--wsgi-file="); ok {
			file = v
		} else if a == "--wsgi-file" && i+1 < len(args) {
			file = args[i+1]
		}
	}
	return file
}

// uwsgiOptions rewrites the container's uwsgi options for this host, as
// NovaMetadataMapping describes. Values other than sockets and the WSGI
// script only have their mount paths translated.
func uwsgiOptions(c Container, args []string, script string) ([]string, error) {
	var out []string
	sockets := 0
	dieOnTerm := false
	for i := 0; i < len(args); i++ {
		name, value, inline := strings.Cut(args[i], "=")
		valued := uwsgiSocketOptions[name] || uwsgiDroppedOptions[name] || name == "--wsgi-file"
		if !valued {
			dieOnTerm = dieOnTerm || name == "--die-on-term"
			if name != "--reuse-port" {
				out = append(out, c.Mounts.Translate(args[i]))
			}
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("uwsgi option %s needs a value", name)
			}
			i++
			value = args[i]
		}
		switch {
		case uwsgiDroppedOptions[name]:
		case name == "--wsgi-file":
			out = append(out, name, script)
		default:
			addr, err := localSocket(c, value)
			if err != nil {
				return nil, fmt.Errorf("uwsgi option %s: %w", name, err)
			}
			out = append(out, name, addr)
			sockets++
		}
	}
	if sockets == 0 {
		return nil, errors.New("uwsgi has no socket option to listen on")
	}
	out = append(out, "--reuse-port")
	if !dieOnTerm {
		out = append(out, "--die-on-term")
	}
	podName := "pod"
	if c.Pod != nil {
		podName = c.Pod.Namespace + "/" + c.Pod.Name
	}
	return append(out, "--procname-prefix-spaced", podName), nil
}

// localSocket rewrites a socket value: a TCP address ("[host]:port",
// optionally followed by ",cert,key...") listens on the loopback address at
// the same port; anything else, a UNIX socket path, has its mount paths
// translated.
func localSocket(c Container, value string) (string, error) {
	addr, rest, _ := strings.Cut(value, ",")
	if strings.Contains(addr, "/") || !strings.Contains(addr, ":") {
		return c.Mounts.Translate(value), nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("cannot read the address %q", addr)
	}
	local := net.JoinHostPort(HostIP, port)
	if rest != "" {
		local += "," + c.Mounts.Translate(rest)
	}
	return local, nil
}

// novaWSGIConfig returns the Command that carries the generated overrides,
// and the NAME=value settings of the two configuration variables.
func novaWSGIConfig(c Container) (Command, []string, error) {
	dir := novaWSGIDefaultDir
	if v, ok := c.Env[novaConfigDirEnv]; ok && strings.TrimSpace(v) != "" {
		dir = strings.TrimSpace(v)
	}
	names := novaWSGIDefaultFiles
	if v, ok := c.Env[novaConfigFilesEnv]; ok && v != "" {
		names = strings.Split(v, ";")
	}
	// The files as --config-file options, so that novaArgs treats them the
	// way it treats every Nova program's: files outside the mounts are
	// dropped, and the other mounted *.conf files follow.
	var asArgs []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !path.IsAbs(n) {
			n = path.Join(dir, n)
		}
		asArgs = append(asArgs, "--config-file", n)
	}
	cmd, err := novaArgs(c, asArgs, false)
	if err != nil {
		return Command{}, nil, err
	}
	files := configFileArgs(cmd.Args)
	paste, err := apiPasteConfig(c, files[:len(files)-1])
	if err != nil {
		return Command{}, nil, err
	}
	localDir, ok := c.Mounts.Path(dir)
	if !ok {
		// Nova only joins relative names to the directory, and every
		// name is absolute now; the first file's directory is as good.
		localDir = filepath.Dir(files[0])
	}
	if files[0] != paste {
		files = append([]string{paste}, files...)
	}
	cmd.Args = nil
	return cmd, []string{
		novaConfigDirEnv + "=" + localDir,
		novaConfigFilesEnv + "=" + strings.Join(files, ";"),
	}, nil
}

// configFileArgs returns the values of the --config-file options novaArgs
// built.
func configFileArgs(args []string) []string {
	var files []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--config-file" {
			i++
			files = append(files, args[i])
		}
	}
	return files
}

// apiPasteConfig returns the local paste pipeline file: the last [wsgi]
// api_paste_config of the given files, translated when it is inside a
// mount; DefaultAPIPasteConfig when they set none, or a relative one that
// oslo.config would search for in the image's directories.
func apiPasteConfig(c Container, files []string) (string, error) {
	value := ""
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", filepath.Base(f), err)
		}
		for _, o := range iniOptions(data) {
			if o.section == "wsgi" && o.key == "api_paste_config" {
				value = o.value
			}
		}
	}
	if !path.IsAbs(value) {
		return DefaultAPIPasteConfig, nil
	}
	if local, ok := c.Mounts.Path(value); ok {
		return local, nil
	}
	return value, nil
}
