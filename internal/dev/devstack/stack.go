package devstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/operator"
)

const (
	// ManagementCluster is the kwokctl name of the management cluster.
	ManagementCluster = "mgmt"
	// ContextPrefix prefixes every context in the devstack kubeconfig.
	ContextPrefix = "anvil-"
	// NodesPerComputeCluster is how many fake hypervisor nodes each compute
	// cluster gets.
	NodesPerComputeCluster = 3
	// OperatorNamespace holds the operator's leader-election Lease.
	OperatorNamespace = "anvil-system"
)

// Options configure a Stack.
type Options struct {
	// Root is the repository checkout; bin/ and hack/tools live below it.
	Root string
	// Dir holds the state; it defaults to <Root>/.devstack.
	Dir string
	// ComputeClusters is how many compute clusters Up runs (at least 1).
	ComputeClusters int
	// OpenStack runs the OpenStack services of hack/openstack and a pod
	// runner per compute cluster, whose nodes replace kwok's; the sample
	// objects then point at those services.
	OpenStack bool
	// OperatorMode is OperatorModeChart (the default when empty) or
	// OperatorModeProcess.
	OperatorMode string
	// Out receives progress and reports.
	Out io.Writer
}

// Stack is one devstack, identified by its state directory.
type Stack struct {
	root string
	dir  string
	bin  string
	out  io.Writer
	n    int
	// openstack is Options.OpenStack.
	openstack bool
	// operatorMode is Options.OperatorMode, defaulted.
	operatorMode string
}

// New validates the options and returns the Stack they describe.
func New(opts Options) (*Stack, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "tools", "build.sh")); err != nil {
		return nil, fmt.Errorf("%s is not an Anvil checkout (no hack/tools/build.sh); run from the repository root or pass --root", root)
	}
	dir, err := filepath.Abs(cmp.Or(opts.Dir, filepath.Join(root, ".devstack")))
	if err != nil {
		return nil, err
	}
	if opts.ComputeClusters < 1 || opts.ComputeClusters > 26 {
		return nil, fmt.Errorf("--compute-clusters must be between 1 and 26, got %d", opts.ComputeClusters)
	}
	mode := cmp.Or(opts.OperatorMode, OperatorModeChart)
	if mode != OperatorModeChart && mode != OperatorModeProcess {
		return nil, fmt.Errorf("--operator must be %s or %s, got %q", OperatorModeChart, OperatorModeProcess, mode)
	}
	out := opts.Out
	if out == nil {
		out = os.Stdout
	}
	return &Stack{root: root, dir: dir, bin: filepath.Join(root, "bin"), out: out, n: opts.ComputeClusters, openstack: opts.OpenStack, operatorMode: mode}, nil
}

// NodeName returns the name of the i-th (1-based) node of a compute cluster.
func NodeName(cluster string, i int) string { return fmt.Sprintf("%s-node-%d", cluster, i) }

// ZoneName returns the zone of the i-th (1-based) node of a compute cluster.
func ZoneName(cluster string, i int) string { return fmt.Sprintf("%s-zone-%d", cluster, i) }

// KubeconfigPath is the merged kubeconfig with one context per cluster.
func (s *Stack) KubeconfigPath() string { return filepath.Join(s.dir, "kubeconfig") }

func (s *Stack) clusterNames() []string {
	names := []string{ManagementCluster}
	for i := range s.n {
		names = append(names, testenv.ComputeClusterName(i))
	}
	return names
}

// Up brings the devstack to its desired state. Every step checks what is
// already there, so running Up again repairs a partial stack and changes
// nothing on a complete one.
func (s *Stack) Up(ctx context.Context) error {
	if s.operatorMode == OperatorModeChart && !s.openstack {
		// Without pod runners nothing would run the chart's pod.
		return fmt.Errorf("--operator=%s needs the pod runners of --openstack; use --operator=%s without them", OperatorModeChart, OperatorModeProcess)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	st, err := s.loadState()
	if err != nil {
		return err
	}
	type step struct {
		title string
		run   func(context.Context, *state) (string, error)
	}
	steps := []step{{"Building the pinned tools", s.buildTools}}
	if s.openstack {
		steps = append(steps, step{"Starting the OpenStack services", s.startOpenStack})
	}
	steps = append(steps,
		step{"Starting the clusters", s.startClusters},
		step{"Writing the kubeconfig", s.writeKubeconfig},
	)
	if s.openstack {
		steps = append(steps, step{"Starting the pod runners", s.startPodRunners})
	} else {
		steps = append(steps, step{"Adding fake hypervisor nodes", s.createNodes})
	}
	steps = append(steps, []step{
		{"Installing the CRDs", s.installCRDs},
		{"Creating the namespaces", s.createNamespaces},
		// After the namespaces: the Gateway lives in openstack.
		{"Starting the gateway", s.startGateway},
		// Before the operator: an OVNCentral's certificates come from it.
		{"Starting cert-manager", s.startCertManager},
		{"Registering the compute clusters", s.registerComputeClusters},
		{"Issuing the webhook certificate", s.ensurePKI},
		{"Starting the operator", s.startOperator},
		// Only after the operator answers: with failurePolicy Fail, a
		// webhook registered earlier would refuse every request it matches.
		{"Registering the admission webhooks", s.installWebhooks},
	}...)
	if s.openstack {
		// The central's pods run only on pod runners, and Neutron, which
		// the sample ControlPlane references, runs only with the services.
		steps = append(steps,
			step{"Applying the OVN central", s.applyOVNCentral},
			step{"Pointing Neutron at the OVN central", s.pointNeutronAtOVNCentral},
		)
	}
	steps = append(steps, step{"Applying the sample ControlPlane", s.applySampleControlPlane})
	p := newProgress(s.out, len(steps))
	for _, step := range steps {
		p.start(step.title)
		detail, err := step.run(ctx, st)
		if saveErr := s.saveState(st); saveErr != nil && err == nil {
			err = saveErr
		}
		if err != nil {
			p.fail(err)
			return fmt.Errorf("%s: %w", step.title, err)
		}
		p.done(detail)
	}
	fmt.Fprintln(s.out)
	if err := s.Status(ctx); err != nil {
		return err
	}
	s.printNextSteps()
	return nil
}

func (s *Stack) printNextSteps() {
	down := "go run ./internal/dev/cmd/anvil-dev devstack down"
	if s.dir != filepath.Join(s.root, ".devstack") {
		down += " --state-dir " + s.dir
	}
	fmt.Fprintf(s.out, `
Next steps:
  export KUBECONFIG=%s
  kubectl --context %s%s get crd
  kubectl --context %s%s get nodes -L %s
  kubectl --context %s%s -n %s get controlplane %s
  tail -f %s
  %s     # stop everything and remove %s
`, s.KubeconfigPath(), ContextPrefix, ManagementCluster, ContextPrefix, testenv.ComputeClusterName(0), corev1.LabelTopologyZone,
		ContextPrefix, ManagementCluster, testenv.WorkloadNamespace, SampleControlPlane,
		filepath.Join(s.dir, "operator.log"), down, s.dir)
}

// Down stops the operator and deletes every cluster the state records, plus
// any cluster kwokctl still knows in this stack's work directory, then
// removes the state directory.
func (s *Stack) Down(ctx context.Context) error {
	if _, err := os.Stat(s.dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(s.out, "Nothing to stop: %s does not exist.\n", s.dir)
		return nil
	}
	st, err := s.loadState()
	if err != nil {
		return err
	}
	var errs []error
	if st.Operator.running(ctx) {
		s.deleteSampleControlPlane(ctx)
	}
	// A chart operator goes with the management cluster's pod runner.
	if st.Operator != nil && st.Operator.Mode != OperatorModeChart {
		fmt.Fprintf(s.out, "Stopping the operator (pid %d)\n", st.Operator.PID)
		errs = append(errs, stopProcess(st.Operator.PID, 15*time.Second))
	}
	errs = append(errs, s.stopGateway(st), s.stopCertManager(), s.stopPodRunners(st), s.stopOpenStack(ctx, st))
	names, err := s.kwokctlClusters(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range union(st.Clusters, names) {
		fmt.Fprintf(s.out, "Deleting cluster %s\n", n)
		if _, err := s.kwokctl(ctx, "delete", "cluster", "--name", n); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("devstack down left something behind; %s is kept: %w", s.dir, err)
	}
	kept, err := s.removeState()
	if err != nil {
		return err
	}
	if kept != "" {
		fmt.Fprintf(s.out, "Removed %s, except the OpenStack services' data in %s (make openstack-down stops a running set)\n", s.dir, kept)
		return nil
	}
	fmt.Fprintf(s.out, "Removed %s\n", s.dir)
	return nil
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range append(append([]string{}, a...), b...) {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// clustersNamespace is where the devstack writes registration Secrets; it is
// the operator's default so no flag is needed.
const clustersNamespace = operator.DefaultClustersNamespace

// removeState removes the state directory, except the OpenStack services'
// state when it lives inside: its databases make the next start warm, and
// tests or `make openstack-up` may share that set. It returns the directory
// it kept, if any.
func (s *Stack) removeState() (string, error) {
	keep := s.OpenStackDir()
	rel, err := filepath.Rel(s.dir, keep)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.Contains(rel, string(filepath.Separator)) {
		return "", os.RemoveAll(s.dir)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return "", err
	}
	kept := ""
	for _, e := range entries {
		if e.Name() == rel {
			kept = keep
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
			return "", err
		}
	}
	if kept == "" {
		return "", os.Remove(s.dir)
	}
	return kept, nil
}
