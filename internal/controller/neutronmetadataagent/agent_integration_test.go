package neutronmetadataagent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/neutronmetadataagent"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// mirrorName is the ControlPlane's copy of the shared secret the suite's
// agents name, as the guide's agent does.
const mirrorName = "controlplane-nova-metadata-agent-secret"

// sharedSecret is the copy's first value; no log, condition or
// annotation may ever carry it.
const sharedSecret = "Zq8vN3rT5wY1pL7x" // a test value, not a credential

// ChassisReady names a chassis that does not exist, and an agent placed
// on another cluster than its chassis; neither writes anything.
func TestIntegrationChassisReasons(t *testing.T) {
	e := startOperator(t)
	newCentral(t, "reasons-ovn")
	newChassis(t, "reasons-local", "reasons-ovn", "")

	newAgent(t, "reasons-missing", "no-such-chassis", nil)
	a := waitAgent(t, "reasons-missing", neutronv1alpha1.ChassisReadyCondition, neutronv1alpha1.ChassisNotFoundReason)
	if !controllerutil.ContainsFinalizer(a, placement.RemoteChildrenFinalizer) {
		t.Error("a placed agent has no remote-children finalizer")
	}

	newAgent(t, "reasons-elsewhere", "reasons-local", nil)
	a = waitAgent(t, "reasons-elsewhere", neutronv1alpha1.ChassisReadyCondition, neutronv1alpha1.ChassisOnAnotherClusterReason)
	c := condition(a, neutronv1alpha1.ChassisReadyCondition)
	if !strings.Contains(c.Message, "target cluster compute-a") || !strings.Contains(c.Message, "the management cluster") {
		t.Errorf("message %q does not name both clusters", c.Message)
	}
	for _, name := range []string{"reasons-missing", "reasons-elsewhere"} {
		assertNoDaemonSet(t, e.ComputeCluster("compute-a"), name)
	}
}

// The guide's agent on compute-a: it waits for the CA with nothing
// written, then runs with the chassis's identity and the CA mounted and
// the shared secret from its Secret, and rolls when the secret rotates.
func TestIntegrationAgentOnComputeCluster(t *testing.T) {
	e := startOperator(t)
	compute := e.ComputeCluster("compute-a")
	central := newCentral(t, "guide-ovn")
	newChassis(t, "guide-chassis", central.Name, "compute-a")
	create(t, compute, newMirror(sharedSecret))

	newAgent(t, "guide-agent", "guide-chassis", httpsWithCA)
	a := waitAgent(t, "guide-agent", neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.WaitingForNovaMetadataCAReason)
	if c := condition(a, neutronv1alpha1.SecretsReadyCondition); !strings.Contains(c.Message, "nova-metadata-ca") || !strings.Contains(c.Message, "ca.crt") {
		t.Errorf("message %q does not name the Secret and its key", c.Message)
	}
	assertNoDaemonSet(t, compute, "guide-agent")

	create(t, compute, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nova-metadata-ca", Namespace: ns},
		Data: map[string][]byte{"ca.crt": []byte("-----BEGIN CERTIFICATE-----\n")}})
	waitAgent(t, "guide-agent", neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.SecretsAvailableReason)
	// No pod runs, so the rollout never completes.
	waitAgent(t, "guide-agent", neutronv1alpha1.DaemonSetReadyCondition, neutronv1alpha1.DaemonSetProgressingReason)

	ds := &appsv1.DaemonSet{}
	if err := compute.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "guide-agent-metadata-agent"}, ds); err != nil {
		t.Fatal(err)
	}
	checkDaemonSet(t, ds, central.Status.Southbound.DBAddress)
	checkConfigMap(t, compute, ds, central.Status.Southbound.DBAddress)
	assertNoDaemonSet(t, e.Management, "guide-agent")

	// A rotation reaches the pod template through the Secret watch on
	// compute-a.
	rotated := newMirror("rotated-" + sharedSecret)
	if err := compute.Client.Update(context.Background(), rotated); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod template follows the rotation", func() error {
		if err := compute.Client.Get(context.Background(), client.ObjectKeyFromObject(ds), ds); err != nil {
			return err
		}
		if got, want := ds.Spec.Template.Annotations[neutronv1alpha1.MetadataSecretHashAnnotation], neutronmetadataagent.SharedSecretHash([]byte("rotated-"+sharedSecret)); got != want {
			return fmt.Errorf("hash %s, want %s", got, want)
		}
		return nil
	})

	// A '$' would be expanded by oslo.config in the pods' variable, so the
	// pass stops before the DaemonSet and keeps the last good template.
	dollar := newMirror("$HOME-" + sharedSecret)
	if err := compute.Client.Update(context.Background(), dollar); err != nil {
		t.Fatal(err)
	}
	a = waitAgent(t, "guide-agent", neutronv1alpha1.SecretsReadyCondition, neutronv1alpha1.SharedSecretUnusableReason)
	if c := condition(a, neutronv1alpha1.SecretsReadyCondition); !strings.Contains(c.Message, mirrorName) || strings.Contains(c.Message, "HOME") {
		t.Errorf("message %q does not name the Secret, or quotes its value", c.Message)
	}
	if err := compute.Client.Get(context.Background(), client.ObjectKeyFromObject(ds), ds); err != nil {
		t.Fatal(err)
	}
	if got, want := ds.Spec.Template.Annotations[neutronv1alpha1.MetadataSecretHashAnnotation], neutronmetadataagent.SharedSecretHash([]byte("rotated-"+sharedSecret)); got != want {
		t.Errorf("a refused secret moved the pod template's hash to %s", got)
	}
	assertNoSecretLeak(t, a)
}

// An agent's teardown sweeps its own children on compute-a and deletes
// nothing else: the ControlPlane's copy it read stays, even after the last
// agent naming it went (withdrawing it is the ControlPlane's, whose own
// tests hold that), and so do an unlabelled Secret and one that carries
// the mirror label without a ControlPlane's ownership.
func TestIntegrationTeardownLeavesTheControlPlanesCopy(t *testing.T) {
	startOperator(t)
	compute := env.ComputeCluster("compute-a")
	central := newCentral(t, "reap-ovn")
	newChassis(t, "reap-chassis", central.Name, "compute-a")
	create(t, compute, newMirror(sharedSecret))
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users-own-secret", Namespace: ns},
		Data: map[string][]byte{"shared_secret": []byte("x")}}
	create(t, compute, unlabelled)
	planted := newMirror(sharedSecret)
	planted.Name = "planted-nova-metadata-agent-secret"
	planted.Labels = map[string]string{neutronv1alpha1.MetadataSharedSecretMirrorLabel: "true"}
	create(t, compute, planted)

	first := newAgent(t, "reap-first", "reap-chassis", nil)
	second := newAgent(t, "reap-second", "reap-chassis", func(a *neutronv1alpha1.NeutronMetadataAgent) {
		a.Spec.NovaMetadata.SharedSecretRef.Name = planted.Name
	})
	waitAgent(t, "reap-first", neutronv1alpha1.DaemonSetReadyCondition, neutronv1alpha1.DaemonSetProgressingReason)
	waitAgent(t, "reap-second", neutronv1alpha1.DaemonSetReadyCondition, neutronv1alpha1.DaemonSetProgressingReason)

	deleteAndWait(t, first)
	deleteAndWait(t, second)
	assertNoDaemonSet(t, compute, "reap-first")
	assertNoDaemonSet(t, compute, "reap-second")
	for _, name := range []string{mirrorName, unlabelled.Name, planted.Name} {
		if !exists(t, compute, name) {
			t.Errorf("an agent's teardown deleted Secret %s, which is not the agent's", name)
		}
	}
}

// httpsWithCA is the guide's novaMetadata.
func httpsWithCA(a *neutronv1alpha1.NeutronMetadataAgent) {
	a.Spec.NovaMetadata.Host = "nova-metadata.127-0-0-1.nip.io"
	a.Spec.NovaMetadata.Port = ptr.To[int32](443)
	a.Spec.NovaMetadata.Protocol = neutronv1alpha1.ProtocolHTTPS
	a.Spec.NovaMetadata.CABundleSecretRef = &neutronv1alpha1.SecretKeyRef{Name: "nova-metadata-ca"}
}

// newMirror is the ControlPlane's copy as §5.3 writes it.
func newMirror(value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: mirrorName, Namespace: ns, Labels: map[string]string{
			neutronv1alpha1.MetadataSharedSecretMirrorLabel: "true",
			childwriter.OwnerKindLabel:                      "ControlPlane", childwriter.OwnerNameLabel: "controlplane",
			childwriter.OwnerNamespaceLabel: ns,
		}},
		Data: map[string][]byte{"shared_secret": []byte(value)},
	}
}

func condition(a *neutronv1alpha1.NeutronMetadataAgent, typ string) metav1.Condition {
	for _, c := range a.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// assertNoDaemonSet fails if the agent's DaemonSet exists on c.
func assertNoDaemonSet(t *testing.T, c *testenv.Cluster, agent string) {
	t.Helper()
	err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: agent + "-metadata-agent"}, &appsv1.DaemonSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet of %s on %s: %v, want none", agent, c.Name, err)
	}
}

// exists tells whether the Secret exists on c.
func exists(t *testing.T, c *testenv.Cluster, name string) bool {
	t.Helper()
	err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// deleteAndWait deletes an agent and waits until its teardown released it.
func deleteAndWait(t *testing.T, a *neutronv1alpha1.NeutronMetadataAgent) {
	t.Helper()
	if err := env.Management.Client.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	waitGone(t, a)
}
