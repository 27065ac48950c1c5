package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func testGateway(listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	return &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "openstack", Generation: 3}, Spec: gatewayv1.GatewaySpec{Listeners: listeners}}
}

func httpsListener(name, host string, from gatewayv1.FromNamespaces) gatewayv1.Listener {
	return gatewayv1.Listener{
		Name: gatewayv1.SectionName(name), Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptr.To(gatewayv1.Hostname(host)),
		TLS:           &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "tls"}}},
		AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: &from}},
	}
}

// keyPair returns a PEM certificate and key.
func keyPair(t *testing.T) (crt, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

func TestCheckListener(t *testing.T) {
	crt, key := keyPair(t)
	secrets := map[string]*corev1.Secret{
		"tls":     {Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": key}},
		"no-key":  {Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt}},
		"garbage": {Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")}},
	}
	lookup := func(k types.NamespacedName) *corev1.Secret { return secrets[k.Name] }
	withSecret := func(name string) gatewayv1.Listener {
		l := httpsListener("https", "a.example.com", gatewayv1.NamespacesFromSame)
		l.TLS.CertificateRefs[0].Name = gatewayv1.ObjectName(name)
		return l
	}
	otherNS := withSecret("tls")
	otherNS.TLS.CertificateRefs[0].Namespace = ptr.To(gatewayv1.Namespace("elsewhere"))
	tcp := gatewayv1.Listener{Name: "tcp", Port: 5432, Protocol: gatewayv1.TCPProtocolType}
	badKind := gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType,
		AllowedRoutes: &gatewayv1.AllowedRoutes{Kinds: []gatewayv1.RouteGroupKind{{Kind: "GRPCRoute"}}}}
	for _, tc := range []struct {
		name             string
		spec             gatewayv1.Listener
		accepted, refs   string
		wantCertificate  bool
		wantKindsLength  int
		wantRoutesAttach bool
	}{
		{"a valid HTTPS listener", withSecret("tls"), "Accepted", "ResolvedRefs", true, 1, true},
		{"a missing Secret", withSecret("absent"), "Accepted", "InvalidCertificateRef", false, 1, true},
		{"a Secret without key", withSecret("no-key"), "Accepted", "InvalidCertificateRef", false, 1, true},
		{"a Secret without a key pair", withSecret("garbage"), "Accepted", "InvalidCertificateRef", false, 1, true},
		{"a Secret in another namespace", otherNS, "Accepted", "RefNotPermitted", false, 1, true},
		{"an unsupported protocol", tcp, "UnsupportedProtocol", "ResolvedRefs", false, 0, false},
		{"an unsupported route kind", badKind, "Accepted", "InvalidRouteKinds", false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := testGateway(tc.spec)
			l := &listenerState{gateway: gw, spec: &gw.Spec.Listeners[0]}
			checkListener(l, lookup)
			if l.accepted.reason != tc.accepted || l.resolved.reason != tc.refs {
				t.Errorf("Accepted %s, ResolvedRefs %s; want %s, %s", l.accepted.reason, l.resolved.reason, tc.accepted, tc.refs)
			}
			if (l.cert != nil) != tc.wantCertificate || len(l.kinds) != tc.wantKindsLength || l.attachable() != tc.wantRoutesAttach {
				t.Errorf("certificate %v, kinds %v, attachable %v", l.cert != nil, l.kinds, l.attachable())
			}
		})
	}
}

func TestMarkConflicts(t *testing.T) {
	gw := testGateway(
		gatewayv1.Listener{Name: "a", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptr.To(gatewayv1.Hostname("a.example.com"))},
		gatewayv1.Listener{Name: "b", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptr.To(gatewayv1.Hostname("b.example.com"))},
		gatewayv1.Listener{Name: "a-again", Port: 443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: ptr.To(gatewayv1.Hostname("a.example.com"))},
		gatewayv1.Listener{Name: "plain", Port: 443, Protocol: gatewayv1.HTTPProtocolType},
		gatewayv1.Listener{Name: "plain-80", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
	)
	var ls []*listenerState
	for i := range gw.Spec.Listeners {
		l := &listenerState{gateway: gw, spec: &gw.Spec.Listeners[i], hostPort: PortMap{443: 8443}.HostPort(gw.Spec.Listeners[i].Port)}
		checkListener(l, func(types.NamespacedName) *corev1.Secret { return nil })
		ls = append(ls, l)
	}
	markConflicts(ls)
	want := []string{"NoConflicts", "NoConflicts", "HostnameConflict", "ProtocolConflict", "NoConflicts"}
	for i, l := range ls {
		if l.conflict.reason != want[i] {
			t.Errorf("listener %s: %s, want %s", l.spec.Name, l.conflict.reason, want[i])
		}
	}
}

func TestAttachRoute(t *testing.T) {
	gw := testGateway(
		httpsListener("metadata", "nova-metadata.127-0-0-1.nip.io", gatewayv1.NamespacesFromSame),
		httpsListener("public", "*.example.com", gatewayv1.NamespacesFromAll),
	)
	var ls []*listenerState
	for i := range gw.Spec.Listeners {
		l := &listenerState{gateway: gw, spec: &gw.Spec.Listeners[i]}
		checkListener(l, func(types.NamespacedName) *corev1.Secret { return nil })
		ls = append(ls, l)
	}
	route := func(ns, section string, hosts ...gatewayv1.Hostname) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}}
		r.Spec.Hostnames = hosts
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "gw"}}
		if section != "" {
			r.Spec.ParentRefs[0].SectionName = ptr.To(gatewayv1.SectionName(section))
		}
		return r
	}
	filtered := route("openstack", "metadata")
	filtered.Spec.Rules = []gatewayv1.HTTPRouteRule{{Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier}}}}
	for _, tc := range []struct {
		name     string
		route    *gatewayv1.HTTPRoute
		reason   string
		attached int
	}{
		{"the metadata route", route("openstack", "metadata", "nova-metadata.127-0-0-1.nip.io"), "Accepted", 1},
		{"no section attaches to every listener that fits", route("openstack", ""), "Accepted", 2},
		{"a hostname no listener has", route("openstack", "metadata", "other.example.org"), "NoMatchingListenerHostname", 0},
		{"a section that does not exist", route("openstack", "http"), "NoMatchingParent", 0},
		{"another namespace on a Same listener", route("tenant", "metadata"), "NotAllowedByListeners", 0},
		{"another namespace on an All listener", route("tenant", "", "api.example.com"), "Accepted", 1},
		{"an unsupported filter", filtered, "UnsupportedValue", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, attached := attachRoute(tc.route, tc.route.Spec.ParentRefs[0], ls, map[string]labels.Set{})
			if v.reason != tc.reason || len(attached) != tc.attached || v.ok != (tc.reason == "Accepted") {
				t.Errorf("got %s (%s), %d listeners; want %s, %d", v.reason, v.message, len(attached), tc.reason, tc.attached)
			}
		})
	}
}

func TestCheckBackends(t *testing.T) {
	services := map[types.NamespacedName]*corev1.Service{
		{Namespace: "openstack", Name: "nova-metadata"}: {Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8775}}}},
	}
	route := func(name string, port int32, kind string) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "openstack"}}
		ref := gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: ptr.To(port), Kind: ptr.To(gatewayv1.Kind(kind))}
		r.Spec.Rules = []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: ref}}}}}
		return r
	}
	for _, tc := range []struct {
		route  *gatewayv1.HTTPRoute
		reason string
	}{
		{route("nova-metadata", 8775, "Service"), "ResolvedRefs"},
		{route("absent", 8775, "Service"), "BackendNotFound"},
		{route("nova-metadata", 9999, "Service"), "BackendNotFound"},
		{route("nova-metadata", 8775, "ServiceImport"), "InvalidKind"},
	} {
		if got := checkBackends(tc.route, services); got.reason != tc.reason {
			t.Errorf("%s: got %s (%s), want %s", tc.route.Spec.Rules[0].BackendRefs[0].Name, got.reason, got.message, tc.reason)
		}
	}
}

func TestMergeConditions(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(old.Add(time.Hour))
	existing := []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: old},
		{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "Invalid", LastTransitionTime: old},
		{Type: "Stale", Status: metav1.ConditionTrue, LastTransitionTime: old},
	}
	desired := []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "ListenersNotValid"},
		{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"},
	}
	got := mergeConditions(existing, desired, now)
	if len(got) != 2 || !got[0].LastTransitionTime.Equal(&old) || !got[1].LastTransitionTime.Equal(&now) || got[0].Reason != "ListenersNotValid" {
		t.Errorf("got %+v", got)
	}
}

func TestRouteParents(t *testing.T) {
	const ours = DefaultControllerName
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	mine := gatewayv1.ParentReference{Name: "gw"}
	foreign := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "other"}, ControllerName: "example.com/other"}
	stale := gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: "gone"}, ControllerName: ours}
	now := metav1.Now()
	d := &routeDecision{route: route, parents: []parentDecision{{ref: mine, accepted: pass("Accepted", ""), resolved: fail("BackendNotFound", "x")}}}
	got := routeParents([]gatewayv1.RouteParentStatus{foreign, stale}, d, ours, now)
	if len(got) != 2 || got[0].ControllerName != foreign.ControllerName || got[1].ParentRef.Name != "gw" {
		t.Fatalf("got %+v", got)
	}
	if c := got[1].Conditions; len(c) != 2 || c[0].Status != metav1.ConditionTrue || c[1].Reason != "BackendNotFound" || c[1].ObservedGeneration != 2 {
		t.Errorf("conditions %+v", c)
	}
	if got := routeParents([]gatewayv1.RouteParentStatus{stale}, nil, ours, now); got == nil || len(got) != 0 {
		t.Errorf("a route that is no longer ours keeps %+v", got)
	}
}

func TestGatewayStatus(t *testing.T) {
	gw := testGateway(httpsListener("ok", "a.example.com", gatewayv1.NamespacesFromSame), httpsListener("bad", "b.example.com", gatewayv1.NamespacesFromSame))
	ok := &listenerState{gateway: gw, spec: &gw.Spec.Listeners[0], hostPort: 8443, attached: 1}
	bad := &listenerState{gateway: gw, spec: &gw.Spec.Listeners[1], hostPort: 8443}
	for _, l := range []*listenerState{ok, bad} {
		checkListener(l, func(types.NamespacedName) *corev1.Secret { return nil })
	}
	ok.resolved = pass("ResolvedRefs", "")
	st := gatewayStatus(gw, []*listenerState{ok, bad}, "127.0.0.1")
	if st.Conditions[0].Status != metav1.ConditionTrue || st.Conditions[1].Status != metav1.ConditionTrue || len(st.Addresses) != 1 {
		t.Errorf("one programmed listener programs the Gateway: %+v", st.Conditions)
	}
	if c := st.Listeners[1].Conditions; c[1].Status != metav1.ConditionFalse || c[2].Reason != "InvalidCertificateRef" || c[3].Status != metav1.ConditionFalse {
		t.Errorf("listener without certificate: %+v", c)
	}
	ok.bindErr = errors.New("address already in use")
	bad.resolved = pass("ResolvedRefs", "")
	bad.bindErr = ok.bindErr
	st = gatewayStatus(gw, []*listenerState{ok, bad}, "127.0.0.1")
	if st.Conditions[0].Status != metav1.ConditionFalse || st.Conditions[1].Status != metav1.ConditionFalse || st.Listeners[0].Conditions[0].Reason != "PortUnavailable" {
		t.Errorf("no bound port: %+v / %+v", st.Conditions, st.Listeners[0].Conditions)
	}
}
