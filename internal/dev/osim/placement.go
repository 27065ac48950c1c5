package osim

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// placementPrefix is where the catalog puts Placement.
const placementPrefix = "/placement"

// routePlacement serves the Placement calls of internal/openstack. Every
// mapped hypervisor is a resource provider of the same UUID and name, as
// the libvirt driver reports its compute node.
func (s *Server) routePlacement(mux *http.ServeMux) {
	// Version discovery of the unversioned endpoint the catalog names, as
	// Placement of the 2023.1 series answers it.
	mux.HandleFunc("GET "+placementPrefix+"/{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{{
			"id": "v1.0", "min_version": "1.0", "max_version": "1.39", "status": "CURRENT",
			"links": []map[string]any{{"rel": "self", "href": ""}},
		}}})
	})
	mux.HandleFunc("GET "+placementPrefix+"/traits/{name}", s.getTrait)
	mux.HandleFunc("PUT "+placementPrefix+"/traits/{name}", s.putTrait)
	mux.HandleFunc("DELETE "+placementPrefix+"/traits/{name}", s.deleteTrait)
	mux.HandleFunc("GET "+placementPrefix+"/traits", s.listTraits)
	mux.HandleFunc("GET "+placementPrefix+"/resource_providers", s.listProviders)
	mux.HandleFunc("GET "+placementPrefix+"/resource_providers/{uuid}/traits", s.providerTraits)
	mux.HandleFunc("PUT "+placementPrefix+"/resource_providers/{uuid}/traits", s.setProviderTraits)
}

func (s *Server) putTrait(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !strings.HasPrefix(name, "CUSTOM_") {
		writeError(w, http.StatusBadRequest, "The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix \"CUSTOM_\"")
		return
	}
	s.mu.Lock()
	existed := s.traits[name]
	s.traits[name] = true
	s.mu.Unlock()
	w.Header().Set("Location", placementPrefix+"/traits/"+name)
	if existed {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// getTrait answers 204 for a known trait and 404 otherwise, as Placement does.
func (s *Server) getTrait(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	s.mu.Lock()
	known := s.traits[name]
	s.mu.Unlock()
	if !known {
		writeError(w, http.StatusNotFound, "No such trait(s): "+name)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteTrait(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := r.PathValue("name")
	if !s.traits[name] {
		writeError(w, http.StatusNotFound, "No such trait(s): "+name)
		return
	}
	delete(s.traits, name)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listTraits(w http.ResponseWriter, r *http.Request) {
	prefix, _ := strings.CutPrefix(r.URL.Query().Get("name"), "startswith:")
	s.mu.Lock()
	out := []string{}
	for _, t := range slices.Sorted(maps.Keys(s.traits)) {
		if strings.HasPrefix(t, prefix) {
			out = append(out, t)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"traits": out})
}

// providerBody is a resource provider as microversion 1.6 prints it.
func providerBody(h *hypervisor) map[string]any {
	self := placementPrefix + "/resource_providers/" + h.id
	links := []map[string]any{{"rel": "self", "href": self}}
	for _, rel := range []string{"inventories", "usages", "aggregates", "traits"} {
		links = append(links, map[string]any{"rel": rel, "href": self + "/" + rel})
	}
	return map[string]any{"uuid": h.id, "name": h.host, "generation": h.generation, "links": links}
}

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	s.mu.Lock()
	out := []map[string]any{}
	for _, h := range s.hypervisors {
		if name == "" || h.host == name {
			out = append(out, providerBody(h))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"resource_providers": out})
}

// provider finds a resource provider by UUID; the caller holds s.mu.
func (s *Server) provider(uuid string) *hypervisor {
	if i, ok := s.hvIndex[uuid]; ok {
		return s.hypervisors[i]
	}
	return nil
}

func (s *Server) providerTraits(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.provider(r.PathValue("uuid"))
	if h == nil {
		writeError(w, http.StatusNotFound, "No resource provider with uuid "+r.PathValue("uuid")+" found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"traits": slices.Clone(h.traits), "resource_provider_generation": h.generation})
}

func (s *Server) setProviderTraits(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Traits     []string `json:"traits"`
		Generation int      `json:"resource_provider_generation"`
	}
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Malformed JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.provider(r.PathValue("uuid"))
	switch {
	case h == nil:
		writeError(w, http.StatusNotFound, "No resource provider with uuid "+r.PathValue("uuid")+" found")
		return
	case req.Generation != h.generation:
		writeError(w, http.StatusConflict, "Resource provider's generation already changed. Please update the generation and try again.")
		return
	}
	for _, t := range req.Traits {
		if strings.HasPrefix(t, "CUSTOM_") && !s.traits[t] {
			writeError(w, http.StatusBadRequest, "No such trait(s): "+t)
			return
		}
	}
	h.traits = slices.Sorted(slices.Values(req.Traits))
	h.generation++
	writeJSON(w, http.StatusOK, map[string]any{"traits": slices.Clone(h.traits), "resource_provider_generation": h.generation})
}
