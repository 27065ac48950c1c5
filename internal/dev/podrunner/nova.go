package podrunner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Local programs the Nova mappings run. The interpreter is the system one on
// purpose: the python3 first on PATH may be a separate installation that
// lacks the Debian OpenStack modules.
const (
	// PythonPath is the interpreter nova-compute runs under.
	PythonPath = "/usr/bin/python3"
	// NovaManagePath is Debian's nova-manage entry point.
	NovaManagePath = "/usr/bin/nova-manage"
	// NovaComputeLauncher is the script that starts nova-compute from
	// python3-nova; the nova-compute package itself would pull in libvirt.
	NovaComputeLauncher = "from nova.cmd.compute import main; main()"
	// FakeComputeDriver is the virt driver every local nova-compute uses:
	// it registers a hypervisor and accepts servers without a hypervisor.
	FakeComputeDriver = "fake.FakeDriver"
	// OverridesFile is the name of the configuration file the runner
	// generates in the container's work directory and passes last, so that
	// its options win over every mounted file.
	OverridesFile = "anvil-podrunner.conf"
)

// NovaComputeMapping runs nova-compute from a Nova image as the local
// nova-compute with the fake driver.
//
// A container matches when its image is a Nova image (the last path element
// of the repository is "nova" or starts with "nova-", or the repository
// contains "nova-compute") and it runs nova-compute: its command does, or it
// is named nova-compute, or its image is a nova-compute image and it keeps
// the image's entry point.
func NovaComputeMapping() Mapping {
	const program = "nova-compute"
	return Mapping{
		Name: program,
		Match: func(c *corev1.Container) bool {
			if !isNovaImage(c.Image) {
				return false
			}
			if _, ok := invocation(append(append([]string(nil), c.Command...), c.Args...), program); ok {
				return true
			}
			keepsEntryPoint := len(c.Command) == 0 && len(c.Args) == 0
			return c.Name == program || (keepsEntryPoint && strings.Contains(ImageRepository(c.Image), program))
		},
		Build: func(c Container) (Command, error) {
			args, _ := invocation(ExpandArgs(c.Spec, c.Env), program)
			cfg, err := novaArgs(c, args, true)
			if err != nil {
				return Command{}, err
			}
			cfg.Path = PythonPath
			cfg.Args = append([]string{"-c", NovaComputeLauncher}, cfg.Args...)
			return cfg, nil
		},
	}
}

// NovaManageMapping runs nova-manage from a Nova image as the local
// /usr/bin/nova-manage, with the same configuration handling as
// nova-compute but without the compute driver.
func NovaManageMapping() Mapping {
	const program = "nova-manage"
	return Mapping{
		Name: program,
		Match: func(c *corev1.Container) bool {
			_, ok := invocation(append(append([]string(nil), c.Command...), c.Args...), program)
			return ok && isNovaImage(c.Image)
		},
		Build: func(c Container) (Command, error) {
			args, _ := invocation(ExpandArgs(c.Spec, c.Env), program)
			cfg, err := novaArgs(c, args, false)
			if err != nil {
				return Command{}, err
			}
			cfg.Path = NovaManagePath
			return cfg, nil
		},
	}
}

// isNovaImage reports whether an image reference names a Nova image.
func isNovaImage(image string) bool {
	repo := ImageRepository(image)
	last := path.Base(repo)
	return last == "nova" || strings.HasPrefix(last, "nova-") || strings.Contains(repo, "nova-compute")
}

// novaArgs builds the arguments shared by the Nova programs: every
// configuration file, then the generated overrides, then the program's own
// arguments with mount paths translated.
//
// The image's own files do not exist on this host, so a --config-file or
// --config-dir outside every mount is dropped; one inside a mount is kept,
// translated, in its place in the order. Every *.conf file of a mounted
// Secret, ConfigMap or projected volume that was not named follows, in mount
// order. oslo.config lets later files win, so the generated file goes last.
// Options go before the program's positional arguments, because nova-manage
// parses everything after its sub-command with the sub-command's parser.
func novaArgs(c Container, programArgs []string, compute bool) (Command, error) {
	var files, dirs, rest []string
	seen := map[string]bool{}
	for i := 0; i < len(programArgs); i++ {
		arg := programArgs[i]
		name, value, inline := strings.Cut(arg, "=")
		if name != "--config-file" && name != "--config-dir" {
			rest = append(rest, c.Mounts.Translate(arg))
			continue
		}
		if !inline {
			if i+1 >= len(programArgs) {
				return Command{}, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = programArgs[i]
		}
		local, ok := c.Mounts.Path(value)
		if !ok {
			continue
		}
		if name == "--config-dir" {
			dirs = append(dirs, local)
			continue
		}
		if !seen[local] {
			seen[local] = true
			files = append(files, local)
		}
	}
	for _, f := range c.Mounts.ConfigFiles() {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	if len(files) == 0 && len(dirs) == 0 {
		// Without configuration Nova would start against its built-in
		// defaults and fail far from the cause; say what is missing.
		return Command{}, errors.New("no *.conf file in any mounted Secret, ConfigMap or projected volume")
	}

	overrides, err := novaOverrides(c, files, compute)
	if err != nil {
		return Command{}, err
	}
	overridesPath := filepath.Join(c.WorkDir, OverridesFile)

	var args []string
	for _, f := range files {
		args = append(args, "--config-file", f)
	}
	for _, d := range dirs {
		args = append(args, "--config-dir", d)
	}
	args = append(args, "--config-file", overridesPath)
	args = append(args, rest...)
	return Command{
		Args:  args,
		Files: map[string][]byte{overridesPath: overrides},
		Dirs:  []string{filepath.Join(c.WorkDir, "state"), filepath.Join(c.WorkDir, "instances"), filepath.Join(c.WorkDir, "lock")},
	}, nil
}

// novaOverrides renders the generated configuration file: the node's host
// name, state kept in the container's work directory, the fake driver for
// nova-compute, and every option of the given files whose value is a path
// inside a mount, translated. The last part matters because the contract
// points, for example, ssl_ca_file at the mounted Secret; that path exists
// only inside a container.
func novaOverrides(c Container, files []string, compute bool) ([]byte, error) {
	fixed := map[string][][2]string{
		"DEFAULT": {
			{"host", c.NodeName},
			{"state_path", filepath.Join(c.WorkDir, "state")},
			{"instances_path", filepath.Join(c.WorkDir, "instances")},
		},
		"oslo_concurrency": {{"lock_path", filepath.Join(c.WorkDir, "lock")}},
	}
	if compute {
		fixed["DEFAULT"] = append(fixed["DEFAULT"], [2]string{"compute_driver", FakeComputeDriver})
	}
	sections := map[string][][2]string{}
	for name, opts := range fixed {
		sections[name] = append(sections[name], opts...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			// The file name is a local path of our own making; its content
			// is never quoted, since it may hold credentials.
			return nil, fmt.Errorf("reading %s: %w", filepath.Base(f), err)
		}
		for _, o := range iniOptions(data) {
			local, ok := c.Mounts.Path(o.value)
			if !ok || hasKey(fixed[o.section], o.key) {
				continue
			}
			sections[o.section] = setKey(sections[o.section], o.key, local)
		}
	}
	names := make([]string, 0, len(sections))
	for name := range sections {
		if name != "DEFAULT" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var buf bytes.Buffer
	buf.WriteString("# Generated by anvil-podrunner: the options that make this container run on a\n# local host. Passed last, so they win over every other file.\n")
	for _, name := range append([]string{"DEFAULT"}, names...) {
		fmt.Fprintf(&buf, "\n[%s]\n", name)
		for _, kv := range sections[name] {
			fmt.Fprintf(&buf, "%s = %s\n", kv[0], kv[1])
		}
	}
	return buf.Bytes(), nil
}

// hasKey reports whether opts sets key.
func hasKey(opts [][2]string, key string) bool {
	for _, kv := range opts {
		if kv[0] == key {
			return true
		}
	}
	return false
}

// setKey sets key in opts, replacing an earlier value: a later file wins in
// oslo.config, and the override must follow the file that wins.
func setKey(opts [][2]string, key, value string) [][2]string {
	for i, kv := range opts {
		if kv[0] == key {
			opts[i][1] = value
			return opts
		}
	}
	return append(opts, [2]string{key, value})
}

// iniOption is one option of an oslo.config file.
type iniOption struct {
	section, key, value string
}

// iniOptions reads the single-line options of an oslo.config file, in the
// subset of its syntax that matters for finding paths: "[section]" headers,
// "key = value" and "key: value" lines, and comments starting with # or ;.
// Continuation lines are skipped, since a multi-line value is no path.
func iniOptions(data []byte) []iniOption {
	var out []iniOption
	section := "DEFAULT"
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		raw := scanner.Text()
		line := strings.TrimSpace(raw)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case raw[0] == ' ' || raw[0] == '\t':
			continue
		case line[0] == '[' && line[len(line)-1] == ']':
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			continue
		}
		out = append(out, iniOption{
			section: section,
			key:     strings.TrimSpace(line[:i]),
			value:   strings.TrimSpace(line[i+1:]),
		})
	}
	return out
}
