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
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// Every optional field of the ControlPlane with a round trip goes and
// comes back the way GitOps does it, with merge patches: the ControlPlane
// never wedges on the way (NovaProjectionRejected), and once the field is
// back what it decides (the projected Nova, a Secret the ControlPlane
// writes, a condition) reads as it did before and NovaReady is True on the
// new generation. Issue #34: server-side apply removed the fields the last
// apply owned under spec.consoleProxy and left the emptied object null,
// which the Nova's schema refused until the field was made nullable.
func TestIntegrationProjectedFieldsRoundTrip(t *testing.T) {
	// A long suite, like the other kinds' round trips in test/roundtrip;
	// make test keeps its coverage test, TestRoundTripsCoverEveryOptionalField.
	testenv.Long(t, "test-all")
	e := startOperator(t)
	const name = "unset"
	newControlPlane(t, name, false)
	putSecret(t, name+"-shared", map[string]string{"secret": "round-trip-shared-secret"})
	// Second keys for the key fields' round trips, each with another value
	// than the default key's, so that the change shows in the children.
	putSecret(t, name+"-bus", map[string]string{"transport_url": busURL, "other_url": remoteBusURL})
	putSecret(t, name+"-bus-ca", map[string]string{"ca.crt": caBundle, "other.crt": otherCABundle})
	putSecret(t, name+"-nova-password", map[string]string{"password": servicePass, "other": rotatedPass})
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	cases := roundTrips(name)
	for _, path := range slices.Sorted(maps.Keys(cases)) {
		rt := cases[path]
		t.Run(path, func(t *testing.T) {
			before := rt.observed(t, name)
			mark, err := e.Management.AuditMark()
			if err != nil {
				t.Fatal(err)
			}
			mergePatchControlPlane(t, name, rt.change)
			waitObserved(t, name, "the children follow the change of "+path, rt.observed, func(v any) bool {
				return !equality.Semantic.DeepEqual(v, before)
			})
			waitPassOnGeneration(t, name)
			mergePatchControlPlane(t, name, rt.back)
			waitObserved(t, name, "the children back as they were before "+path+" changed", rt.observed, func(v any) bool {
				return equality.Semantic.DeepEqual(v, before)
			})
			waitSettledOnGeneration(t, name)
			checkWrittenOnceEachWay(t, name, mark)
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

// checkWrittenOnceEachWay fails for an object of the ControlPlane name
// (its Nova, the Nova's children, the Secrets it writes, all named
// name-...) that the operator stored more than twice since mark: one write
// for the change and one for the way back are all a round trip needs.
func checkWrittenOnceEachWay(t *testing.T, name string, mark int64) {
	t.Helper()
	events, _, err := env.Management.AuditWrites(mark)
	if err != nil {
		t.Fatal(err)
	}
	repeated := testenv.RepeatedWrites(events, 2, func(e testenv.AuditEvent) bool {
		return e.Namespace == testNamespace && e.Resource != "events" && strings.HasPrefix(e.Name, name+"-")
	})
	for key, writes := range repeated {
		t.Errorf("the operator stored %s %d times in one round trip, where one write each way is enough:\n%s",
			key, len(writes), testenv.FormatAuditEvents(writes))
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

// waitObserved polls what a round trip observes until ok holds for it.
func waitObserved(t *testing.T, cp, what string, observed func(*testing.T, string) any, ok func(any) bool) {
	t.Helper()
	var last any
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = observed(t, cp)
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
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != cp.Generation {
			return false, nil
		}
		// The Nova's own pass on its generation too: it writes the
		// Deployments the change rolls, and the next round trip's audit
		// window must not open before those writes are done.
		n := &novav1alpha1.Nova{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-nova"}, n); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		ready := apimeta.FindStatusCondition(n.Status.Conditions, anvilmeta.ReadyCondition)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != n.Generation {
			seen = fmt.Sprintf("the Nova's Ready is %+v on generation %d", ready, n.Generation)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("ControlPlane %s did not settle on its generation: %s", name, seen)
	}
}
