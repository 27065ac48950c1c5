package novacompute_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// A Nova whose keystoneEndpoint is on no host the operator admits, created
// with the Nova webhook taken out, never makes the operator send its
// service password: a listener at that endpoint records no connection.
// The Nova controller publishes no contract, and a pool of that Nova
// refuses the endpoint itself, even once the Nova's status names a
// contract as one published under an earlier spec would.
func TestIntegrationKeystoneEndpointOutsideTheAllowlist(t *testing.T) {
	e := startStack(t)
	ctx := t.Context()
	c := e.Management.Client
	addr, connections := recordingListener(t)
	const prefix = "ksdeny"
	nova := prefix + "-nova"
	password := "ksdeny-PASSWORD-" + run
	e.Management.PutSecret(t, ns, prefix+"-bus", map[string]string{"transport_url": "rabbit://nova:ksdeny-BUS-" + run + "@rabbit.openstack.svc:5672/nova"})
	e.Management.PutSecret(t, ns, prefix+"-password", map[string]string{"password": password})
	e.Management.PutSecret(t, ns, prefix+"-metadata", map[string]string{"shared_secret": "ksdeny-SHARED-" + run})

	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: nova, Namespace: ns}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.Messaging.SecretRef.Name = prefix + "-bus"
	n.Spec.KeystoneEndpoint = "http://" + addr + "/v3"
	n.Spec.ServiceUser.SecretRef.Name = prefix + "-password"
	n.Spec.Metadata.SharedSecretRef.Name = prefix + "-metadata"
	restore := e.Management.WithoutWebhook(t, "vnova.openstack.c5c3.io")
	if err := c.Create(ctx, n); err != nil {
		t.Fatalf("creating the Nova without its webhook: %v", err)
	}
	restore()
	t.Cleanup(func() { _ = c.Delete(context.Background(), n) })

	// A pool on the management cluster that selects no node: on a build
	// without the checks its pass reaches the Aggregates step, which
	// authenticates at once.
	pool := prefix + "-pool"
	newPool(t, e, pool, prefix+"-none", func(p *novav1alpha1.NovaCompute) {
		p.Spec.NovaRef.Name = nova
		p.Spec.TargetClusterRef = nil
		p.Spec.Image = &anvilmeta.ImageSpec{Repository: novav1alpha1.DefaultComputeImageRepository, Tag: "2026.1"}
	})
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: pool, Namespace: ns}})
	})
	waitNovaCondition(t, e, nova, novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.KeystoneEndpointNotAllowedReason)
	waitPoolReason(t, e, pool, novav1alpha1.NovaReadyCondition, novav1alpha1.KeystoneEndpointNotAllowedReason)

	// The Nova names a contract, with every key a pool needs.
	e.Management.PutSecret(t, ns, nova+novav1alpha1.ComputeConfigSuffix, map[string]string{
		"nova-compute.conf": "[DEFAULT]\n", "transport_url": "rabbit://nova:ksdeny-BUS-" + run + "@rabbit.openstack.svc:5672/nova", "password": password,
	})
	live := &novav1alpha1.Nova{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), live); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(live.DeepCopy())
	live.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: nova + novav1alpha1.ComputeConfigSuffix}
	if err := c.Status().Patch(ctx, live, patch); err != nil {
		t.Fatal(err)
	}
	// The status change reaches the pool through its Nova watch; give it
	// more than a resync to authenticate if it would.
	time.Sleep(poolResync + 5*time.Second)
	p, err := getPool(ctx, e, pool)
	if err != nil {
		t.Fatal(err)
	}
	if cond, msg := conditionOf(p, novav1alpha1.NovaReadyCondition); cond == nil || cond.Reason != novav1alpha1.KeystoneEndpointNotAllowedReason ||
		!strings.Contains(cond.Message, "spec.keystoneEndpoint") || !strings.Contains(cond.Message, addr) {
		t.Errorf("the pool's NovaReady = %s, want KeystoneEndpointNotAllowed naming the field and %s", msg, addr)
	}
	if got := connections.Load(); got != 0 {
		t.Errorf("the endpoint outside the allowlist received %d connection(s)", got)
	}
	testenv.AssertNoLeak(t, append(append(e.Management.EventMessages(t), logs.String()), poolConditionTexts(t, e)...), []string{password})

	// A pool that holds no node is released although it cannot reach Nova.
	deletePool(t, e, pool)
	if got := connections.Load(); got != 0 {
		t.Errorf("the teardown made %d connection(s) to the endpoint", got)
	}
}

// recordingListener listens on a free loopback port and counts every
// connection it accepts, closing each at once. It stands for a Keystone
// the Nova's author controls.
func recordingListener(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var n atomic.Int64
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = conn.Close()
		}
	}()
	return l.Addr().String(), &n
}

// waitNovaCondition waits until the Nova's condition has the reason.
func waitNovaCondition(t *testing.T, e *testenv.Environment, name, typ, reason string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("Nova %s %s=%s", name, typ, reason), func(ctx context.Context) (bool, string) {
		n := &novav1alpha1.Nova{}
		if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, n); err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == typ {
				return c.Reason == reason, c.Reason + ": " + c.Message
			}
		}
		return false, "no condition"
	})
}

// waitPoolReason waits until the pool's condition has the reason.
func waitPoolReason(t *testing.T, e *testenv.Environment, name, typ, reason string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("pool %s %s=%s", name, typ, reason), func(ctx context.Context) (bool, string) {
		p, err := getPool(ctx, e, name)
		if err != nil {
			return false, err.Error()
		}
		cond, msg := conditionOf(p, typ)
		return cond != nil && cond.Reason == reason, msg
	})
}
