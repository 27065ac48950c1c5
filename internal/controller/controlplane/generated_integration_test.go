package controlplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/controlplane"
)

// plantOwnedSecret creates, as a user with Secret rights in the namespace
// would, a Secret of a generated name that carries the ownership labels of
// the ControlPlane cp and, under key, a value of the planter's choice.
func plantOwnedSecret(t *testing.T, name, cp, key, value string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: map[string]string{
			childwriter.OwnerKindLabel: "ControlPlane", childwriter.OwnerNameLabel: cp, childwriter.OwnerNamespaceLabel: testNamespace,
		}},
		Data: map[string][]byte{key: []byte(value)},
	}
	if err := env.Management.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// assertPlantedReplaced checks that the planted value is gone from the
// Secret and that a Warning event names the Secret.
func assertPlantedReplaced(t *testing.T, name, key, planted string) {
	t.Helper()
	if got := string(localSecret(t, name).Data[key]); got == planted || got == "" {
		t.Errorf("Secret %s still holds the planted value, or none", name)
	}
	if n := countEvents(t, c5c3v1alpha1.GeneratedSecretReplacedEvent, name); n == 0 {
		t.Errorf("no %s event names Secret %s", c5c3v1alpha1.GeneratedSecretReplacedEvent, name)
	}
}

// assertGeneratedRecorded checks that the ControlPlane's status vouches
// for the value the Secret holds.
func assertGeneratedRecorded(t *testing.T, cp, name, value string) {
	t.Helper()
	live := &c5c3v1alpha1.ControlPlane{}
	if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: cp}, live); err != nil {
		t.Fatal(err)
	}
	if !controlplane.Vouches(live.Status.GeneratedSecrets, name, value) {
		t.Errorf("status.generatedSecrets %v does not vouch for the value of %s", live.Status.GeneratedSecrets, name)
	}
}

// countEvents counts the events of reason whose related object is the
// Secret name.
func countEvents(t *testing.T, reason, name string) int {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Management.Client.List(context.Background(), list, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Reason == reason && ev.Related != nil && ev.Related.Kind == "Secret" && ev.Related.Name == name {
			n++
		}
	}
	return n
}

// waitForgotten waits until the ControlPlane's status no longer records a
// Secret Anvil deleted.
func waitForgotten(t *testing.T, cp, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		live := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: cp}, live); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(live.Status.GeneratedSecrets, func(e c5c3v1alpha1.GeneratedSecret) bool { return e.Name == name }), nil
	})
	if err != nil {
		t.Errorf("status.generatedSecrets still lists the deleted Secret %s: %v", name, err)
	}
}
