package osim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// computePrefix is where the catalog puts Nova.
const computePrefix = "/compute/v2.1"

// maxHypervisorPage is Nova's osapi_max_limit: a page never holds more.
const maxHypervisorPage = 1000

// routeNova serves the compute calls of internal/openstack.
func (s *Server) routeNova(mux *http.ServeMux) {
	mux.HandleFunc("GET "+computePrefix+"/os-services", s.listServices)
	mux.HandleFunc("PUT "+computePrefix+"/os-services/{id}", s.updateService)
	mux.HandleFunc("DELETE "+computePrefix+"/os-services/{id}", s.deleteService)
	mux.HandleFunc("GET "+computePrefix+"/os-hypervisors/detail", s.listHypervisors)
	mux.HandleFunc("GET "+computePrefix+"/os-aggregates", s.listAggregates)
	mux.HandleFunc("POST "+computePrefix+"/os-aggregates", s.createAggregate)
	mux.HandleFunc("POST "+computePrefix+"/os-aggregates/{id}/action", s.aggregateAction)
	mux.HandleFunc("DELETE "+computePrefix+"/os-aggregates/{id}", s.deleteAggregate)
	// The simulated hosts run no servers.
	mux.HandleFunc("GET "+computePrefix+"/servers/detail", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"servers": []any{}})
	})
}

// serviceBody is a service as microversion 2.53 prints it. The caller
// holds s.mu.
func (s *Server) serviceBody(svc *service) map[string]any {
	return map[string]any{
		"id": svc.id, "binary": "nova-compute", "host": svc.host, "zone": s.zoneOf(svc),
		"status": svc.status, "state": "up", "disabled_reason": nullable(svc.disabledReason),
		"updated_at": svc.updated.Format(novaTime), "forced_down": false,
	}
}

// zoneOf is a service's availability zone: that of an aggregate holding
// its host, else Nova's default. The caller holds s.mu.
func (s *Server) zoneOf(svc *service) string {
	for _, a := range s.aggregates {
		if a.zone != "" && slices.Contains(a.hosts, svc.host) {
			return a.zone
		}
	}
	return svc.zone
}

func (s *Server) listServices(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	binary, host := q.Get("binary"), q.Get("host")
	out := []map[string]any{}
	s.mu.Lock()
	if binary == "" || binary == "nova-compute" {
		for _, h := range slices.Sorted(maps.Keys(s.services)) {
			if host == "" || host == h {
				out = append(out, s.serviceBody(s.services[h]))
			}
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"services": out})
}

func (s *Server) updateService(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Status         string `json:"status"`
		DisabledReason string `json:"disabled_reason"`
	}
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid input for field/attribute.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	svc, ok := s.services[s.serviceIDs[r.PathValue("id")]]
	if !ok {
		writeError(w, http.StatusNotFound, "Service not found.")
		return
	}
	if req.Status != "" {
		svc.status = req.Status
	}
	svc.disabledReason = req.DisabledReason
	if svc.status == "enabled" {
		svc.disabledReason = ""
	}
	writeJSON(w, http.StatusOK, map[string]any{"service": s.serviceBody(svc)})
}

func (s *Server) deleteService(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	host, ok := s.serviceIDs[id]
	if !ok {
		writeError(w, http.StatusNotFound, "Service not found.")
		return
	}
	delete(s.serviceIDs, id)
	delete(s.services, host)
	// Deleting a compute service deletes its compute node and host mapping.
	if i := slices.IndexFunc(s.hypervisors, func(h *hypervisor) bool { return h.host == host }); i >= 0 {
		s.hypervisors = slices.Delete(s.hypervisors, i, i+1)
		s.hvIndex = map[string]int{}
		for j, h := range s.hypervisors {
			s.hvIndex[h.id] = j
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// hypervisorBody is a compute node as microversion 2.53 prints it in
// /os-hypervisors/detail: the libvirt driver's fields, with a host of
// 64 CPUs and 256 GiB. The caller holds s.mu.
func (s *Server) hypervisorBody(h *hypervisor) map[string]any {
	svc := s.services[h.host]
	status, reason := "enabled", ""
	if svc != nil {
		status, reason = svc.status, svc.disabledReason
	}
	return map[string]any{
		"id": h.id, "hypervisor_hostname": h.host, "state": "up", "status": status,
		"hypervisor_type": "QEMU", "hypervisor_version": 7002000, "host_ip": "127.0.0.1",
		"cpu_info": map[string]any{
			"arch": "x86_64", "model": "Nehalem", "vendor": "Intel", "features": []string{"pge", "clflush"},
			"topology": map[string]any{"cells": 1, "sockets": 1, "cores": 32, "threads": 2},
		},
		"vcpus": 64, "vcpus_used": 0, "memory_mb": 262144, "memory_mb_used": 512, "free_ram_mb": 261632,
		"local_gb": 1000, "local_gb_used": 0, "free_disk_gb": 1000, "disk_available_least": 1000,
		"current_workload": 0, "running_vms": 0,
		"service": map[string]any{"host": h.host, "id": svcID(svc), "disabled_reason": nullable(reason)},
	}
}

func svcID(svc *service) any {
	if svc == nil {
		return nil
	}
	return svc.id
}

// listHypervisors pages by limit and marker, as Nova does from 2.53 on,
// with a next link whenever a page is full.
func (s *Server) listHypervisors(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := maxHypervisorPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "Invalid input for query parameters limit.")
			return
		}
		limit = min(n, maxHypervisorPage)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := 0
	if m := q.Get("marker"); m != "" {
		i, ok := s.hvIndex[m]
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("marker [%s] not found", m))
			return
		}
		start = i + 1
	}
	end := min(start+limit, len(s.hypervisors))
	page := make([]map[string]any, 0, end-start)
	for _, h := range s.hypervisors[start:end] {
		page = append(page, s.hypervisorBody(h))
	}
	body := map[string]any{"hypervisors": page}
	if len(page) == limit && limit > 0 {
		next := fmt.Sprintf("http://%s%s/os-hypervisors/detail?limit=%d&marker=%s", s.addr, computePrefix, limit, s.hypervisors[end-1].id)
		body["hypervisors_links"] = []map[string]any{{"href": next, "rel": "next"}}
	}
	writeJSON(w, http.StatusOK, body)
}

// aggregateBody is an aggregate as microversion 2.41 and later print it.
func aggregateBody(a *aggregate) map[string]any {
	var updated any
	if !a.updated.IsZero() {
		updated = a.updated.Format(novaTime)
	}
	return map[string]any{
		"id": a.id, "uuid": a.uuid, "name": a.name, "availability_zone": nullable(a.zone),
		"hosts": slices.Clone(a.hosts), "metadata": maps.Clone(a.metadata),
		"created_at": a.created.Format(novaTime), "updated_at": updated, "deleted": false, "deleted_at": nil,
	}
}

func (s *Server) listAggregates(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make([]map[string]any, 0, len(s.aggregates))
	for _, id := range slices.Sorted(maps.Keys(s.aggregates)) {
		out = append(out, aggregateBody(s.aggregates[id]))
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"aggregates": out})
}

func (s *Server) createAggregate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Aggregate struct {
			Name string `json:"name"`
			Zone string `json:"availability_zone"`
		} `json:"aggregate"`
	}
	if err := readJSON(r, &req); err != nil || req.Aggregate.Name == "" {
		writeError(w, http.StatusBadRequest, "Invalid input for field/attribute aggregate.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.aggregates {
		if a.name == req.Aggregate.Name {
			writeError(w, http.StatusConflict, fmt.Sprintf("Aggregate %s already exists.", a.name))
			return
		}
	}
	a := &aggregate{id: s.nextAggID, uuid: newUUID(), name: req.Aggregate.Name, zone: req.Aggregate.Zone,
		hosts: []string{}, metadata: map[string]string{}, created: time.Now().UTC()}
	if a.zone != "" {
		a.metadata["availability_zone"] = a.zone
	}
	s.nextAggID++
	s.aggregates[a.id] = a
	// The create response carries neither hosts nor metadata.
	body := aggregateBody(a)
	delete(body, "hosts")
	delete(body, "metadata")
	writeJSON(w, http.StatusOK, map[string]any{"aggregate": body})
}

// aggregateRequest is one aggregate action.
type aggregateRequest struct {
	SetMetadata *struct {
		Metadata map[string]*string `json:"metadata"`
	} `json:"set_metadata"`
	AddHost *struct {
		Host string `json:"host"`
	} `json:"add_host"`
	RemoveHost *struct {
		Host string `json:"host"`
	} `json:"remove_host"`
}

func (s *Server) aggregateAction(w http.ResponseWriter, r *http.Request) {
	var req aggregateRequest
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid input for field/attribute.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := strconv.Atoi(r.PathValue("id"))
	a, ok := s.aggregates[id]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Aggregate %s could not be found.", r.PathValue("id")))
		return
	}
	switch {
	case req.SetMetadata != nil:
		for k, v := range req.SetMetadata.Metadata {
			if v == nil {
				delete(a.metadata, k)
			} else {
				a.metadata[k] = *v
			}
		}
	case req.AddHost != nil:
		if _, known := s.services[req.AddHost.Host]; !known {
			writeError(w, http.StatusNotFound, fmt.Sprintf("Compute host %s could not be found.", req.AddHost.Host))
			return
		}
		if slices.Contains(a.hosts, req.AddHost.Host) {
			writeError(w, http.StatusConflict, "The host is already in the aggregate.")
			return
		}
		a.hosts = append(a.hosts, req.AddHost.Host)
	case req.RemoveHost != nil:
		i := slices.Index(a.hosts, req.RemoveHost.Host)
		if i < 0 {
			writeError(w, http.StatusNotFound, "The host is not in the aggregate.")
			return
		}
		a.hosts = slices.Delete(a.hosts, i, i+1)
	default:
		writeError(w, http.StatusBadRequest, "Invalid aggregate action.")
		return
	}
	a.updated = time.Now().UTC()
	writeJSON(w, http.StatusOK, map[string]any{"aggregate": aggregateBody(a)})
}

func (s *Server) deleteAggregate(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, _ := strconv.Atoi(r.PathValue("id"))
	a, ok := s.aggregates[id]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Sprintf("Aggregate %s could not be found.", r.PathValue("id")))
		return
	case len(a.hosts) > 0:
		writeError(w, http.StatusBadRequest, "Cannot delete an aggregate that still has hosts.")
		return
	}
	delete(s.aggregates, id)
	w.WriteHeader(http.StatusOK)
}
