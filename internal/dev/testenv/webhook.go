package testenv

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// webhookPropagation is how long the apiserver takes to pick up a changed
// webhook configuration; it reads them from an informer.
const webhookPropagation = 2 * time.Second

// WithoutWebhook takes the validating webhook name out of the cluster's
// configuration, so a test can create what admission would refuse and
// prove that a controller refuses it again. It returns the function that
// puts the webhook back; the test's cleanup calls it too, once.
func (c *Cluster) WithoutWebhook(t testing.TB, name string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := c.Client.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		cfg := &list.Items[i]
		j := webhookIndex(cfg.Webhooks, name)
		if j < 0 {
			continue
		}
		saved := cfg.DeepCopy()
		cfg.Webhooks = append(cfg.Webhooks[:j:j], cfg.Webhooks[j+1:]...)
		if err := c.Client.Update(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(webhookPropagation)
		done := false
		restore = func() {
			if done {
				return
			}
			done = true
			live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(saved), live); err != nil {
				t.Fatal(err)
			}
			live.Webhooks = saved.Webhooks
			if err := c.Client.Update(ctx, live); err != nil {
				t.Fatal(err)
			}
			time.Sleep(webhookPropagation)
		}
		t.Cleanup(restore)
		return restore
	}
	t.Fatalf("no validating webhook %s is installed on %s", name, c.Name)
	return nil
}

// webhookIndex returns the index of the webhook name, or -1.
func webhookIndex(webhooks []admissionregistrationv1.ValidatingWebhook, name string) int {
	for i := range webhooks {
		if webhooks[i].Name == name {
			return i
		}
	}
	return -1
}
