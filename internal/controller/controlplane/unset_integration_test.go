package controlplane_test

import (
	"context"
	"fmt"
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

// Unsetting the console proxy, the way GitOps does it (a merge patch with
// null), takes the Nova back to the console proxy of a ControlPlane that
// never set one, and the ControlPlane stays Ready on its new generation.
// Issue #34: server-side apply removed the fields the last apply owned
// under spec.consoleProxy and left the emptied object null, which the
// Nova's schema refused until the field was made nullable, so every pass
// failed.
func TestIntegrationUnsetConsoleProxy(t *testing.T) {
	e := startOperator(t)
	const name = "unset"
	newControlPlane(t, name, false)
	waitNovaReady(t, name, c5c3v1alpha1.NovaReadyReason)
	never := projectedNova(t, name).Spec.ConsoleProxy

	mergePatchControlPlane(t, name, `{"spec":{"services":{"nova":{"consoleProxy":{"enabled":true,"hostname":"console.example.com"}}}}}`)
	waitNova(t, name, "the Nova publishes the console proxy", func(n *novav1alpha1.Nova) bool {
		return n.Spec.ConsoleProxy.Enabled && n.Spec.ConsoleProxy.Hostname == "console.example.com"
	})
	waitSettledOnGeneration(t, name)

	mergePatchControlPlane(t, name, `{"spec":{"services":{"nova":{"consoleProxy":null}}}}`)
	waitNova(t, name, "the Nova's console proxy back to that of a ControlPlane that never set one", func(n *novav1alpha1.Nova) bool {
		return equality.Semantic.DeepEqual(n.Spec.ConsoleProxy, never)
	})
	waitSettledOnGeneration(t, name)

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

// waitNova polls the projected Nova until ok holds.
func waitNova(t *testing.T, cp, what string, ok func(*novav1alpha1.Nova) bool) {
	t.Helper()
	var last novav1alpha1.ConsoleProxySpec
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n := &novav1alpha1.Nova{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: cp + "-nova"}, n); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		last = n.Spec.ConsoleProxy
		return ok(n), nil
	})
	if err != nil {
		n := projectedNova(t, cp)
		var managers []string
		for _, m := range n.ManagedFields {
			managers = append(managers, fmt.Sprintf("%s %s %s: %s", m.Manager, m.Operation, m.Subresource, m.FieldsV1.GetRawString()))
		}
		ctl := &c5c3v1alpha1.ControlPlane{}
		_ = env.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: cp}, ctl)
		t.Fatalf("%s: not within a minute; the Nova's consoleProxy reads %+v; ControlPlane generation %d, conditions %+v; managers:\n%s",
			what, last, ctl.Generation, ctl.Status.Conditions, strings.Join(managers, "\n"))
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
