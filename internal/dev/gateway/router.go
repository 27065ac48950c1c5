package gateway

import (
	"cmp"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// backend is one weighted backendRef of a rule, resolved to addresses.
type backend struct {
	name   string
	weight int32
	// invalid backends answer 500, as the Gateway API asks for references
	// that do not resolve.
	invalid bool
	// endpoints are the ready "host:port" addresses; none means 503.
	endpoints []string
}

// compiledMatch is one HTTPRouteMatch, ready to test requests.
type compiledMatch struct {
	pathType gatewayv1.PathMatchType
	path     string
	pathRE   *regexp.Regexp
	method   string
	headers  []valueMatch
	queries  []valueMatch
}

// valueMatch tests one header or query parameter.
type valueMatch struct {
	name  string
	value string
	re    *regexp.Regexp
}

func (v valueMatch) matches(got string, present bool) bool {
	if !present {
		return false
	}
	if v.re != nil {
		return v.re.MatchString(got)
	}
	return got == v.value
}

// compiledRule is one match of one rule of a route on one listener. The
// rules of a listener are kept oldest route first, then by rule and match
// index, which is the Gateway API's tie-break order.
type compiledRule struct {
	route     types.NamespacedName
	hostnames []string
	match     compiledMatch
	backends  []backend
}

// compileMatch turns an HTTPRouteMatch into a compiledMatch; the default
// match is the path prefix "/". Regular expressions were validated when the
// route was accepted.
func compileMatch(m gatewayv1.HTTPRouteMatch) compiledMatch {
	c := compiledMatch{pathType: gatewayv1.PathMatchPathPrefix, path: "/"}
	if m.Path != nil {
		if m.Path.Type != nil {
			c.pathType = *m.Path.Type
		}
		if m.Path.Value != nil {
			c.path = *m.Path.Value
		}
	}
	switch c.pathType {
	case gatewayv1.PathMatchRegularExpression:
		c.pathRE = regexp.MustCompile(c.path)
	case gatewayv1.PathMatchPathPrefix:
		// "/foo/" and "/foo" are the same prefix: both match "/foo".
		if len(c.path) > 1 {
			c.path = strings.TrimSuffix(c.path, "/")
		}
	}
	if m.Method != nil {
		c.method = string(*m.Method)
	}
	for _, h := range m.Headers {
		v := valueMatch{name: string(h.Name), value: h.Value}
		if h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression {
			v.re = regexp.MustCompile(h.Value)
		}
		c.headers = append(c.headers, v)
	}
	for _, q := range m.QueryParams {
		v := valueMatch{name: string(q.Name), value: q.Value}
		if q.Type != nil && *q.Type == gatewayv1.QueryParamMatchRegularExpression {
			v.re = regexp.MustCompile(q.Value)
		}
		c.queries = append(c.queries, v)
	}
	return c
}

// pathMatches tests the path part of a match. A prefix matches whole
// segments only: "/foo" matches "/foo" and "/foo/bar", never "/foobar".
func (c *compiledMatch) pathMatches(path string) bool {
	switch c.pathType {
	case gatewayv1.PathMatchExact:
		return path == c.path
	case gatewayv1.PathMatchRegularExpression:
		return c.pathRE.MatchString(path)
	}
	return c.path == "/" || path == c.path || strings.HasPrefix(path, c.path+"/")
}

func (c *compiledMatch) matches(r *http.Request, query url.Values) bool {
	if !c.pathMatches(r.URL.Path) || (c.method != "" && r.Method != c.method) {
		return false
	}
	for _, h := range c.headers {
		values := r.Header.Values(h.name)
		if !h.matches(strings.Join(values, ","), len(values) > 0) {
			return false
		}
	}
	for _, q := range c.queries {
		values, ok := query[q.name]
		if !ok || !q.matches(values[0], true) {
			return false
		}
	}
	return true
}

// precedence ranks a matching rule for one request, by the Gateway API's
// order: the longest exact hostname, the longest hostname, an exact path
// over a prefix, the longest path, a method, then the most header and query
// matches. Larger is better.
type precedence [7]int

func rank(host string, r *compiledRule) precedence {
	var p precedence
	if host != "" {
		if !isWildcard(host) {
			p[0] = len(host)
		}
		p[1] = len(host)
	}
	switch r.match.pathType {
	case gatewayv1.PathMatchExact:
		p[2] = 2
	case gatewayv1.PathMatchPathPrefix:
		p[2] = 1
	}
	p[3] = len(r.match.path)
	if r.match.method != "" {
		p[4] = 1
	}
	p[5], p[6] = len(r.match.headers), len(r.match.queries)
	return p
}

func (p precedence) better(q precedence) bool {
	for i := range p {
		if c := cmp.Compare(p[i], q[i]); c != 0 {
			return c > 0
		}
	}
	return false
}

// matchedHostname returns the most specific hostname of a rule that the
// request's host falls under, "" for a rule without hostnames, and false
// when none does.
func matchedHostname(hostnames []string, host string) (string, bool) {
	if len(hostnames) == 0 {
		return "", true
	}
	best, found := "", false
	for _, h := range hostnames {
		if hostMatches(h, host) && (!found || (isWildcard(best) && !isWildcard(h)) || (isWildcard(best) == isWildcard(h) && len(h) > len(best))) {
			best, found = h, true
		}
	}
	return best, found
}

// route returns the rule that serves a request on a listener, or nil.
func route(rules []*compiledRule, r *http.Request, host string) *compiledRule {
	query := r.URL.Query()
	var best *compiledRule
	var bestRank precedence
	for _, rule := range rules {
		h, ok := matchedHostname(rule.hostnames, host)
		if !ok || !rule.match.matches(r, query) {
			continue
		}
		if p := rank(h, rule); best == nil || p.better(bestRank) {
			best, bestRank = rule, p
		}
	}
	return best
}

// pick chooses a backend by weight; nil when every weight is zero.
func pick(backends []backend) *backend {
	total := 0
	for _, b := range backends {
		total += int(b.weight)
	}
	if total == 0 {
		return nil
	}
	n := randIndex(total)
	for i := range backends {
		if n -= int(backends[i].weight); n < 0 {
			return &backends[i]
		}
	}
	return nil
}

// readyEndpoints resolves a Service port to the ready addresses of the
// Service's EndpointSlices. A slice port is matched by the Service port's
// name, which is how the endpoint controllers name them ("" for a single
// unnamed port).
//
// The apiserver refuses loopback addresses in EndpointSlices, yet the
// devstack's pods run on the host and report 127.0.0.1. So when the slices
// hold no ready address, the ready loopback Pods the Service selects stand
// in, resolved the way the EndpointSlice controller would.
func readyEndpoints(svc *corev1.Service, port int32, slices []*discoveryv1.EndpointSlice, pods []*corev1.Pod) []string {
	sp := servicePort(svc, port)
	if sp == nil {
		return nil
	}
	if out := sliceEndpoints(sp, slices); len(out) > 0 {
		return out
	}
	return podEndpoints(svc, sp, pods)
}

// sliceEndpoints returns the ready addresses of EndpointSlices for the
// Service port sp.
func sliceEndpoints(sp *corev1.ServicePort, slices []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range slices {
		if s.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		target := int32(0)
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil && sp.Name == "" || p.Name != nil && *p.Name == sp.Name) {
				target = *p.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, addr := range ep.Addresses {
				out = append(out, net.JoinHostPort(addr, strconv.Itoa(int(target))))
			}
		}
	}
	return out
}

// randIndex spreads load; it needs no cryptographic randomness.
func randIndex(n int) int { return rand.IntN(n) }

// podEndpoints returns "ip:port" of the running, ready, loopback Pods that a
// Service selects, at the Service port's target port.
func podEndpoints(svc *corev1.Service, sp *corev1.ServicePort, pods []*corev1.Pod) []string {
	if len(svc.Spec.Selector) == 0 {
		return nil
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	var out []string
	for _, pod := range pods {
		ip := net.ParseIP(pod.Status.PodIP)
		if pod.Namespace != svc.Namespace || !selector.Matches(labels.Set(pod.Labels)) || ip == nil || !ip.IsLoopback() ||
			pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || !podReady(pod) {
			continue
		}
		if port := targetPort(pod, sp); port > 0 {
			out = append(out, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))))
		}
	}
	return out
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves a Service port's targetPort on a Pod: a number, a
// container port's name, or the Service port itself when unset.
func targetPort(pod *corev1.Pod, sp *corev1.ServicePort) int32 {
	switch {
	case sp.TargetPort.Type == intstr.String:
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == sp.TargetPort.StrVal && p.Protocol != corev1.ProtocolUDP && p.Protocol != corev1.ProtocolSCTP {
					return p.ContainerPort
				}
			}
		}
		return 0
	case sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal
	}
	return sp.Port
}
