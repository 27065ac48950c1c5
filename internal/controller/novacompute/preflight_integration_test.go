package novacompute_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// testPreflight creates pool-c on nodeC while the remote bus the contract
// names is broken three ways in turn: a closed port, a certificate from
// another CA (Keystone's https port) and a wrong password. The pool's
// preflight Job on compute-a names each failure on PreflightReady and the
// DaemonSet is never written; pool-a's DaemonSet keeps its template.
// Putting the right URL back starts pool-c without touching it.
func testPreflight(t *testing.T, e *testenv.Environment, compute *testenv.Cluster) {
	good, err := cloud.Local().TransportURL(true)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(good)
	if err != nil {
		t.Fatal("the local transport URL does not parse")
	}
	keystone, err := url.Parse(cloud.Local().Endpoints[localcloud.KeystonePublicURL])
	if err != nil {
		t.Fatal(err)
	}
	withHost := func(host string) string { v := *u; v.Host = host; return v.String() }
	wrongPassword := *u
	wrongPassword.User = url.UserPassword(u.User.Username(), "not-the-"+run)
	secrets = append(secrets, wrongPassword.String())
	hashA := daemonSet(t, compute, "pool-a").Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation]
	setRemoteBus := func(v string) {
		e.Management.PutSecret(t, ns, cpName+"-remote-transport", map[string]string{"transport_url": v})
	}

	setRemoteBus(withHost("127.0.0.1:1"))
	labelNode(t, compute, nodeC, "c")
	newPool(t, e, "pool-c", "c", func(p *novav1alpha1.NovaCompute) { p.Spec.UpdateStrategy.Type = novav1alpha1.OnDeleteStrategy })
	cases := []struct{ url, reason, part string }{
		{withHost("127.0.0.1:1"), novav1alpha1.BusUnreachableReason, "no TCP connection to the message bus at 127.0.0.1:1"},
		{withHost(keystone.Host), novav1alpha1.BusTLSFailedReason, keystone.Host + " failed TLS"},
		{wrongPassword.String(), novav1alpha1.BusAuthenticationFailedReason, u.Host + " refused"},
	}
	for _, c := range cases {
		setRemoteBus(c.url)
		waitPreflight(t, e, "pool-c", c.reason, c.part)
		err := compute.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: novacompute.DaemonSetName("pool-c")}, &appsv1.DaemonSet{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("%s: pool-c's DaemonSet exists (or the read failed: %v)", c.reason, err)
		}
	}
	if got := daemonSet(t, compute, "pool-a").Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation]; got != hashA {
		t.Error("pool-a's DaemonSet rolled to a contract whose bus its cluster cannot use")
	}
	if !hasEvent(t, e, "pool-c", novav1alpha1.PreflightFailedEvent) {
		list := &corev1.EventList{}
		_ = e.Management.Client.List(t.Context(), list, client.InNamespace(ns))
		var seen []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == "pool-c" {
				seen = append(seen, ev.Reason+": "+ev.Message)
			}
		}
		t.Errorf("no PreflightFailed event on pool-c; its events: %q", seen)
	}

	setRemoteBus(good)
	waitPreflight(t, e, "pool-c", novav1alpha1.PreflightPassedReason, u.Host)
	eventually(t, time.Minute, "pool-c's DaemonSet", func(ctx context.Context) (bool, string) {
		ds := &appsv1.DaemonSet{}
		err := compute.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: novacompute.DaemonSetName("pool-c")}, ds)
		return err == nil, "not written yet"
	})
	job := &batchv1.Job{}
	if err := compute.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: novacompute.PreflightJobName("pool-c")}, job); err != nil {
		t.Fatalf("the passed check's Job: %v", err)
	}
	if !strings.Contains(strings.Join(job.Spec.Template.Spec.Containers[0].Command, " "), "python3 -c") || len(job.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Error("the Job does not run the check from its mount alone")
	}
}

// waitPreflight waits until the pool's PreflightReady has reason and a
// message containing part.
func waitPreflight(t *testing.T, e *testenv.Environment, pool, reason, part string) {
	t.Helper()
	eventually(t, 2*time.Minute, "PreflightReady="+reason, func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, pool)
		if err != nil {
			return false, err.Error()
		}
		c, seen := conditionOf(p, novav1alpha1.PreflightReadyCondition)
		return c != nil && c.Reason == reason && strings.Contains(c.Message, part), seen
	})
}
