package targetcluster

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCheckScope(t *testing.T) {
	scope := []string{"openstack", "ovn"}
	tests := []struct {
		name       string
		scope      []string
		namespaced bool
		namespace  string
		refused    bool
	}{
		{name: "cluster-wide registration, any namespace", namespaced: true, namespace: "kube-system"},
		{name: "cluster-wide registration, every namespace", namespaced: true, namespace: ""},
		{name: "listed namespace", scope: scope, namespaced: true, namespace: "ovn"},
		{name: "unlisted namespace", scope: scope, namespaced: true, namespace: "kube-system", refused: true},
		{name: "every namespace under a scope", scope: scope, namespaced: true, namespace: "", refused: true},
		{name: "a prefix of a listed namespace", scope: scope, namespaced: true, namespace: "open", refused: true},
		{name: "cluster-scoped object under a scope", scope: scope, namespaced: false, namespace: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkScope("compute-a", tt.scope, tt.namespaced, tt.namespace)
			var refused *NamespaceNotAllowedError
			if got := errors.As(err, &refused); got != tt.refused || (err != nil && !got) {
				t.Fatalf("checkScope = %v, want refused %v", err, tt.refused)
			}
			if tt.refused && (refused.Cluster != "compute-a" || refused.Namespace != tt.namespace) {
				t.Errorf("refusal names %s/%q", refused.Cluster, refused.Namespace)
			}
		})
	}
}

// A sweep of a namespace the scope does not list is refused before any
// call: the Remote's reader and client are nil.
func TestSweepOutsideTheScopeIsRefused(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "team-x"}}
	err := Sweep(context.Background(), &Remote{Name: "compute-a", Namespaces: []string{"openstack"}}, scheme, owner,
		[]schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}})
	var refused *NamespaceNotAllowedError
	if !errors.As(err, &refused) || refused.Namespace != "team-x" {
		t.Errorf("Sweep outside the scope = %v, want a NamespaceNotAllowedError", err)
	}
}

// A cluster-wide registration gets the manager's client itself: there is
// nothing to check, and nothing to pay for.
func TestNewScopedClientOnlyWrapsScopedRegistrations(t *testing.T) {
	if c := newScopedClient(nil, "compute-a", nil); c != nil {
		t.Errorf("cluster-wide: %T, want the client unchanged", c)
	}
	if _, ok := newScopedClient(nil, "compute-a", []string{"openstack"}).(*scopedClient); !ok {
		t.Error("a scoped registration's client is not wrapped")
	}
}
