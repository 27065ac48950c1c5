package controlplane_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// controlPlaneWebhook is the name of the ControlPlane admission webhook.
const controlPlaneWebhook = "vcontrolplane.c5c3.io"

// The review's B4: a ControlPlane whose Keystone is not on the operator's
// --allowed-keystone-hosts is refused by admission, and, with the webhook
// taken out, stopped by the controller before anything reaches that
// Keystone: no request, so no admin password, and no Nova child.
func TestIntegrationKeystoneOutsideTheAllowlist(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	var requests atomic.Int32
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(outside.Close)

	const name = "ks-outside"
	cp := buildControlPlane(t, name, false)
	putSecret(t, name+"-keystone-admin", map[string]string{"password": "admin-PASSWORD-b4"})
	cp.Spec.Services.Keystone.InternalEndpoint = outside.URL + "/v3"
	cp.Spec.Services.Keystone.AdminCredentialsSecretRef = &anvilmeta.LocalObjectReference{Name: name + "-keystone-admin"}
	const field = "spec.services.keystone.internalEndpoint"
	err := e.Management.Client.Create(ctx, cp.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "is not allowed") {
		t.Fatalf("admission of a ControlPlane whose Keystone is off the allowlist: %v", err)
	}

	restore := e.Management.WithoutWebhook(t, controlPlaneWebhook)
	err = e.Management.Client.Create(ctx, cp)
	restore()
	if err != nil {
		t.Fatalf("without the webhook, creating %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.Management.Client.Delete(context.Background(), cp) })
	cond := waitNovaReady(t, name, c5c3v1alpha1.KeystoneEndpointNotAllowedReason)
	if !strings.Contains(cond.Message, field) || strings.Contains(cond.Message, "/v3") {
		t.Errorf("NovaReady message %q: want the field and the host, not the URL", cond.Message)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the Keystone off the allowlist received %d requests", n)
	}
	nova := &novav1alpha1.Nova{}
	if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-nova"}, nova); !apierrors.IsNotFound(err) {
		t.Errorf("the Nova child of a refused ControlPlane: %v, want not found", err)
	}
	assertNoLeak(t)
}
