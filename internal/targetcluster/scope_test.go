package targetcluster

import (
	"errors"
	"testing"

	"github.com/anvil/anvil/internal/childwriter"
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
			var refused *childwriter.NamespaceNotAllowedError
			if got := errors.As(err, &refused); got != tt.refused || (err != nil && !got) {
				t.Fatalf("checkScope = %v, want refused %v", err, tt.refused)
			}
			if tt.refused && (refused.Cluster != "compute-a" || refused.Namespace != tt.namespace) {
				t.Errorf("refusal names %s/%q", refused.Cluster, refused.Namespace)
			}
		})
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
