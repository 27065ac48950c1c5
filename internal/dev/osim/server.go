package osim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Region is the region of every endpoint in the simulator's catalog.
const Region = "RegionOne"

// novaTime is how Nova and Placement print a timestamp: microseconds and
// no zone.
const novaTime = "2006-01-02T15:04:05.000000"

// Server is a running simulator. Its methods are safe for concurrent use.
type Server struct {
	srv  *http.Server
	addr string

	mu          sync.Mutex
	tokens      map[string]bool
	services    map[string]*service // by host
	serviceIDs  map[string]string   // id -> host
	hypervisors []*hypervisor       // in mapping order, the list's order
	hvIndex     map[string]int      // id -> position in hypervisors
	aggregates  map[int]*aggregate
	nextAggID   int
	traits      map[string]bool

	requests atomic.Int64
}

// service is one nova-compute service record.
type service struct {
	id, host, zone, status, disabledReason string
	updated                                time.Time
}

// hypervisor is one compute node mapped into the cell.
type hypervisor struct {
	id, host   string
	generation int
	traits     []string
}

// aggregate is one host aggregate.
type aggregate struct {
	id               int
	uuid, name, zone string
	hosts            []string
	metadata         map[string]string
	created, updated time.Time
}

// Start serves the simulator on a free port of 127.0.0.1 until Close.
func Start() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		addr:       l.Addr().String(),
		tokens:     map[string]bool{},
		services:   map[string]*service{},
		serviceIDs: map[string]string{},
		hvIndex:    map[string]int{},
		aggregates: map[int]*aggregate{},
		nextAggID:  1,
		traits:     map[string]bool{},
	}
	mux := http.NewServeMux()
	s.routeKeystone(mux)
	s.routeNova(mux)
	s.routePlacement(mux)
	s.srv = &http.Server{Handler: s.counted(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// KeystoneURL is the auth URL a ControlPlane names as its Keystone.
func (s *Server) KeystoneURL() string { return "http://" + s.addr + "/identity/v3" }

// Requests counts the requests served so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// ComputeStarted registers an up, enabled nova-compute service for host,
// as a nova-compute process does when it first starts; a host already
// registered only refreshes its heartbeat. It reports whether the service
// is new.
func (s *Server) ComputeStarted(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if svc, ok := s.services[host]; ok {
		svc.updated = time.Now().UTC()
		return false
	}
	svc := &service{id: newUUID(), host: host, zone: "nova", status: "enabled", updated: time.Now().UTC()}
	s.services[host] = svc
	s.serviceIDs[svc.id] = host
	return true
}

// DiscoverHosts maps every registered host that is not mapped yet into
// the hypervisor list, as `nova-manage cell_v2 discover_hosts` does, and
// returns how many it mapped.
func (s *Server) DiscoverHosts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	mapped := map[string]bool{}
	for _, h := range s.hypervisors {
		mapped[h.host] = true
	}
	n := 0
	for host := range s.services {
		if mapped[host] {
			continue
		}
		h := &hypervisor{id: newUUID(), host: host, generation: 1}
		s.hvIndex[h.id] = len(s.hypervisors)
		s.hypervisors = append(s.hypervisors, h)
		n++
	}
	return n
}

// Counts returns how many services and mapped hypervisors there are.
func (s *Server) Counts() (services, hypervisors int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.services), len(s.hypervisors)
}

// counted counts every request and demands a token on every path but
// token issue and version discovery, as the real services' auth
// middleware does.
func (s *Server) counted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.URL.Path != tokensPath && r.URL.Path != placementPrefix+"/" {
			s.mu.Lock()
			ok := s.tokens[r.Header.Get("X-Auth-Token")]
			s.mu.Unlock()
			if !ok {
				writeError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an error body of the shape Nova uses, which
// gophercloud reads only for its message.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message}})
}

// readJSON decodes a request body into v.
func readJSON(r *http.Request, v any) error {
	if r.Body == nil {
		return errors.New("no body")
	}
	return json.NewDecoder(r.Body).Decode(v)
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// nullable prints an empty string as JSON null, as Nova does.
func nullable(v string) any {
	if v == "" {
		return nil
	}
	return v
}
