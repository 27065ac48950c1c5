package devstack

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/clusterreg"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// The access chart's release on every compute cluster. The names are the
// ones "Register a compute cluster" installs and the guide's step 7
// upgrades (`helm upgrade --reuse-values target-cluster-access -n
// c5c3-access`), so the devstack meets the guide's prerequisite as a user
// would, and the guide's commands find the release they expect.
const (
	AccessRelease   = "target-cluster-access"
	AccessNamespace = clusterreg.DefaultAccessNamespace
)

// tokenRenewal is how long before its expiry a registration's token is
// renewed by `up`: a devstack kept for weeks keeps a working registration.
const tokenRenewal = 24 * time.Hour

// registerComputeClusters registers every compute cluster the way users do:
// it installs the target-cluster-access chart there and writes the
// registration Secret with a bound token of the chart's ServiceAccount,
// through clusterreg.Register, the code behind `anvil cluster register`.
// The operator therefore reaches each compute cluster with exactly the
// chart's RBAC, scoped to the openstack namespace, and every e2e proves
// that RBAC is enough. A registration made that way whose token is still
// good is kept, so a second `up` changes nothing.
func (s *Stack) registerComputeClusters(ctx context.Context, _ *state) (string, error) {
	mgmt, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	var done []string
	for i := range s.n {
		name := testenv.ComputeClusterName(i)
		installed, err := s.installAccessChart(ctx, name)
		if err != nil {
			return "", fmt.Errorf("the access chart on %s: %w", name, err)
		}
		// A new release has a new ServiceAccount, and the tokens of the
		// old one no longer authenticate, however long they were to last.
		action, err := s.registerWithToken(ctx, mgmt, name, installed)
		if err != nil {
			return "", fmt.Errorf("registering %s: %w", name, err)
		}
		done = append(done, fmt.Sprintf("%s/%s %s", clustersNamespace, name, action))
	}
	return strings.Join(done, ", "), nil
}

// installAccessChart installs the access chart on a compute cluster unless
// a deployed release of it is there, with the values of the guide's
// prerequisite: openstack is the chart's namespace, privileged (so the
// chart grants DaemonSets there and labels it for host-level Pod Security),
// and created by the chart. A deployed release is left exactly as it is:
// the guide upgrades it (hypervisorTraits), and `up` must not undo that.
// It tells whether it installed the release.
func (s *Stack) installAccessChart(ctx context.Context, cluster string) (bool, error) {
	target := []string{"--kubeconfig", s.KubeconfigPath(), "--kube-context", ContextPrefix + cluster,
		"--namespace", AccessNamespace}
	out, err := s.helm(ctx, append([]string{"status", AccessRelease, "-o", "json"}, target...)...)
	if err == nil && releaseDeployed(out) {
		return false, nil
	}
	c, err := s.clusterClient(ctx, cluster)
	if err != nil {
		return false, err
	}
	create, err := chartMayCreateNamespace(ctx, c, testenv.WorkloadNamespace)
	if err != nil {
		return false, err
	}
	ns := "{" + testenv.WorkloadNamespace + "}"
	// upgrade --install also replaces a release whose install failed.
	_, err = s.helm(ctx, append([]string{"upgrade", "--install", AccessRelease,
		filepath.Join(s.root, "deploy", "target-cluster", "target-cluster-access"), "--create-namespace",
		"--set", "namespaces=" + ns, "--set", "privilegedNamespaces=" + ns,
		"--set", "createNamespaces=" + strconv.FormatBool(create)}, target...)...)
	return err == nil, err
}

// chartMayCreateNamespace tells whether the chart can own the namespace:
// it is absent, or Helm already manages it. A devstack made before the
// devstack used the chart has an openstack namespace of its own, which
// Helm refuses to adopt; the chart then leaves the namespace alone.
func chartMayCreateNamespace(ctx context.Context, c client.Client, name string) (bool, error) {
	ns := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, ns); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return ns.Labels["app.kubernetes.io/managed-by"] == "Helm", nil
}

// releaseDeployed tells whether `helm status -o json` describes a release
// in the deployed state.
func releaseDeployed(status []byte) bool {
	var r struct {
		Info struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	return json.Unmarshal(status, &r) == nil && r.Info.Status == "deployed"
}

// registerWithToken writes the registration Secret of a compute cluster
// with a bound token of the chart's ServiceAccount. Unless renew is set, a
// Secret that already holds such a token for the same server, good for
// longer than tokenRenewal, is kept. It says what it did.
func (s *Stack) registerWithToken(ctx context.Context, mgmt client.Client, cluster string, renew bool) (string, error) {
	compute, err := clusterreg.RESTConfig(s.KubeconfigPath(), ContextPrefix+cluster)
	if err != nil {
		return "", err
	}
	got := &corev1.Secret{}
	err = mgmt.Get(ctx, client.ObjectKey{Namespace: clustersNamespace, Name: cluster}, got)
	switch {
	case err == nil && !renew && got.Labels[targetcluster.RegistrationLabel] == "true" &&
		tokenRegistrationValid(got.Data[targetcluster.KubeconfigKey], compute.Host, time.Now().Add(tokenRenewal)):
		return "kept", nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", err
	}
	res, err := clusterreg.Register(ctx, compute, mgmt, clusterreg.Options{
		ClusterName:       cluster,
		Namespaces:        testenv.WorkloadNamespace,
		ClustersNamespace: clustersNamespace,
	}, nil)
	if err != nil {
		return "", err
	}
	return string(res.Action), nil
}

// tokenRegistrationValid tells whether a registration kubeconfig reaches
// server with a bearer token that is still valid at the given time. A
// kubeconfig with a client certificate, as devstacks before the access
// chart wrote, is not. Nothing of the token is returned or logged; only
// its expiry claim is read.
func tokenRegistrationValid(kubeconfig []byte, server string, at time.Time) bool {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return false
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return false
	}
	cl, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cl == nil || user == nil || user.Token == "" || strings.TrimSuffix(cl.Server, "/") != strings.TrimSuffix(server, "/") {
		return false
	}
	exp, ok := tokenExpiry(user.Token)
	return ok && exp.After(at)
}

// tokenExpiry reads the exp claim of a JSON web token without verifying
// it: the apiserver verifies; this only decides whether to ask for a new
// one.
func tokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return time.Time{}, false
	}
	return time.Unix(claims.Exp, 0), true
}
