package controlplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/anvil/anvil/internal/openstack"
)

// serviceProject is the nova service user's project, with an admin session
// of the shared Keystone and the IDs of the roles the tests name.
type serviceProject struct {
	s         *openstack.Session
	domain    string
	projectID string
	roleIDs   map[string]string
}

func openServiceProject(t *testing.T) *serviceProject {
	t.Helper()
	ctx := context.Background()
	s, err := openstack.NewIdentitySession(ctx, cloud.AdminCredentials())
	if err != nil {
		t.Fatal(err)
	}
	domain, err := s.DomainID(ctx, "Default")
	if err != nil {
		t.Fatal(err)
	}
	project, found, err := s.LookupProject(ctx, "service", domain)
	if err != nil || !found {
		t.Fatalf("the service project: found %v, %v", found, err)
	}
	sp := &serviceProject{s: s, domain: domain, projectID: project.ID, roleIDs: map[string]string{}}
	for _, name := range []string{"admin", "service", "member", "reader"} {
		if sp.roleIDs[name], err = s.FindRole(ctx, name); err != nil || sp.roleIDs[name] == "" {
			t.Fatalf("the role %s: %q, %v", name, sp.roleIDs[name], err)
		}
	}
	return sp
}

func (sp *serviceProject) userID(t *testing.T, name string) string {
	t.Helper()
	user, found, err := sp.s.LookupUser(context.Background(), name, sp.domain)
	if err != nil || !found {
		t.Fatalf("the user %s: found %v, %v", name, found, err)
	}
	return user.ID
}

// roles lists the names of the user's roles on the project, sorted; a role
// the tests do not name shows as its ID.
func (sp *serviceProject) roles(t *testing.T, user string) []string {
	t.Helper()
	ids, err := sp.s.RolesOn(context.Background(), sp.userID(t, user), sp.projectID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, id := range ids {
		name := id
		for n, known := range sp.roleIDs {
			if known == id {
				name = n
			}
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// grant gives the user the role on the project; with undo, the grant is
// taken back when the test ends, unless the user held the role before.
func (sp *serviceProject) grant(t *testing.T, user, role string, undo bool) {
	t.Helper()
	if slices.Contains(sp.roles(t, user), role) {
		return
	}
	ctx := context.Background()
	id := sp.userID(t, user)
	if err := sp.s.AssignRole(ctx, sp.roleIDs[role], id, sp.projectID); err != nil {
		t.Fatal(err)
	}
	if undo {
		t.Cleanup(func() {
			if err := sp.s.RevokeRole(ctx, sp.roleIDs[role], id, sp.projectID); err != nil {
				t.Errorf("taking %s back from %s: %v", role, user, err)
			}
		})
	}
}

// waitComputeRoles waits until a cluster's own user holds exactly the
// compute roles, admin and service, on the project.
func (sp *serviceProject) waitComputeRoles(t *testing.T, user string) {
	t.Helper()
	want := []string{"admin", "service"}
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got = sp.roles(t, user)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("%s holds %v on the service project, want %v", user, got, want)
	}
}
