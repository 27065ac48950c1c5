package devstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// OVNCentralName is the devstack's OVN central, in testenv.WorkloadNamespace
// on the management cluster: the name the guides use.
const OVNCentralName = "controlplane-ovn"

// ovnReadyTimeout bounds the wait for the central: certificates, two
// one-member Raft clusters and northd, all local processes.
const ovnReadyTimeout = 5 * time.Minute

// applyOVNCentral creates the central the sample ControlPlane's Neutron
// uses, with its certificates from a CA of its own, as a central that names
// no issuer gets, and waits until it is Ready. Its databases are not externally reachable: the
// guide's step 4 makes them so. An existing central is left as it is.
func (s *Stack) applyOVNCentral(ctx context.Context, _ *state) (string, error) {
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	central := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{
		Name: OVNCentralName, Namespace: testenv.WorkloadNamespace,
		Labels: map[string]string{managedByLabel: managedByValue},
	}}
	// One member per database. Zed's neutron-server creates its drop Port
	// Group before it forks, through a connection that must find the Raft
	// leader, and against three members on this loaded two-core host that
	// failed in about one start of two, taking neutron-server down a
	// minute later. The OVN suite covers three-member clusters.
	one := int32(1)
	central.Spec.Northbound.Replicas, central.Spec.Southbound.Replicas = &one, &one
	detail := "created"
	if err := c.Create(ctx, central); apierrors.IsAlreadyExists(err) {
		detail = "exists and is left as it is"
	} else if err != nil {
		return "", fmt.Errorf("OVNCentral %s: %w", OVNCentralName, err)
	}
	var ready *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, time.Second, ovnReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(central), central); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		ready = apimeta.FindStatusCondition(central.Status.Conditions, anvilmeta.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == central.Generation, nil
	})
	if err != nil {
		return "", fmt.Errorf("OVNCentral %s is not Ready after %s (Ready: %+v)", OVNCentralName, ovnReadyTimeout, ready)
	}
	return fmt.Sprintf("OVNCentral %s/%s %s; Ready", testenv.WorkloadNamespace, OVNCentralName, detail), nil
}

// pointNeutronAtOVNCentral restarts the service set's neutron-server
// against the central, which makes the central the ControlPlane's
// brownfield Neutron's. Neutron runs on this host, outside the cluster, so
// it dials the members where the pod runner runs them, each on a loopback
// address of its own, as a pod beside the central would dial their
// Services; it presents the central's client identity.
func (s *Stack) pointNeutronAtOVNCentral(ctx context.Context, st *state) (string, error) {
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	central := &ovnv1alpha1.OVNCentral{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: OVNCentralName}, central); err != nil {
		return "", err
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: central.Status.ClientSecretName}, secret); err != nil {
		return "", fmt.Errorf("the central's client Secret: %w", err)
	}
	dir := filepath.Join(s.dir, "ovn-client")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(dir, k), secret.Data[k], 0o600); err != nil {
			return "", err
		}
	}
	nb := memberAddresses(central, "nb", 6641, central.Spec.Northbound.ResolvedReplicas())
	sb := memberAddresses(central, "sb", 6642, central.Spec.Southbound.ResolvedReplicas())
	// Recorded first: a start-neutron that fails halfway may have
	// repointed it already.
	if st.OpenStack == nil {
		st.OpenStack = &openStackState{}
	}
	st.OpenStack.NeutronRepointed = true
	if err := s.saveState(st); err != nil {
		return "", err
	}
	if out, err := s.openstackScript(ctx, "start-neutron", false, "--nb", nb, "--sb", sb, "--tls-dir", dir); err != nil {
		return "", fmt.Errorf("hack/openstack/openstack.sh start-neutron: %w\n%s", err, out)
	}
	return "neutron-server uses " + nb + " and " + sb, nil
}

// memberAddresses lists a database's members where the pod runner runs
// them, in ordinal order.
func memberAddresses(central *ovnv1alpha1.OVNCentral, db string, port, replicas int32) string {
	addrs := make([]string, 0, replicas)
	for i := range replicas {
		pod := central.Name + "-" + db + "-" + strconv.Itoa(int(i))
		addrs = append(addrs, "ssl:"+podrunner.OwnPodAddress(central.Namespace, pod)+":"+strconv.Itoa(int(port)))
	}
	return strings.Join(addrs, ",")
}
