package targetcluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// ChangeFromCache writes a change without reading the child first, yet it
// never overwrites what the owner does not control: a child replaced by a
// foreign Secret behind a cache that still shows the owner's is refused,
// and a settled child costs no write.
func TestIntegrationChangeFromCacheTakesNothingItDoesNotOwn(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	remote := waitResolves(t, "compute-a")
	children := remote.Writer()
	ns := testenv.WorkloadNamespace
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cached-owner", Namespace: ns}}
	child := func(v string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cached-child", Namespace: ns}, Data: map[string][]byte{"k": []byte(v)}}
	}
	live := func() *corev1.Secret {
		s := &corev1.Secret{}
		if err := remote.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cached-child"}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// cachedHash waits until the cluster's cache shows the child's applied
	// hash as the apiserver has it.
	cachedHash := func() {
		t.Helper()
		want := live().Annotations[childwriter.AppliedHashAnnotation]
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
			err := remote.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cached-child"}, m)
			return err == nil && m.Annotations[childwriter.AppliedHashAnnotation] == want, nil
		})
		if err != nil {
			t.Fatal("the cache never showed the child's applied hash")
		}
	}
	t.Cleanup(func() { _ = remote.Client.Delete(ctx, child("")) })

	if err := children.Apply(ctx, owner, child("one"), childwriter.ChangeFromCache); err != nil {
		t.Fatal(err)
	}
	first := live()
	if first.Annotations[childwriter.AppliedHashAnnotation] == "" || string(first.Data["k"]) != "one" {
		t.Fatalf("the first apply did not write the child with its hash: %v", first.Annotations)
	}
	cachedHash()

	// A change goes out, with a new hash.
	if err := children.Apply(ctx, owner, child("two"), childwriter.ChangeFromCache); err != nil {
		t.Fatal(err)
	}
	second := live()
	if string(second.Data["k"]) != "two" || second.Annotations[childwriter.AppliedHashAnnotation] == first.Annotations[childwriter.AppliedHashAnnotation] {
		t.Fatal("the change did not reach the child, or its hash did not move")
	}
	cachedHash()

	// A settled child is not written.
	if err := children.Apply(ctx, owner, child("two"), childwriter.ChangeFromCache); err != nil {
		t.Fatal(err)
	}
	if rv := live().ResourceVersion; rv != second.ResourceVersion {
		t.Errorf("a settled apply wrote: resourceVersion %s became %s", second.ResourceVersion, rv)
	}

	// Replaced by a foreign Secret behind the cache's back: the cached
	// resourceVersion no longer matches, and the careful path refuses.
	if err := remote.Client.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cached-child", Namespace: ns}, Data: map[string][]byte{"k": []byte("theirs")}}
	if err := remote.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	err := children.Apply(ctx, owner, child("three"), childwriter.ChangeFromCache)
	var notOwned *childwriter.NotOwnedError
	if !errors.As(err, &notOwned) {
		t.Errorf("applying over a foreign Secret returned %v, want a NotOwnedError", err)
	}
	if got := live(); string(got.Data["k"]) != "theirs" || got.Labels[childwriter.OwnerKindLabel] != "" {
		t.Error("the foreign Secret was changed")
	}
}
