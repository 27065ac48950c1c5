package controlplane

import (
	"reflect"
	"testing"
)

func TestComputeRoles(t *testing.T) {
	// The IDs stand for the roles: a admin, s service, m member, r reader.
	compute := []string{"a", "s"}
	tests := []struct {
		name          string
		nova, held    []string
		compute       []string
		grant, revoke []string
	}{
		{name: "a new user gets the compute roles nova holds",
			nova: []string{"a", "s"}, compute: compute, grant: []string{"a", "s"}},
		{name: "nova's other roles are not granted",
			nova: []string{"m", "a", "r", "s"}, compute: compute, grant: []string{"a", "s"}},
		{name: "a compute role nova lacks is not granted",
			nova: []string{"a", "m"}, compute: compute, grant: []string{"a"}},
		{name: "a compute role that does not exist is not granted",
			nova: []string{"a", "s"}, compute: []string{"a"}, grant: []string{"a"}},
		{name: "a settled user changes nothing",
			nova: []string{"a", "s", "m"}, held: []string{"s", "a"}, compute: compute},
		{name: "roles copied from nova before are revoked",
			nova: []string{"a", "s", "m"}, held: []string{"a", "m", "s", "r"}, compute: compute, revoke: []string{"m", "r"}},
		{name: "a role nova lost is revoked",
			nova: []string{"a"}, held: []string{"a", "s"}, compute: compute, revoke: []string{"s"}},
		{name: "nova without roles leaves the user none",
			held: []string{"a"}, compute: compute, revoke: []string{"a"}},
		{name: "a role listed twice is granted once",
			nova: []string{"a"}, compute: []string{"a", "a"}, grant: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			grant, revoke := ComputeRoles(tt.nova, tt.compute, tt.held)
			if !reflect.DeepEqual(grant, tt.grant) || !reflect.DeepEqual(revoke, tt.revoke) {
				t.Errorf("ComputeRoles = grant %v, revoke %v; want grant %v, revoke %v", grant, revoke, tt.grant, tt.revoke)
			}
		})
	}
}
