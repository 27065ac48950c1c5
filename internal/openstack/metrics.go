package openstack

import (
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// requestsTotal counts the operator's OpenStack requests. Its labels are
// fixed words: no URL, host or project ever becomes a label value.
var requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "anvil_openstack_requests_total",
	Help: "HTTP requests the operator sent to OpenStack, by service (identity, compute, placement) and method.",
}, []string{"service", "method"})

func init() {
	metrics.Registry.MustRegister(requestsTotal)
}

// Service names of requestsTotal.
const (
	serviceIdentity  = "identity"
	serviceCompute   = "compute"
	servicePlacement = "placement"
)

// countingTransport counts each request under the service whose endpoint
// it goes to. Authentication runs before the catalog is read and goes to
// Keystone, so a request that matches no endpoint yet counts as identity.
type countingTransport struct {
	next http.RoundTripper
	// endpoints maps endpoint URL prefixes to service names; set once the
	// session knows its endpoints.
	endpoints atomic.Pointer[map[string]string]
}

// RoundTrip counts the request and sends it on.
func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	requestsTotal.WithLabelValues(t.serviceOf(req.URL.String()), methodLabel(req.Method)).Inc()
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(req)
}

func (t *countingTransport) serviceOf(url string) string {
	if m := t.endpoints.Load(); m != nil {
		for prefix, service := range *m {
			if prefix != "" && strings.HasPrefix(url, prefix) {
				return service
			}
		}
	}
	return serviceIdentity
}

// methodLabel keeps the label to the methods a client sends.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return m
	}
	return "OTHER"
}
