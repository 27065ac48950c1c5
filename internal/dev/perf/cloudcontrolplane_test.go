package perf

import (
	"testing"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
)

func TestBuildControlPlane(t *testing.T) {
	ks := &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://ks/v3", PublicEndpoint: "https://ks/v3"}
	local := map[string]string{localcloud.PlacementURL: "http://127.0.0.1:8778", localcloud.NeutronURL: "http://127.0.0.1:9696", localcloud.ImageURL: "http://127.0.0.1:9292"}
	for _, tc := range []struct {
		name                    string
		cp                      *c5c3v1alpha1.ControlPlane
		placementPublic, dbHost string
		dbPort                  int32
		metadata                bool
	}{
		{"P1's made-up addresses", buildControlPlane("a", benchEndpoints(ks, "mariadb.openstack.svc", 0)), "https://placement.bench.invalid", "mariadb.openstack.svc", 0, false},
		{"P4's loopback database", buildControlPlane("a", benchEndpoints(ks, "127.0.0.1", 1)), "https://placement.bench.invalid", "127.0.0.1", 1, false},
		{"the local services, with metadata", buildCloudControlPlane("a", local, 3306, true), "http://127.0.0.1:8778", "127.0.0.1", 3306, true},
		{"the local services, without", buildCloudControlPlane("a", local, 3306, false), "http://127.0.0.1:8778", "127.0.0.1", 3306, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.cp.Spec.Services
			if got := s.Placement.PublicEndpoint; got != tc.placementPublic {
				t.Errorf("placement public endpoint = %q, want %q", got, tc.placementPublic)
			}
			if db := s.Nova.Database; db.Host != tc.dbHost || db.Port != tc.dbPort || db.SecretName != "a-db" {
				t.Errorf("database = %+v", db)
			}
			if got := s.Nova.MetadataSharedSecretRef != nil; got != tc.metadata {
				t.Errorf("metadata secret set = %v, want %v", got, tc.metadata)
			}
			if s.Nova.RemoteCompute == nil || s.Nova.RemoteCompute.TransportURLSecretRef.Name != "a-remote-transport" {
				t.Errorf("remote compute = %+v", s.Nova.RemoteCompute)
			}
		})
	}
}
