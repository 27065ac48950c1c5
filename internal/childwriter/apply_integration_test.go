package childwriter_test

import (
	"context"
	"errors"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

// meanwhile is a Reader that lets someone else act right after a read,
// before the writer's write: the window a controller's pass cannot close
// by reading carefully.
type meanwhile struct {
	client.Reader
	act func(ctx context.Context)
}

func (m *meanwhile) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := m.Reader.Get(ctx, key, obj, opts...)
	if m.act != nil {
		act := m.act
		m.act = nil
		act(ctx)
	}
	return err
}

// A remote Apply never takes over an object someone created or put in
// place of the child between its read and its write: it reads again,
// finds the object foreign and reports it, and the object stays as its
// creator wrote it. Without anyone in the window it creates and changes
// the child as before.
func TestIntegrationApplyLeavesWhatAppearedAfterItsRead(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	c := e.Management.Client
	owner := &ovnv1alpha1.OVNChassis{
		ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default", UID: "uid-1"},
		Spec:       ovnv1alpha1.OVNChassisSpec{TargetClusterRef: &anvilmeta.TargetClusterRef{Name: "compute-a"}},
	}
	reader := &meanwhile{Reader: c}
	w := &childwriter.Writer{Client: c, Reader: reader, Scheme: e.Scheme, Cluster: "compute-a"}
	child := func(name, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string][]byte{"k": []byte(value)}}
	}
	plant := func(name string) func(context.Context) {
		return func(ctx context.Context) {
			_ = c.Delete(ctx, child(name, ""))
			if err := c.Create(ctx, child(name, "theirs")); err != nil {
				t.Errorf("planting %s: %v", name, err)
			}
		}
	}
	assertTheirs := func(name string, err error) {
		t.Helper()
		var notOwned *childwriter.NotOwnedError
		if !errors.As(err, &notOwned) {
			t.Errorf("%s: Apply returned %v, want a NotOwnedError", name, err)
		}
		live := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, live); err != nil {
			t.Fatal(err)
		}
		if string(live.Data["k"]) != "theirs" || childwriter.Controls(owner, live, e.Scheme) {
			t.Errorf("%s: the foreign Secret was taken over: %v", name, live.Labels)
		}
	}

	// Absent at the read, created by someone else before the write.
	reader.act = plant("appeared")
	assertTheirs("appeared", w.Apply(ctx, owner, child("appeared", "ours")))

	// Owned at the read, replaced by someone else before the write.
	if err := w.Apply(ctx, owner, child("replaced", "ours")); err != nil {
		t.Fatal(err)
	}
	reader.act = plant("replaced")
	assertTheirs("replaced", w.Apply(ctx, owner, child("replaced", "changed")))

	// Nobody in the window: created, then changed.
	for i, value := range []string{"ours", "changed"} {
		s := child("plain", value)
		if err := w.Apply(ctx, owner, s); err != nil {
			t.Fatal(err)
		}
		live := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
			t.Fatal(err)
		}
		if string(live.Data["k"]) != value || !childwriter.Controls(owner, live, e.Scheme) {
			// The Secret's data is not printed: a test reports a
			// mismatch, never a Secret's value.
			t.Errorf("plain: after applying value %d of 2, live data matches = %v, owned = %v; want both", i+1,
				string(live.Data["k"]) == value, childwriter.Controls(owner, live, e.Scheme))
		}
	}
}
