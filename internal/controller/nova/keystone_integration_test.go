package nova_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// novaWebhook is the name of the Nova admission webhook.
const novaWebhook = "vnova.openstack.c5c3.io"

// A Nova whose Keystone host the operator does not admit is refused by
// admission, naming the field and the host; with the webhook taken out it
// reaches the controller, which publishes nothing that carries the service
// password. Once the host is one the operator admits, the same Nova
// publishes its contract.
func TestIntegrationKeystoneHostNotAllowed(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	c := e.Management.Client
	const name = "ksdeny"
	const evil = "keystone.evil.example:5000"
	inputs(t, name)
	refused := func(field string, mutate func(*novav1alpha1.Nova)) *novav1alpha1.Nova {
		n := newNova(name)
		mutate(n)
		err := c.Create(ctx, n)
		if err == nil {
			_ = c.Delete(ctx, n)
			t.Fatalf("a Nova naming %s in %s was admitted", evil, field)
		}
		if !strings.Contains(err.Error(), field+": Forbidden") || !strings.Contains(err.Error(), "host "+evil+" is not allowed") {
			t.Errorf("the refusal does not name %s and the host: %v", field, err)
		}
		return n
	}
	refused("spec.keystonePublicEndpoint", func(n *novav1alpha1.Nova) { n.Spec.KeystonePublicEndpoint = "https://" + evil })
	refused("spec.remoteCompute.keystoneEndpoint", func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "https://" + evil })
	n := refused("spec.keystoneEndpoint", func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = "http://" + evil + "/v3" })

	restore := e.Management.WithoutWebhook(t, novaWebhook)
	if err := c.Create(ctx, n); err != nil {
		t.Fatalf("without the webhook: %v", err)
	}
	restore()
	t.Cleanup(func() { _ = c.Delete(ctx, n) })
	cond := waitCondition(t, name, novav1alpha1.KeystoneEndpointNotAllowedReason)
	if !strings.Contains(cond.Message, "spec.keystoneEndpoint") || !strings.Contains(cond.Message, evil) {
		t.Errorf("ComputeConfigReady message %q names neither the field nor the host", cond.Message)
	}
	for _, suffix := range []string{novav1alpha1.ComputeConfigSuffix, novav1alpha1.RemoteComputeConfigSuffix, novav1alpha1.ServiceConfigSuffix} {
		if _, err := getSecret(t, name+suffix); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s%s was written for a refused Nova (err %v)", name, suffix, err)
		}
	}

	// The webhook is back; an admitted host lifts the refusal.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := getNova(t, name)
		fresh.Spec.KeystoneEndpoint = "http://keystone.openstack.svc:5000"
		return c.Update(ctx, fresh)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitCondition(t, name, novav1alpha1.ComputeConfigPublishedReason)
	assertNoLeak(t)
}
