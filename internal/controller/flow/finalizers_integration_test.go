package flow_test

import (
	"context"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, &env))
}

// Finalizers are patched by a test of the list the pass read: a status or
// label write since the read does not stop the patch, a finalizer someone
// else added meanwhile does, and is never lost; the pass's object takes
// the new version; removing an absent finalizer, or one from an object
// already gone, costs nothing.
func TestIntegrationFinalizerPatches(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	c := e.Management.Client
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "finalizers", Namespace: testenv.WorkloadNamespace}}
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	read := obj.DeepCopy()

	// Someone labels the object after the pass read it: the read is
	// stale, but its finalizers are not.
	labelled := obj.DeepCopy()
	labelled.Labels = map[string]string{"touched": "yes"}
	if err := c.Update(ctx, labelled); err != nil {
		t.Fatal(err)
	}
	if err := flow.AddFinalizer(ctx, c, read, "example.com/mine"); err != nil {
		t.Fatalf("a stale read with current finalizers: %v", err)
	}
	live := get(t, c, obj)
	if !slices.Equal(live.Finalizers, []string{"example.com/mine"}) || live.Labels["touched"] != "yes" {
		t.Fatalf("live object: finalizers %v, labels %v", live.Finalizers, live.Labels)
	}
	if read.ResourceVersion != live.ResourceVersion || !slices.Equal(read.Finalizers, live.Finalizers) {
		t.Error("the pass's object did not take the patch's version and finalizers")
	}
	if err := flow.AddFinalizer(ctx, c, read, "example.com/mine"); err != nil || get(t, c, obj).ResourceVersion != live.ResourceVersion {
		t.Errorf("adding a finalizer the object has wrote (%v)", err)
	}

	// Someone adds a finalizer of their own after the pass read: the
	// pass's patch fails, and theirs stays.
	stale := read.DeepCopy()
	theirs := get(t, c, obj)
	theirs.Finalizers = append(theirs.Finalizers, "example.com/theirs")
	if err := c.Update(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if err := flow.RemoveFinalizer(ctx, c, stale, "example.com/mine"); err == nil {
		t.Error("a patch from a read that missed another finalizer went through")
	}
	if got := get(t, c, obj).Finalizers; !slices.Equal(got, []string{"example.com/mine", "example.com/theirs"}) {
		t.Errorf("finalizers after the refused patch: %v", got)
	}
	fresh := get(t, c, obj)
	if err := flow.RemoveFinalizer(ctx, c, fresh, "example.com/mine"); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, obj).Finalizers; !slices.Equal(got, []string{"example.com/theirs"}) {
		t.Errorf("finalizers after removing the pass's own: %v", got)
	}

	// The last finalizer goes with a deleted object, which then is gone;
	// a pass that still holds it finds nothing to do.
	if err := c.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	last := get(t, c, obj)
	if err := flow.RemoveFinalizer(ctx, c, last, "example.com/theirs"); err != nil {
		t.Fatal(err)
	}
	last.Finalizers = []string{"example.com/theirs"}
	if err := flow.RemoveFinalizer(ctx, c, last, "example.com/theirs"); err != nil {
		t.Errorf("removing a finalizer from an object already gone: %v", err)
	}
}

// get reads obj's live state.
func get(t *testing.T, c client.Client, obj *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	live := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), live); err != nil {
		t.Fatal(err)
	}
	return live
}
