package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/anvil/anvil/internal/dev/gateway"
)

// selfSigned returns a self-signed serving certificate for hosts, which is
// its own CA.
func selfSigned(t *testing.T, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: hosts[0]},
		DNSNames:              hosts,
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func TestIntegrationGateway(t *testing.T) {
	h := startGateway(t)
	ctx := context.Background()
	certPEM, keyPEM := selfSigned(t, appHost)
	create(t, h.c, tlsSecret("app-tls", certPEM, keyPEM))
	backendServer(t, h.c, "app", true)
	create(t, h.c, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "dev-test"},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: gateway.DefaultControllerName},
	})
	create(t, h.c, httpsGateway("gw", "dev-test", appHost, "app-tls"))
	create(t, h.c, httpRoute("app", "gw", []string{appHost}, "/api", "app"))

	eventually(t, "GatewayClass Accepted", func(ctx context.Context) string {
		gc := &gatewayv1.GatewayClass{}
		if err := h.c.Get(ctx, client.ObjectKey{Name: "dev-test"}, gc); err != nil {
			return err.Error()
		}
		return hasCondition(gc.Status.Conditions, "Accepted", metav1.ConditionTrue, "Accepted", gc.Generation)
	})
	eventually(t, "Gateway programmed with one attached route", h.gatewayServes("gw", 1))
	eventually(t, "route accepted", h.routeParentCondition("app", "Accepted", metav1.ConditionTrue, "Accepted"))
	eventually(t, "route refs resolved", h.routeParentCondition("app", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"))

	hc := h.client(certPEM)
	base := "https://" + appHost
	eventually(t, "HTTPS reaches the backend", func(ctx context.Context) string {
		code, body, err := get(ctx, hc, base+"/api/v1")
		if err != nil || code != http.StatusOK || body != "app host="+appHost+" path=/api/v1" {
			return fmt.Sprintf("got %d %q, %v", code, body, err)
		}
		return ""
	})
	if code, _, err := get(ctx, hc, base+"/apiv2"); err != nil || code != http.StatusNotFound {
		t.Errorf("a path outside the prefix: got %d, %v; want 404", code, err)
	}

	t.Run("a settled system writes nothing", func(t *testing.T) { settled(t, h) })
	t.Run("a route for another hostname is not accepted", func(t *testing.T) {
		create(t, h.c, httpRoute("elsewhere", "gw", []string{"other.example.test"}, "/", "app"))
		eventually(t, "NoMatchingListenerHostname", h.routeParentCondition("elsewhere", "Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname"))
	})
	t.Run("a route naming no listener is not accepted", func(t *testing.T) {
		route := httpRoute("nolistener", "gw", nil, "/", "app")
		route.Spec.ParentRefs[0].SectionName = ptrTo(gatewayv1.SectionName("http"))
		create(t, h.c, route)
		eventually(t, "NoMatchingParent", h.routeParentCondition("nolistener", "Accepted", metav1.ConditionFalse, "NoMatchingParent"))
	})
	t.Run("a route from another namespace is not allowed", func(t *testing.T) {
		create(t, h.c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNamespace}})
		route := httpRoute("foreign", "gw", nil, "/", "app")
		route.Namespace = otherNamespace
		route.Spec.ParentRefs[0].Namespace = ptrTo(gatewayv1.Namespace(testNamespace))
		create(t, h.c, route)
		eventually(t, "NotAllowedByListeners", h.routeParentConditionIn(otherNamespace, "foreign", "Accepted", metav1.ConditionFalse, "NotAllowedByListeners"))
	})
	t.Run("a missing backend resolves once its Service exists", func(t *testing.T) { lateBackend(t, h, hc, base) })
	t.Run("a missing certificate Secret fails ResolvedRefs until it exists", func(t *testing.T) { lateCertificate(t, h, certPEM) })
}

// settled checks that nothing is written while nothing changes.
func settled(t *testing.T, h *harness) {
	ctx := context.Background()
	gw, route := &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}
	_ = h.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "gw"}, gw)
	_ = h.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "app"}, route)
	time.Sleep(2 * time.Second)
	gw2, route2 := &gatewayv1.Gateway{}, &gatewayv1.HTTPRoute{}
	_ = h.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "gw"}, gw2)
	_ = h.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: "app"}, route2)
	if gw.ResourceVersion != gw2.ResourceVersion || route.ResourceVersion != route2.ResourceVersion {
		t.Errorf("status rewritten without a change: Gateway %s→%s, HTTPRoute %s→%s",
			gw.ResourceVersion, gw2.ResourceVersion, route.ResourceVersion, route2.ResourceVersion)
	}
}

// lateBackend routes to a Service that does not exist yet: 500 and
// BackendNotFound, then, once it exists without a ready endpoint, 503.
func lateBackend(t *testing.T, h *harness, hc *http.Client, base string) {
	ctx := context.Background()
	create(t, h.c, httpRoute("late", "gw", []string{appHost}, "/late", "late"))
	eventually(t, "BackendNotFound", h.routeParentCondition("late", "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound"))
	if code, _, err := get(ctx, hc, base+"/late"); err != nil || code != http.StatusInternalServerError {
		t.Errorf("a missing backend: got %d, %v; want 500", code, err)
	}
	backendServer(t, h.c, "late", false)
	eventually(t, "ResolvedRefs", h.routeParentCondition("late", "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs"))
	eventually(t, "503 without a ready endpoint", func(ctx context.Context) string {
		if code, _, err := get(ctx, hc, base+"/late"); err != nil || code != http.StatusServiceUnavailable {
			return fmt.Sprintf("got %d, %v; want 503", code, err)
		}
		return ""
	})
	eventually(t, "Gateway counts two attached routes", h.gatewayServes("gw", 2))
}

// lateCertificate creates a Gateway whose certificate Secret is missing,
// then the Secret, and checks that SNI then picks that certificate on the
// shared port.
func lateCertificate(t *testing.T, h *harness, firstCA []byte) {
	ctx := context.Background()
	const host = "late-cert.example.test"
	create(t, h.c, httpsGateway("gw-nocert", "dev-test", host, "late-cert-tls"))
	eventually(t, "InvalidCertificateRef", h.listenerCondition("gw-nocert", "ResolvedRefs", metav1.ConditionFalse, "InvalidCertificateRef"))
	eventually(t, "listener not programmed", h.listenerCondition("gw-nocert", "Programmed", metav1.ConditionFalse, "Invalid"))
	lateCert, lateKey := selfSigned(t, host)
	create(t, h.c, tlsSecret("late-cert-tls", lateCert, lateKey))
	create(t, h.c, httpRoute("late-cert", "gw-nocert", nil, "/", "app"))
	eventually(t, "Gateway programmed", h.gatewayServes("gw-nocert", 1))
	// The second Gateway shares the host port; SNI picks its certificate,
	// which the first Gateway's CA does not sign.
	eventually(t, "SNI selects the certificate", func(ctx context.Context) string {
		code, body, err := get(ctx, h.client(lateCert), "https://"+host+"/x")
		if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "app host="+host) {
			return fmt.Sprintf("got %d %q, %v", code, body, err)
		}
		return ""
	})
	if _, _, err := get(ctx, h.client(firstCA), "https://"+host+"/x"); err == nil {
		t.Error("the first Gateway's CA verified the second Gateway's certificate")
	}
}

func ptrTo[T any](v T) *T { return &v }

// gatewayServes checks that a Gateway is Accepted and Programmed, and that
// its listener counts the given routes.
func (h *harness) gatewayServes(name string, routes int32) func(context.Context) string {
	return func(ctx context.Context) string {
		gw := &gatewayv1.Gateway{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, gw); err != nil {
			return err.Error()
		}
		for _, ct := range []string{"Accepted", "Programmed"} {
			if msg := hasCondition(gw.Status.Conditions, ct, metav1.ConditionTrue, ct, gw.Generation); msg != "" {
				return msg
			}
		}
		if len(gw.Status.Listeners) != 1 {
			return fmt.Sprintf("%d listener statuses", len(gw.Status.Listeners))
		}
		l := gw.Status.Listeners[0]
		for _, ct := range []string{"Accepted", "Programmed", "ResolvedRefs"} {
			if msg := hasCondition(l.Conditions, ct, metav1.ConditionTrue, ct, gw.Generation); msg != "" {
				return "listener: " + msg
			}
		}
		if l.AttachedRoutes != routes || len(l.SupportedKinds) != 1 || l.SupportedKinds[0].Kind != "HTTPRoute" {
			return fmt.Sprintf("listener has %d attached routes and kinds %v, want %d and HTTPRoute", l.AttachedRoutes, l.SupportedKinds, routes)
		}
		return ""
	}
}

// listenerCondition checks a condition of a Gateway's only listener.
func (h *harness) listenerCondition(name, condType string, status metav1.ConditionStatus, reason string) func(context.Context) string {
	return func(ctx context.Context) string {
		gw := &gatewayv1.Gateway{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, gw); err != nil {
			return err.Error()
		}
		if len(gw.Status.Listeners) != 1 {
			return fmt.Sprintf("%d listener statuses", len(gw.Status.Listeners))
		}
		return hasCondition(gw.Status.Listeners[0].Conditions, condType, status, reason, gw.Generation)
	}
}
