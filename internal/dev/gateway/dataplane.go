package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// servedListener is one programmed listener as the data plane serves it.
type servedListener struct {
	name     string
	hostname string
	cert     *tls.Certificate
	rules    []*compiledRule
}

// portConfig is everything served on one host port. Listeners of several
// Gateways may share a port when their protocols agree; the Host header (and
// SNI for HTTPS) tells them apart.
type portConfig struct {
	protocol  gatewayv1.ProtocolType
	listeners []*servedListener
}

// listenerFor returns the listener whose hostname fits host best: an exact
// hostname, then the longest wildcard, then a listener without hostname.
func (c *portConfig) listenerFor(host string) *servedListener {
	var best *servedListener
	for _, l := range c.listeners {
		if !hostMatches(l.hostname, host) {
			continue
		}
		if best == nil || moreSpecific(l.hostname, best.hostname) {
			best = l
		}
	}
	return best
}

// moreSpecific tells whether hostname a is a more specific pattern than b.
func moreSpecific(a, b string) bool {
	switch {
	case b == "":
		return a != ""
	case a == "":
		return false
	case isWildcard(a) != isWildcard(b):
		return !isWildcard(a)
	}
	return len(a) > len(b)
}

// certificate chooses the serving certificate of an HTTPS port by SNI.
// Without SNI (a client dialling an IP address) the port's only
// certificate is used, or that of a listener without hostname.
func (c *portConfig) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName != "" {
		if l := c.listenerFor(normalizeHost(hello.ServerName)); l != nil && l.cert != nil {
			return l.cert, nil
		}
		return nil, fmt.Errorf("no listener serves %q", hello.ServerName)
	}
	if len(c.listeners) == 1 && c.listeners[0].cert != nil {
		return c.listeners[0].cert, nil
	}
	if l := c.listenerFor(""); l != nil && l.hostname == "" && l.cert != nil {
		return l.cert, nil
	}
	return nil, errors.New("the client sent no SNI and several listeners share the port")
}

// portServer serves one host port; its configuration is swapped atomically
// so that a reload never drops a connection.
type portServer struct {
	protocol gatewayv1.ProtocolType
	srv      *http.Server
	cfg      atomic.Pointer[portConfig]
}

// DataPlane serves the programmed listeners on one local address and
// proxies requests to the backends. It is a manager Runnable: it stops every
// server when the manager stops.
type DataPlane struct {
	address   string
	log       logr.Logger
	transport *http.Transport

	mu      sync.Mutex
	servers map[int32]*portServer
	closed  bool
}

// newDataPlane returns a data plane that listens on address (an IP).
func newDataPlane(address string, log logr.Logger) *DataPlane {
	return &DataPlane{
		address: address,
		log:     log,
		servers: map[int32]*portServer{},
		transport: &http.Transport{
			Proxy:                 nil, // backends are local; never go through an environment proxy
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		},
	}
}

// Start blocks until ctx ends, then stops every server.
func (d *DataPlane) Start(ctx context.Context) error {
	<-ctx.Done()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for port, s := range d.servers {
		d.stop(port, s)
	}
	d.transport.CloseIdleConnections()
	return nil
}

// NeedLeaderElection is false: every gateway process serves.
func (d *DataPlane) NeedLeaderElection() bool { return false }

// apply makes the servers match configs, keyed by host port, and returns the
// ports it could not listen on. Servers whose protocol is unchanged keep
// their socket and only swap their configuration.
func (d *DataPlane) apply(configs map[int32]*portConfig) map[int32]error {
	d.mu.Lock()
	defer d.mu.Unlock()
	failed := map[int32]error{}
	if d.closed {
		return failed
	}
	for port, s := range d.servers {
		if c, ok := configs[port]; !ok || c.protocol != s.protocol {
			d.stop(port, s)
		}
	}
	for port, c := range configs {
		if s, ok := d.servers[port]; ok {
			s.cfg.Store(c)
			continue
		}
		if err := d.listen(port, c); err != nil {
			failed[port] = err
		}
	}
	return failed
}

// listen starts the server of one host port.
func (d *DataPlane) listen(port int32, c *portConfig) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(d.address, strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	s := &portServer{protocol: c.protocol}
	s.cfg.Store(c)
	s.srv = &http.Server{
		Handler:           &portHandler{server: s, dp: d},
		ReadHeaderTimeout: 30 * time.Second,
		// HTTP/1.1 only: the proxy speaks HTTP/1.1 to backends anyway.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	if c.protocol == gatewayv1.HTTPSProtocolType {
		ln = tls.NewListener(ln, &tls.Config{
			MinVersion: tls.VersionTLS12,
			NextProtos: []string{"http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return s.cfg.Load().certificate(hello)
			},
		})
	}
	d.servers[port] = s
	d.log.Info("serving", "port", port, "protocol", c.protocol)
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error(err, "server stopped", "port", port)
		}
	}()
	return nil
}

// stop shuts one server down, letting requests in flight finish briefly.
func (d *DataPlane) stop(port int32, s *portServer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	delete(d.servers, port)
	d.log.Info("stopped serving", "port", port)
}

// portHandler routes the requests of one port. It never logs headers or
// bodies: metadata requests carry signatures.
type portHandler struct {
	server *portServer
	dp     *DataPlane
}

func (h *portHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := normalizeHost(r.Host)
	l := h.server.cfg.Load().listenerFor(host)
	if l == nil {
		http.Error(w, "no listener for this host", http.StatusNotFound)
		return
	}
	rule := route(l.rules, r, host)
	if rule == nil {
		http.Error(w, "no route", http.StatusNotFound)
		return
	}
	b := pick(rule.backends)
	switch {
	case b == nil || b.invalid:
		http.Error(w, "the route's backend is invalid", http.StatusInternalServerError)
		return
	case len(b.endpoints) == 0:
		http.Error(w, "no ready endpoint", http.StatusServiceUnavailable)
		return
	}
	target := b.endpoints[randIndex(len(b.endpoints))]
	proxy := &httputil.ReverseProxy{
		Transport: h.dp.transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The Host header is passed on as the client sent it, as
			// gateways do; only the connection goes to the endpoint.
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", target
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			h.dp.log.Info("backend unreachable", "route", rule.route.String(), "backend", b.name, "endpoint", target, "error", err.Error())
			http.Error(w, "backend unreachable", http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, r)
}
