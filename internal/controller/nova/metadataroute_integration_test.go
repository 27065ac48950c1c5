package nova_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/gateway"
	"github.com/anvil/anvil/internal/dev/netutil"
)

// The metadata API's route through its life: without the Gateway API the
// Nova says so; once the API is installed and a Gateway (the dev gateway,
// a real implementation) serves the hostname, the route is accepted; a
// hostname no listener serves is refused and the Gateway's reason shows;
// and dropping spec.metadata.gateway deletes the route. This test owns the
// moment the Gateway API CRDs appear, so it is the only one that uses them.
func TestIntegrationMetadataRoute(t *testing.T) {
	e := startOperator(t)
	ctx := context.Background()
	const name = "mdr"
	inputs(t, name)
	putSecret(t, name+"-db", map[string]string{"username": "nova", "password": dbPass})
	n := withDatabases(newNova(name))
	n.Spec.Metadata.Gateway = &novav1alpha1.GatewaySpec{
		ParentRef: novav1alpha1.GatewayParentRef{Name: "gw", SectionName: "http-metadata"},
		Hostname:  "metadata.example.com",
	}
	if err := e.Management.Client.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	c := waitConditionOf(t, name, novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.GatewayAPINotInstalledReason)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "HTTPRoute") {
		t.Errorf("MetadataHTTPRouteReady = %+v", c)
	}

	startGateway(t)
	c = waitConditionWithin(t, name, novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.HTTPRouteAcceptedReason, time.Minute)
	if c.Status != metav1.ConditionTrue {
		t.Errorf("MetadataHTTPRouteReady = %+v", c)
	}
	route := &gatewayv1.HTTPRoute{}
	if err := e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-metadata"}, route); err != nil {
		t.Fatal(err)
	}
	backend := route.Spec.Rules[0].BackendRefs[0]
	if string(backend.Name) != name+"-metadata" || ptr.Deref(backend.Port, 0) != 8775 {
		t.Errorf("route backend = %s:%d, want %s-metadata:8775", backend.Name, ptr.Deref(backend.Port, 0), name)
	}

	n = getNova(t, name)
	n.Spec.Metadata.Gateway.Hostname = "elsewhere.example.com"
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	// The route waits for the Gateway's answer first, then carries it.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c = apimeta.FindStatusCondition(getNova(t, name).Status.Conditions, novav1alpha1.MetadataHTTPRouteReadyCondition)
		return c != nil && c.Reason == novav1alpha1.HTTPRouteNotAcceptedReason && strings.Contains(c.Message, "NoMatchingListenerHostname"), nil
	})
	if err != nil || c.Status != metav1.ConditionFalse {
		t.Errorf("MetadataHTTPRouteReady = %+v, want HTTPRouteNotAccepted with the Gateway's reason in the message", c)
	}

	n = getNova(t, name)
	n.Spec.Metadata.Gateway = nil
	if err := e.Management.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	waitConditionOf(t, name, novav1alpha1.MetadataHTTPRouteReadyCondition, novav1alpha1.HTTPRouteNotRequiredReason)
	err = e.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name + "-metadata"}, &gatewayv1.HTTPRoute{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the route survived dropping spec.metadata.gateway: %v", err)
	}
	assertNoLeak(t)
}

// startGateway installs the Gateway API and runs the dev gateway with a
// Gateway gw whose HTTP listener serves metadata.example.com on a free
// loopback port.
func startGateway(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := env.Management.Config
	if err := gateway.InstallCRDs(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	ports, err := netutil.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = gateway.Run(ctx, cfg, gateway.Options{PortMap: gateway.PortMap{80: int32(ports[0])}, Logger: logr.Discard()})
	}()
	c, err := client.New(cfg, client.Options{Scheme: gateway.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "anvil-nova-test"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName}}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: testNamespace},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "anvil-nova-test",
			Listeners: []gatewayv1.Listener{{
				Name: "http-metadata", Protocol: gatewayv1.HTTPProtocolType, Port: 80,
				Hostname: ptr.To(gatewayv1.Hostname("metadata.example.com")),
			}},
		},
	}
	for _, obj := range []client.Object{class, gw} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}
