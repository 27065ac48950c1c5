package gateway

import (
	"crypto/tls"
	"net/http/httptest"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func pathMatch(t gatewayv1.PathMatchType, v string) gatewayv1.HTTPRouteMatch {
	return gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: &t, Value: &v}}
}

func TestCompiledMatch(t *testing.T) {
	header := gatewayv1.HTTPRouteMatch{Headers: []gatewayv1.HTTPHeaderMatch{{Name: "X-Env", Value: "dev"}}}
	method := gatewayv1.HTTPRouteMatch{Method: ptr.To(gatewayv1.HTTPMethodPost)}
	query := gatewayv1.HTTPRouteMatch{QueryParams: []gatewayv1.HTTPQueryParamMatch{{Name: "v", Value: "2"}}}
	for _, tc := range []struct {
		name   string
		match  gatewayv1.HTTPRouteMatch
		method string
		target string
		header string
		want   bool
	}{
		{"the default matches everything", gatewayv1.HTTPRouteMatch{}, "GET", "/any/path", "", true},
		{"a prefix matches itself", pathMatch(gatewayv1.PathMatchPathPrefix, "/api"), "GET", "/api", "", true},
		{"a prefix matches below itself", pathMatch(gatewayv1.PathMatchPathPrefix, "/api"), "GET", "/api/v1", "", true},
		{"a prefix matches whole segments only", pathMatch(gatewayv1.PathMatchPathPrefix, "/api"), "GET", "/apiv1", "", false},
		{"a trailing slash does not change a prefix", pathMatch(gatewayv1.PathMatchPathPrefix, "/api/"), "GET", "/api", "", true},
		{"exact", pathMatch(gatewayv1.PathMatchExact, "/latest"), "GET", "/latest", "", true},
		{"exact is exact", pathMatch(gatewayv1.PathMatchExact, "/latest"), "GET", "/latest/", "", false},
		{"regular expression", pathMatch(gatewayv1.PathMatchRegularExpression, "^/v[0-9]+/"), "GET", "/v2/x", "", true},
		{"header present", header, "GET", "/", "dev", true},
		{"header differs", header, "GET", "/", "prod", false},
		{"header absent", header, "GET", "/", "", false},
		{"method", method, "POST", "/", "", true},
		{"other method", method, "GET", "/", "", false},
		{"query parameter", query, "GET", "/?v=2", "", true},
		{"query parameter differs", query, "GET", "/?v=3", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.header != "" {
				r.Header.Set("X-Env", tc.header)
			}
			c := compileMatch(tc.match)
			if got := c.matches(r, r.URL.Query()); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRoutePrecedence(t *testing.T) {
	rule := func(name string, hosts []string, m gatewayv1.HTTPRouteMatch) *compiledRule {
		return &compiledRule{route: types.NamespacedName{Name: name}, hostnames: hosts, match: compileMatch(m)}
	}
	rules := []*compiledRule{
		rule("any-host-root", nil, gatewayv1.HTTPRouteMatch{}),
		rule("wildcard-root", []string{"*.example.com"}, gatewayv1.HTTPRouteMatch{}),
		rule("exact-root", []string{"a.example.com"}, gatewayv1.HTTPRouteMatch{}),
		rule("exact-api", []string{"a.example.com"}, pathMatch(gatewayv1.PathMatchPathPrefix, "/api")),
		rule("exact-api-v1", []string{"a.example.com"}, pathMatch(gatewayv1.PathMatchPathPrefix, "/api/v1")),
		rule("exact-api-exact", []string{"a.example.com"}, pathMatch(gatewayv1.PathMatchExact, "/api")),
		rule("older-twin", []string{"b.example.com"}, gatewayv1.HTTPRouteMatch{}),
		rule("newer-twin", []string{"b.example.com"}, gatewayv1.HTTPRouteMatch{}),
	}
	for _, tc := range []struct{ host, path, want string }{
		{"a.example.com", "/", "exact-root"},
		{"c.example.com", "/", "wildcard-root"},
		{"other.test", "/", "any-host-root"},
		{"a.example.com", "/api/x", "exact-api"},
		{"a.example.com", "/api/v1/x", "exact-api-v1"},
		{"a.example.com", "/api", "exact-api-exact"},
		{"b.example.com", "/", "older-twin"},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		got := route(rules, r, tc.host)
		if got == nil || got.route.Name != tc.want {
			t.Errorf("%s%s: got %v, want %s", tc.host, tc.path, got, tc.want)
		}
	}
	if got := route(rules[3:6], httptest.NewRequest("GET", "/other", nil), "a.example.com"); got != nil {
		t.Errorf("no rule matches /other, got %s", got.route.Name)
	}
}

func TestPick(t *testing.T) {
	if pick(nil) != nil || pick([]backend{{weight: 0}}) != nil {
		t.Error("no weight, no backend")
	}
	only := []backend{{name: "a", weight: 0}, {name: "b", weight: 3}}
	for range 20 {
		if b := pick(only); b == nil || b.name != "b" {
			t.Fatalf("picked %v, want b", b)
		}
	}
}

func TestReadyEndpoints(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "ns"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
			{Name: "admin", Port: 81, TargetPort: intstr.FromInt32(9001)},
		}},
	}
	slice := func(ready bool, addr string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}, {Name: ptr.To("admin"), Port: ptr.To(int32(9001))}},
		}
	}
	pod := func(name, ip string, ready corev1.ConditionStatus, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8774}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	api := map[string]string{"app": "api"}
	for _, tc := range []struct {
		name   string
		port   int32
		slices []*discoveryv1.EndpointSlice
		pods   []*corev1.Pod
		want   []string
	}{
		{"ready slice addresses at the slice port", 80, []*discoveryv1.EndpointSlice{slice(true, "10.0.0.1"), slice(false, "10.0.0.2")}, nil, []string{"10.0.0.1:8080"}},
		{"the port is chosen by name", 81, []*discoveryv1.EndpointSlice{slice(true, "10.0.0.1")}, nil, []string{"10.0.0.1:9001"}},
		{"an unknown Service port", 82, []*discoveryv1.EndpointSlice{slice(true, "10.0.0.1")}, nil, nil},
		{"slices win over pods", 80, []*discoveryv1.EndpointSlice{slice(true, "10.0.0.1")}, []*corev1.Pod{pod("p", "127.0.0.1", corev1.ConditionTrue, api)}, []string{"10.0.0.1:8080"}},
		{"ready loopback pods stand in for slices", 80, []*discoveryv1.EndpointSlice{slice(false, "10.0.0.2")}, []*corev1.Pod{
			pod("ready", "127.0.0.1", corev1.ConditionTrue, api),
			pod("unready", "127.0.0.1", corev1.ConditionFalse, api),
			pod("other", "127.0.0.1", corev1.ConditionTrue, map[string]string{"app": "other"}),
			pod("remote", "10.0.0.3", corev1.ConditionTrue, api),
		}, []string{"127.0.0.1:8774"}},
		{"a numeric target port", 81, nil, []*corev1.Pod{pod("ready", "127.0.0.1", corev1.ConditionTrue, api)}, []string{"127.0.0.1:9001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readyEndpoints(svc, tc.port, tc.slices, tc.pods); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCertificateBySNI(t *testing.T) {
	a, b, any := &tls.Certificate{}, &tls.Certificate{}, &tls.Certificate{}
	one := &portConfig{listeners: []*servedListener{{hostname: "a.example.com", cert: a}}}
	two := &portConfig{listeners: []*servedListener{{hostname: "a.example.com", cert: a}, {hostname: "*.example.com", cert: b}}}
	withDefault := &portConfig{listeners: []*servedListener{{hostname: "a.example.com", cert: a}, {cert: any}}}
	for _, tc := range []struct {
		name string
		cfg  *portConfig
		sni  string
		want *tls.Certificate
	}{
		{"exact SNI", two, "a.example.com", a},
		{"wildcard SNI", two, "b.example.com", b},
		{"unknown SNI", two, "example.org", nil},
		{"no SNI, one listener", one, "", a},
		{"no SNI, several listeners", two, "", nil},
		{"no SNI, a listener without hostname", withDefault, "", any},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.certificate(&tls.ClientHelloInfo{ServerName: tc.sni})
			if got != tc.want || (tc.want == nil) != (err != nil) {
				t.Errorf("got %p, %v; want %p", got, err, tc.want)
			}
		})
	}
}
