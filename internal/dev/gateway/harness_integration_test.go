package gateway_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/anvil/anvil/internal/dev/gateway"
	"github.com/anvil/anvil/internal/dev/netutil"
	"github.com/anvil/anvil/internal/dev/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// The dev gateway's own suite is a long suite; make test keeps the
	// Nova's metadata route test, which runs through it.
	os.Exit(testenv.Run(m, testenv.Options{Long: "test-all"}, &env))
}

const (
	testNamespace = "gw-test"
	// otherNamespace holds a route the Gateway's listeners do not admit.
	otherNamespace = "gw-test-other"
	appHost        = "app.example.test"
	// signature stands for the signed headers of metadata requests; it
	// must never reach the gateway's log.
	signature = "sig-SECRET-5e11"
)

// harness is one running gateway against the management apiserver.
type harness struct {
	c    client.Client
	port int
	logs *testenv.LogBuffer
}

// startGateway installs the CRDs and runs the controller and data plane
// until the test ends, serving listener port 443 on a free loopback port.
func startGateway(t *testing.T) *harness {
	t.Helper()
	e := testenv.Require(t, env)
	ctx := context.Background()
	if err := gateway.InstallCRDs(ctx, e.Management.Config); err != nil {
		t.Fatal(err)
	}
	// Installing again keeps what is there.
	if err := gateway.InstallCRDs(ctx, e.Management.Config); err != nil {
		t.Fatalf("second install: %v", err)
	}
	c, err := client.New(e.Management.Config, client.Options{Scheme: gateway.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ports, err := netutil.FreeLoopbackPorts(1)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{c: c, port: ports[0], logs: &testenv.LogBuffer{}}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(runCtx, e.Management.Config, gateway.Options{
			PortMap: gateway.PortMap{443: int32(h.port)},
			Logger:  zap.New(zap.WriteTo(h.logs), zap.UseDevMode(true)),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the gateway stopped with %v", err)
		}
		if strings.Contains(h.logs.String(), signature) {
			t.Errorf("a request header reached the log:\n%s", h.logs.String())
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", h.logs.String())
		}
	})
	create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}})
	return h
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// backendServer is an HTTP server on loopback behind a Service that selects
// a Pod reporting 127.0.0.1, as the devstack's pods do. The apiserver refuses
// loopback addresses in EndpointSlices, so the Service's slice lists only a
// documentation address (never dialled) that is not ready, and the gateway
// must fall back to the Pod.
func backendServer(t *testing.T, c client.Client, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s host=%s path=%s", name, r.Host, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	selector := map[string]string{"app": name}
	create(t, c, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{
			Name: "http", Port: 80, TargetPort: intstr.FromString("web"),
		}}},
	})
	create(t, c, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-1", Namespace: testNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: name},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: selector},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "example.test/web", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}},
		}}},
	}
	create(t, c, pod)
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: readyStatus}},
	}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("pod status: %v", err)
	}
}

func tlsSecret(name string, certPEM, keyPEM []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
}

func httpsGateway(name, className, hostname, secret string) *gatewayv1.Gateway {
	host := gatewayv1.Hostname(hostname)
	same := gatewayv1.NamespacesFromSame
	return &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(className),
			Listeners: []gatewayv1.Listener{{
				Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: &host,
				TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: gatewayv1.ObjectName(secret)}}},
				AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &same}},
			}},
		},
	}
}

func httpRoute(name, gw string, hostnames []string, prefix, service string) *gatewayv1.HTTPRoute {
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	route.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: gatewayv1.ObjectName(gw), SectionName: ptr.To(gatewayv1.SectionName("https"))}}
	for _, h := range hostnames {
		route.Spec.Hostnames = append(route.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	route.Spec.Rules = []gatewayv1.HTTPRouteRule{{
		Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To(prefix)}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(service), Port: ptr.To(gatewayv1.PortNumber(80)),
		}}}},
	}}
	return route
}

// eventually polls until check returns "" and fails with its last answer.
func eventually(t *testing.T, what string, check func(ctx context.Context) string) {
	t.Helper()
	last := "never checked"
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == "", nil
	})
	if err != nil {
		t.Fatalf("%s: %s", what, last)
	}
}

// hasCondition describes how conds miss a condition of the type, status and
// reason for the generation; "" when they have it.
func hasCondition(conds []metav1.Condition, condType string, status metav1.ConditionStatus, reason string, generation int64) string {
	c := apimeta.FindStatusCondition(conds, condType)
	switch {
	case c == nil:
		return "no " + condType + " condition"
	case c.Status != status || c.Reason != reason || c.ObservedGeneration != generation:
		return fmt.Sprintf("%s is %s/%s for generation %d (%s), want %s/%s for %d", condType, c.Status, c.Reason, c.ObservedGeneration, c.Message, status, reason, generation)
	}
	return ""
}

// routeParentCondition checks a condition of our entry in the status of a
// route of the test namespace.
func (h *harness) routeParentCondition(name, condType string, status metav1.ConditionStatus, reason string) func(context.Context) string {
	return h.routeParentConditionIn(testNamespace, name, condType, status, reason)
}

// routeParentConditionIn checks a condition of our entry in a route's
// status.
func (h *harness) routeParentConditionIn(namespace, name, condType string, status metav1.ConditionStatus, reason string) func(context.Context) string {
	return func(ctx context.Context) string {
		route := &gatewayv1.HTTPRoute{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, route); err != nil {
			return err.Error()
		}
		for _, p := range route.Status.Parents {
			if p.ControllerName == gateway.DefaultControllerName {
				return hasCondition(p.Conditions, condType, status, reason, route.Generation)
			}
		}
		return fmt.Sprintf("no status.parents entry of ours in %+v", route.Status.Parents)
	}
}

// client returns an HTTPS client that trusts caPEM and dials the gateway's
// port whatever the URL's host, as `curl --resolve` does.
func (h *harness) client(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

// get fetches a URL with a header that stands for a metadata signature and
// returns the status and body.
func get(ctx context.Context, c *http.Client, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("X-Instance-ID-Signature", signature)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
