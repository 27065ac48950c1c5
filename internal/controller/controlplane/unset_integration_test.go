package controlplane_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// roundTrip is one optional field of a ControlPlane the Nova projection
// reads: a merge patch that changes it from the suite's ControlPlane, one
// that changes it back, and the part of the projected Nova it decides.
type roundTrip struct {
	change, back string
	projected    func(*novav1alpha1.Nova) any
}

// roundTrips holds a case for every optional field of the ControlPlane's
// spec that the Nova projection reads, keyed by its schema path. Cases set
// what the suite's ControlPlane leaves out and unset what it sets, so each
// runs both ways: a field GitOps removes, and one it adds back.
func roundTrips(name string) map[string]roundTrip {
	nova := func(field string) func(value string) string {
		return func(value string) string { return `{"spec":{"services":{"nova":{"` + field + `":` + value + `}}}}` }
	}
	// service adds a referenced service the suite's ControlPlane leaves
	// out; the Nova's endpoints use its internal endpoint.
	service := func(svc string) roundTrip {
		patch := func(value string) string { return `{"spec":{"services":{"` + svc + `":` + value + `}}}` }
		return roundTrip{
			change:    patch(`{"internalEndpoint":"http://` + svc + `.openstack.svc","publicEndpoint":"https://` + svc + `.example.com"}`),
			back:      patch("null"),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.Endpoints },
		}
	}
	// internal drops the internal endpoint of a service the suite's
	// ControlPlane has, which leaves the Nova's override of it empty.
	internal := func(svc string) roundTrip {
		patch := func(value string) string {
			return `{"spec":{"services":{"` + svc + `":{"internalEndpoint":` + value + `}}}}`
		}
		return roundTrip{
			change:    patch("null"),
			back:      patch(`"http://` + svc + `.openstack.svc"`),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.Endpoints },
		}
	}
	database := func(field, db string) roundTrip {
		return roundTrip{
			change:    nova(field)("null"),
			back:      nova(field)(`{"host":"mariadb.openstack.svc","database":"` + db + `","secretName":"` + name + `-db"}`),
			projected: func(n *novav1alpha1.Nova) any { return []any{n.Spec.APIDatabase, n.Spec.Database} },
		}
	}
	return map[string]roundTrip{
		"spec.services.nova.consoleProxy": {
			change:    nova("consoleProxy")(`{"enabled":true,"hostname":"console.example.com"}`),
			back:      nova("consoleProxy")("null"),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.ConsoleProxy },
		},
		"spec.services.nova.metadataGateway": {
			change:    nova("metadataGateway")(`{"hostname":"metadata.example.com","parentRef":{"name":"gateway","namespace":"` + testNamespace + `"}}`),
			back:      nova("metadataGateway")("null"),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.Metadata.Gateway },
		},
		"spec.services.nova.metadataSharedSecretRef": {
			change:    nova("metadataSharedSecretRef")(`{"name":"` + name + `-shared","key":"secret"}`),
			back:      nova("metadataSharedSecretRef")("null"),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.Metadata.SharedSecretRef },
		},
		"spec.services.nova.remoteCompute": {
			change:    nova("remoteCompute")(`{"transportURLSecretRef":{"name":"` + name + `-remote-transport"}}`),
			back:      nova("remoteCompute")("null"),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.RemoteCompute },
		},
		"spec.services.nova.replicas": {
			change:    nova("replicas")("3"),
			back:      nova("replicas")("null"),
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.Replicas },
		},
		"spec.services.nova.apiDatabase": database("apiDatabase", "nova_api"),
		"spec.services.nova.database":    database("database", "nova"),
		"spec.infrastructure.messaging.tls": {
			change:    `{"spec":{"infrastructure":{"messaging":{"tls":null}}}}`,
			back:      `{"spec":{"infrastructure":{"messaging":{"tls":{"caBundleSecretRef":{"name":"` + name + `-bus-ca"}}}}}}`,
			projected: func(n *novav1alpha1.Nova) any { return n.Spec.Messaging.TLS },
		},
		"spec.services.cinder":                     service("cinder"),
		"spec.services.barbican":                   service("barbican"),
		"spec.services.placement.internalEndpoint": internal("placement"),
		"spec.services.glance.internalEndpoint":    internal("glance"),
		"spec.services.neutron.internalEndpoint":   internal("neutron"),
	}
}

// notProjected are the optional fields on the path of roundTrips that the
// Nova projection does not read, or whose removal is not a way back to a
// default, each with the reason.
var notProjected = map[string]string{
	"spec.infrastructure":                    "holds messaging, which admission requires with services.nova",
	"spec.infrastructure.messaging":          "admission requires it with services.nova",
	"spec.services":                          "holds services.nova, the projection's subject",
	"spec.services.nova":                     "the projection's subject: without it the Nova is removed, not defaulted",
	"spec.services.keystone":                 "admission requires it with services.nova",
	"spec.services.placement":                "admission requires it with services.nova",
	"spec.services.glance":                   "admission requires it with services.nova",
	"spec.services.neutron":                  "admission requires it with services.nova",
	"spec.services.placement.gateway":        "read by the catalog and route steps, not by the projection",
	"spec.services.placement.publicEndpoint": "read by the catalog step, not by the projection",
	"spec.services.glance.gateway":           "read by the catalog and route steps, not by the projection",
	"spec.services.glance.publicEndpoint":    "read by the catalog step, not by the projection",
	"spec.services.neutron.gateway":          "read by the catalog and route steps, not by the projection",
	"spec.services.neutron.publicEndpoint":   "read by the catalog step, not by the projection",
	"spec.services.neutron.ovn":              "read by the OVN step, not by the projection",
	"spec.services.nova.hypervisorOperator":  "read by the accounts step, which writes Keystone users, not by the projection",
	"spec.services.nova.internalEndpoint":    "read by the catalog step, not by the projection",
	"spec.services.nova.publicEndpoint":      "read by the catalog step, not by the projection",
}

// Every optional field the Nova projection reads goes and comes back the
// way GitOps does it, with merge patches: the ControlPlane never wedges on
// the way (NovaProjectionRejected), and once the field is back the Nova
// reads as it did before and NovaReady is True on the new generation.
// Issue #34: server-side apply removed the fields the last apply owned
// under spec.consoleProxy and left the emptied object null, which the
// Nova's schema refused until the field was made nullable.
func TestIntegrationProjectedFieldsRoundTrip(t *testing.T) {
	e := startOperator(t)
	const name = "unset"
	newControlPlane(t, name, false)
	putSecret(t, name+"-shared", map[string]string{"secret": "round-trip-shared-secret"})
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	cases := roundTrips(name)
	for _, path := range slices.Sorted(maps.Keys(cases)) {
		rt := cases[path]
		t.Run(path, func(t *testing.T) {
			before := rt.projected(projectedNova(t, name))
			mergePatchControlPlane(t, name, rt.change)
			waitNova(t, name, "the Nova follows the change of "+path, rt.projected, func(v any) bool {
				return !equality.Semantic.DeepEqual(v, before)
			})
			waitPassOnGeneration(t, name)
			mergePatchControlPlane(t, name, rt.back)
			waitNova(t, name, "the Nova back as it was before "+path+" changed", rt.projected, func(v any) bool {
				return equality.Semantic.DeepEqual(v, before)
			})
			waitSettledOnGeneration(t, name)
		})
	}
	cp := &c5c3v1alpha1.ControlPlane{}
	if err := e.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
		t.Fatal(err)
	}
	if cp.Spec.Services.Nova.ConsoleProxy != nil {
		t.Errorf("the merge patch left consoleProxy %+v on the ControlPlane", cp.Spec.Services.Nova.ConsoleProxy)
	}
}

// mergePatchControlPlane sends a JSON merge patch, as kubectl patch --type
// merge does, so that a null removes the field.
func mergePatchControlPlane(t *testing.T, name, patch string) {
	t.Helper()
	cp := &c5c3v1alpha1.ControlPlane{}
	cp.Namespace, cp.Name = testNamespace, name
	if err := env.Management.Client.Patch(t.Context(), cp, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching ControlPlane %s with %s: %v", name, patch, err)
	}
}

// projectedNova reads the Nova a ControlPlane projects.
func projectedNova(t *testing.T, cp string) *novav1alpha1.Nova {
	t.Helper()
	n := &novav1alpha1.Nova{}
	if err := env.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: cp + "-nova"}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitNova polls the projected Nova until ok holds for the part of it
// projected returns.
func waitNova(t *testing.T, cp, what string, projected func(*novav1alpha1.Nova) any, ok func(any) bool) {
	t.Helper()
	var last any
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n := &novav1alpha1.Nova{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: cp + "-nova"}, n); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		last = projected(n)
		return ok(last), nil
	})
	if err != nil {
		n := projectedNova(t, cp)
		var managers []string
		for _, m := range n.ManagedFields {
			managers = append(managers, fmt.Sprintf("%s %s %s: %s", m.Manager, m.Operation, m.Subresource, m.FieldsV1.GetRawString()))
		}
		ctl := &c5c3v1alpha1.ControlPlane{}
		_ = env.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: cp}, ctl)
		t.Fatalf("%s: not within a minute; the Nova reads %+v; ControlPlane generation %d, conditions %+v; managers:\n%s",
			what, last, ctl.Generation, ctl.Status.Conditions, strings.Join(managers, "\n"))
	}
}

// waitPassOnGeneration waits until NovaReady reports on the ControlPlane's
// current generation, whatever its status, and fails if the apiserver
// refused the projection: a Nova that waits on something the change asks
// for is fine, a wedge is not.
func waitPassOnGeneration(t *testing.T, name string) {
	t.Helper()
	var c *metav1.Condition
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		c = apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.NovaReadyCondition)
		return c != nil && c.ObservedGeneration == cp.Generation, nil
	})
	if err != nil {
		t.Fatalf("ControlPlane %s: no pass on its generation (NovaReady %+v)", name, c)
	}
	if c.Reason == c5c3v1alpha1.NovaProjectionRejectedReason {
		t.Fatalf("ControlPlane %s wedged: %s", name, c.Message)
	}
}

// waitSettledOnGeneration waits until the ControlPlane's NovaReady is True
// for its current generation: the pass after the change succeeded.
func waitSettledOnGeneration(t *testing.T, name string) {
	t.Helper()
	var seen string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		c := apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.NovaReadyCondition)
		if c == nil {
			seen = "no NovaReady"
			return false, nil
		}
		seen = fmt.Sprintf("NovaReady=%s %s on generation %d of %d: %s", c.Status, c.Reason, c.ObservedGeneration, cp.Generation, c.Message)
		return c.Status == metav1.ConditionTrue && c.ObservedGeneration == cp.Generation, nil
	})
	if err != nil {
		t.Fatalf("ControlPlane %s did not settle on its generation: %s", name, seen)
	}
}
