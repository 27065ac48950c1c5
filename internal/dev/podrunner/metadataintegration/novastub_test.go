package metadataintegration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
)

// novaStub stands in for Nova's metadata API, on 127.0.0.1 of the host:
// the real one answers only for an instance in its database, which takes
// a booted server, while this test proves the path up to the API. It
// records the headers the agent adds and answers with the instance id.
type novaStub struct {
	port int

	mu       sync.Mutex
	requests []http.Header
}

// startNovaStub serves until the test ends.
func startNovaStub(t *testing.T) *novaStub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &novaStub{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Header.Clone())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"uuid": r.Header.Get("X-Instance-ID"), "path": r.URL.Path})
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// last returns the headers of the last request.
func (s *novaStub) last() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

// signature is what Nova checks X-Instance-ID-Signature against: the hex
// HMAC-SHA256 of the instance id under the shared secret.
func signature(secret, instanceID string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(instanceID))
	return hex.EncodeToString(mac.Sum(nil))
}
