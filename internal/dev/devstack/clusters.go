package devstack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/kubeconfig"
	"github.com/anvil/anvil/internal/operator"
)

// kubeVersion is the Kubernetes version the pinned binaries report.
const kubeVersion = "v1.37.2"

// buildTools runs the build of the clusters' tools, which is a no-op when
// its stamp matches; a devstack needs no linter.
func (s *Stack) buildTools(ctx context.Context, _ *state) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.root, "hack", "tools", "build.sh"), "kube")
	cmd.Dir = s.root
	cmd.Stdout, cmd.Stderr = indent(s.out), indent(s.out)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/tools/build.sh: %w", err)
	}
	return "", nil
}

// kwokNodeValue is the value of testenv.FakeNodeAnnotation on the nodes
// the devstack hands to kwok.
const kwokNodeValue = "fake"

// kwokControllerArgs make each cluster's kwok-controller manage only the
// nodes annotated testenv.FakeNodeAnnotation=fake. kwokctl's binary runtime
// starts it with --manage-all-nodes=true, which would make it a second
// kubelet for the pod runner's nodes: both would renew their leases and
// write their status and their pods'. kwokctl appends extra args after its
// own and the last value of a flag wins, so these turn that off. kwokctl
// records them with the cluster, so `kwokctl start cluster` keeps them.
var kwokControllerArgs = []string{
	"--extra-args", "kwok-controller=manage-all-nodes=false",
	"--extra-args", "kwok-controller=" + kwokSelectorArg,
}

// kwokSelectorArg is the kwok-controller flag that limits it to kwok's nodes.
const kwokSelectorArg = "manage-nodes-with-annotation-selector=" + testenv.FakeNodeAnnotation + "=" + kwokNodeValue

// kwokManagesOnlyItsNodes tells whether an existing cluster's kwok-controller
// was created with kwokControllerArgs. kwokctl records each component's
// command line in <workdir>/clusters/<name>/kwok.yaml and starts the
// cluster from it; a cluster created by an earlier devstack lacks the
// selector there and manages every node.
func (s *Stack) kwokManagesOnlyItsNodes(name string) (bool, error) {
	raw, err := os.ReadFile(filepath.Join(s.dir, "kwok", "clusters", name, "kwok.yaml"))
	if err != nil {
		return false, err
	}
	return bytes.Contains(raw, []byte("--"+kwokSelectorArg)), nil
}

// kwokctlEnv points kwokctl at the pinned binaries and at this stack's work
// directory. Without the binary paths kwokctl would try to download them.
// The clusters' processes inherit it, and run with one Go thread each: a
// devstack's clusters hold a handful of objects, and a dozen apiservers,
// etcds and controller managers each running a garbage collector on every
// core would spend the cores the OpenStack services and the tests need.
func (s *Stack) kwokctlEnv() []string {
	b := func(name string) string { return filepath.Join(s.bin, name) }
	return append(os.Environ(),
		"GOMAXPROCS=1",
		"KWOK_WORKDIR="+filepath.Join(s.dir, "kwok"),
		"KWOK_RUNTIME=binary",
		"KWOK_KUBE_VERSION="+kubeVersion,
		"KWOK_KUBE_APISERVER_BINARY="+b("kube-apiserver"),
		"KWOK_KUBE_CONTROLLER_MANAGER_BINARY="+b("kube-controller-manager"),
		"KWOK_KUBE_SCHEDULER_BINARY="+b("kube-scheduler"),
		"KWOK_ETCD_BINARY="+b("etcd"),
		"KWOK_CONTROLLER_BINARY="+b("kwok"),
		"KWOK_KUBECTL_BINARY="+b("kubectl"),
	)
}

// kwokctl runs kwokctl and returns its stdout; stderr becomes the error.
func (s *Stack) kwokctl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "kwokctl"), args...)
	cmd.Env = s.kwokctlEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kwokctl %s: %w: %s", strings.Join(args, " "), err, lastLines(stderr.String(), 5))
	}
	return stdout.Bytes(), nil
}

// kwokctlClusters lists the clusters kwokctl knows in this stack's work
// directory.
func (s *Stack) kwokctlClusters(ctx context.Context) ([]string, error) {
	if _, err := os.Stat(filepath.Join(s.bin, "kwokctl")); err != nil {
		return nil, nil //nolint:nilerr // no kwokctl was ever built, so no cluster can exist
	}
	out, err := s.kwokctl(ctx, "get", "clusters")
	if err != nil {
		return nil, err
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if n := strings.TrimSpace(sc.Text()); n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

// startClusters creates each missing cluster and starts each stopped one.
func (s *Stack) startClusters(ctx context.Context, st *state) (string, error) {
	existing, err := s.kwokctlClusters(ctx)
	if err != nil {
		return "", err
	}
	known := map[string]bool{}
	for _, n := range existing {
		known[n] = true
	}
	var created, started, running []string
	for _, name := range s.clusterNames() {
		if !slices.Contains(st.Clusters, name) {
			st.Clusters = append(st.Clusters, name)
		}
		if !known[name] {
			args := append([]string{"create", "cluster", "--name", name, "--wait", "2m"}, kwokControllerArgs...)
			if _, err := s.kwokctl(ctx, args...); err != nil {
				return "", err
			}
			created = append(created, name)
			continue
		}
		if s.openstack {
			only, err := s.kwokManagesOnlyItsNodes(name)
			if err != nil {
				return "", err
			}
			if !only {
				return "", fmt.Errorf("cluster %s was created by an earlier devstack whose kwok-controller manages every node, so it would run the pod runner's nodes too; "+
					"recreate the stack with `go run ./internal/dev/cmd/anvil-dev devstack down` and `up`, or keep it with --openstack=false", name)
			}
		}
		if cfg, err := s.clusterConfig(ctx, name); err == nil && reachable(ctx, cfg) {
			running = append(running, name)
			continue
		}
		if _, err := s.kwokctl(ctx, "start", "cluster", "--name", name, "--wait", "2m"); err != nil {
			return "", err
		}
		started = append(started, name)
	}
	return summarize(map[string][]string{"created": created, "restarted": started, "already running": running}), nil
}

// clusterKubeconfig returns kwokctl's kubeconfig for a cluster with every
// file it names read inline.
func (s *Stack) clusterKubeconfig(ctx context.Context, name string) (*clientcmdapi.Config, error) {
	raw, err := s.kwokctl(ctx, "get", "kubeconfig", "--name", name)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.dir, "kwok", "kubeconfig-"+name+".yaml")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, err
	}
	return kubeconfig.Flatten(path)
}

func (s *Stack) clusterConfig(ctx context.Context, name string) (*rest.Config, error) {
	kc, err := s.clusterKubeconfig(ctx, name)
	if err != nil {
		return nil, err
	}
	return clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
}

// clusterClient returns an administrator client for a cluster.
func (s *Stack) clusterClient(ctx context.Context, name string) (client.Client, error) {
	cfg, err := s.clusterConfig(ctx, name)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: devstackScheme()})
}

// devstackScheme is the operator's scheme plus CRDs, which the devstack
// installs and the operator never touches.
func devstackScheme() *runtime.Scheme {
	s := operator.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// writeKubeconfig merges every cluster's kubeconfig into one file with
// contexts anvil-<cluster>, and writes the management cluster's alone for
// the operator.
func (s *Stack) writeKubeconfig(ctx context.Context, _ *state) (string, error) {
	var entries []kubeconfig.Entry
	for _, name := range s.clusterNames() {
		kc, err := s.clusterKubeconfig(ctx, name)
		if err != nil {
			return "", err
		}
		entries = append(entries, kubeconfig.Entry{Context: ContextPrefix + name, Config: kc})
	}
	merged, err := kubeconfig.Merge(entries)
	if err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*merged, s.KubeconfigPath()); err != nil {
		return "", err
	}
	mgmt, err := kubeconfig.Single(merged, ContextPrefix+ManagementCluster)
	if err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*mgmt, s.operatorKubeconfigPath()); err != nil {
		return "", err
	}
	return s.KubeconfigPath(), nil
}

func (s *Stack) operatorKubeconfigPath() string { return filepath.Join(s.dir, "operator.kubeconfig") }

func summarize(groups map[string][]string) string {
	var parts []string
	for _, k := range []string{"created", "restarted", "already running"} {
		if len(groups[k]) > 0 {
			parts = append(parts, k+" "+strings.Join(groups[k], ", "))
		}
	}
	return strings.Join(parts, "; ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
