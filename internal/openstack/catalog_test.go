package openstack

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// identityAt returns a Session whose identity client talks to srv.
func identityAt(srv *httptest.Server) *Session {
	provider := &gophercloud.ProviderClient{HTTPClient: *srv.Client()}
	return &Session{provider: provider, identity: &gophercloud.ServiceClient{ProviderClient: provider, Endpoint: srv.URL + "/v3/"}}
}

// TestCatalogCalls checks what each Catalog method sends and reads, against
// a stand-in for Keystone's services and endpoints API.
func TestCatalogCalls(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, r.Method+" "+r.URL.RequestURI()+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v3/services":
			_, _ = io.WriteString(w, `{"services": [{"id": "s1", "type": "compute", "name": "nova", "description": "mark", "enabled": true}], "links": {}}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v3/services":
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"service": {"id": "s2", "type": "compute", "name": "nova"}}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v3/endpoints":
			_, _ = io.WriteString(w, `{"endpoints": [{"id": "e1", "interface": "internal", "region_id": "R", "region": "R", "url": "http://in"},`+
				`{"id": "e2", "interface": "public", "region": "Old", "url": "https://pub"}], "links": {}}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v3/endpoints":
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"endpoint": {"id": "e3", "interface": "internal", "url": "http://in"}}`)
		case r.Method == http.MethodPatch && r.URL.Path == "/v3/endpoints/e1":
			_, _ = io.WriteString(w, `{"endpoint": {"id": "e1", "interface": "internal", "url": "http://new"}}`)
		case r.Method == http.MethodDelete && (r.URL.Path == "/v3/endpoints/e1" || r.URL.Path == "/v3/services/s1"):
			w.WriteHeader(http.StatusNoContent)
		default:
			// A missing row, whose body echoes input, as some services do.
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error": {"message": "no such thing as hunter2"}}`)
		}
	}))
	defer srv.Close()
	s := identityAt(srv)
	ctx := t.Context()

	svcs, err := s.ListCatalogServices(ctx, "compute")
	if err != nil || len(svcs) != 1 || svcs[0] != (RegisteredService{ID: "s1", Type: "compute", Name: "nova", Description: "mark", Enabled: true}) {
		t.Fatalf("ListCatalogServices = %+v, %v", svcs, err)
	}
	if id, err := s.CreateCatalogService(ctx, RegisteredService{Type: "compute", Name: "nova", Description: "mark", Enabled: true}); err != nil || id != "s2" {
		t.Errorf("CreateCatalogService = %q, %v", id, err)
	}
	eps, err := s.ListEndpoints(ctx, "s1")
	if err != nil || len(eps) != 2 || eps[0] != (RegisteredEndpoint{ID: "e1", Interface: "internal", Region: "R", URL: "http://in"}) || eps[1].Region != "Old" {
		t.Errorf("ListEndpoints = %+v, %v", eps, err)
	}
	if id, err := s.CreateEndpoint(ctx, "s1", RegisteredEndpoint{Interface: "internal", Region: "R", URL: "http://in"}); err != nil || id != "e3" {
		t.Errorf("CreateEndpoint = %q, %v", id, err)
	}
	if err := s.UpdateEndpointURL(ctx, "e1", "http://new"); err != nil {
		t.Errorf("UpdateEndpointURL: %v", err)
	}
	for _, err := range []error{s.DeleteEndpoint(ctx, "e1"), s.DeleteCatalogService(ctx, "s1"), s.DeleteEndpoint(ctx, "gone"), s.DeleteCatalogService(ctx, "gone")} {
		if err != nil {
			t.Errorf("a delete, or a delete of a missing row: %v", err)
		}
	}
	err = s.UpdateEndpointURL(ctx, "gone", "http://x")
	if !IsNotFound(err) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "://") {
		t.Errorf("a failed update = %v, want a 404 naming neither body nor URL", err)
	}

	want := map[string]map[string]any{
		"POST /v3/services":      {"service": map[string]any{"type": "compute", "name": "nova", "description": "mark", "enabled": true}},
		"POST /v3/endpoints":     {"endpoint": map[string]any{"service_id": "s1", "interface": "internal", "region": "R", "url": "http://in"}},
		"PATCH /v3/endpoints/e1": {"endpoint": map[string]any{"url": "http://new"}},
	}
	for _, b := range bodies {
		method, rest, _ := strings.Cut(b, " ")
		path, body, _ := strings.Cut(rest, " ")
		if strings.HasPrefix(path, "/v3/services?") && path != "/v3/services?type=compute" {
			t.Errorf("services listed with %s", path)
		}
		if strings.HasPrefix(path, "/v3/endpoints?") && path != "/v3/endpoints?service_id=s1" {
			t.Errorf("endpoints listed with %s", path)
		}
		w, ok := want[method+" "+path]
		if !ok {
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(body), &got); err != nil || !jsonEqual(got, w) {
			t.Errorf("%s %s sent %s", method, path, body)
		}
	}
}

func jsonEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
