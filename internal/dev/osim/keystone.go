package osim

import (
	"net/http"
	"time"
)

// tokensPath is Keystone's token issue, the one call without a token.
const tokensPath = "/identity/v3/auth/tokens"

// tokenLifetime is how long an issued token lasts, Keystone's default.
const tokenLifetime = time.Hour

// routeKeystone serves token issue. Any password is accepted: the
// simulator stands in for the cloud's capacity, not for its security,
// and it never records what it was sent.
func (s *Server) routeKeystone(mux *http.ServeMux) {
	mux.HandleFunc("POST "+tokensPath, s.issueToken)
}

// authRequest is the part of a password authentication the token echoes.
type authRequest struct {
	Auth struct {
		Identity struct {
			Password struct {
				User struct {
					Name   string `json:"name"`
					Domain struct {
						Name string `json:"name"`
					} `json:"domain"`
				} `json:"user"`
			} `json:"password"`
		} `json:"identity"`
		Scope struct {
			Project struct {
				Name string `json:"name"`
			} `json:"project"`
		} `json:"scope"`
	} `json:"auth"`
}

func (s *Server) issueToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Expecting to find auth in request body.")
		return
	}
	user, project := req.Auth.Identity.Password.User.Name, req.Auth.Scope.Project.Name
	if user == "" {
		writeError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
		return
	}
	token := newUUID()
	s.mu.Lock()
	s.tokens[token] = true
	s.mu.Unlock()
	now := time.Now().UTC()
	domain := map[string]any{"id": "default", "name": "Default"}
	w.Header().Set("X-Subject-Token", token)
	writeJSON(w, http.StatusCreated, map[string]any{"token": map[string]any{
		"methods":    []string{"password"},
		"user":       map[string]any{"domain": domain, "id": newUUID(), "name": user, "password_expires_at": nil},
		"audit_ids":  []string{newUUID()[:22]},
		"expires_at": now.Add(tokenLifetime).Format(novaTime) + "Z",
		"issued_at":  now.Format(novaTime) + "Z",
		"project":    map[string]any{"domain": domain, "id": newUUID(), "name": project},
		"is_domain":  false,
		"roles":      []map[string]any{{"id": newUUID(), "name": "admin"}, {"id": newUUID(), "name": "service"}},
		"catalog":    s.catalog(),
	}})
}

// catalog lists identity, compute and placement with an internal and a
// public endpoint each, all on this server.
func (s *Server) catalog() []map[string]any {
	base := "http://" + s.addr
	entry := func(typ, name, url string) map[string]any {
		var eps []map[string]any
		for _, iface := range []string{"internal", "public"} {
			eps = append(eps, map[string]any{"id": newUUID(), "interface": iface, "region_id": Region, "region": Region, "url": url})
		}
		return map[string]any{"endpoints": eps, "id": newUUID(), "type": typ, "name": name}
	}
	return []map[string]any{
		entry("identity", "keystone", base+"/identity"),
		entry("compute", "nova", base+"/compute/v2.1"),
		entry("placement", "placement", base+"/placement"),
	}
}
