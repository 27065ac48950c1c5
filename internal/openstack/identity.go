package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/catalog"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Identity is what Anvil does in Keystone: manage the accounts it owns.
type Identity interface {
	// FindProject returns the project's ID, or "" when it does not exist.
	FindProject(ctx context.Context, name, domainID string) (string, error)
	// EnsureProject creates the project if needed and returns its ID.
	EnsureProject(ctx context.Context, name, domainID string) (string, error)
	// DeleteProject deletes a project; a missing one is not an error.
	DeleteProject(ctx context.Context, id string) error
	// FindUser returns the user's ID, or "" when it does not exist.
	FindUser(ctx context.Context, name, domainID string) (string, error)
	// EnsureUser creates the user, or sets its password, and returns its ID.
	EnsureUser(ctx context.Context, name, domainID, password string) (string, error)
	// DeleteUser deletes a user; a missing one is not an error.
	DeleteUser(ctx context.Context, id string) error
	// FindRole returns the role's ID, or "" when it does not exist.
	FindRole(ctx context.Context, name string) (string, error)
	// AssignRole grants a role to a user on a project; granting twice is fine.
	AssignRole(ctx context.Context, roleID, userID, projectID string) error
	// HasRole tells whether a user holds a role on a project.
	HasRole(ctx context.Context, roleID, userID, projectID string) (bool, error)
	// Catalog returns the service catalog.
	Catalog(ctx context.Context) ([]CatalogService, error)
}

// CatalogService is one service of the catalog with its endpoints.
type CatalogService struct {
	Type, Name string
	Endpoints  []CatalogEndpoint
}

// CatalogEndpoint is one endpoint row.
type CatalogEndpoint struct {
	Interface, Region, URL string
}

var _ Identity = (*Session)(nil)

// FindProject implements Identity.
func (s *Session) FindProject(ctx context.Context, name, domainID string) (string, error) {
	var id string
	err := projects.List(s.identity, projects.ListOpts{Name: name, DomainID: domainID}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := projects.ExtractProjects(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		id = list[0].ID
		return false, nil
	})
	return id, wrap("identity: find project", err)
}

// EnsureProject implements Identity.
func (s *Session) EnsureProject(ctx context.Context, name, domainID string) (string, error) {
	id, err := s.FindProject(ctx, name, domainID)
	if err != nil || id != "" {
		return id, err
	}
	p, err := projects.Create(ctx, s.identity, projects.CreateOpts{Name: name, DomainID: domainID}).Extract()
	if err != nil {
		return "", wrap("identity: create project", err)
	}
	return p.ID, nil
}

// DeleteProject implements Identity.
func (s *Session) DeleteProject(ctx context.Context, id string) error {
	return ignoreNotFound(wrap("identity: delete project", projects.Delete(ctx, s.identity, id).ExtractErr()))
}

// FindUser implements Identity.
func (s *Session) FindUser(ctx context.Context, name, domainID string) (string, error) {
	var id string
	err := users.List(s.identity, users.ListOpts{Name: name, DomainID: domainID}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := users.ExtractUsers(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		id = list[0].ID
		return false, nil
	})
	return id, wrap("identity: find user", err)
}

// EnsureUser implements Identity. An existing user gets the password, so a
// rotated Secret takes effect on the next pass.
func (s *Session) EnsureUser(ctx context.Context, name, domainID, password string) (string, error) {
	id, err := s.FindUser(ctx, name, domainID)
	if err != nil {
		return "", err
	}
	if id == "" {
		enabled := true
		u, err := users.Create(ctx, s.identity, users.CreateOpts{Name: name, DomainID: domainID, Password: password, Enabled: &enabled}).Extract()
		if err != nil {
			return "", wrap("identity: create user", err)
		}
		return u.ID, nil
	}
	if _, err := users.Update(ctx, s.identity, id, users.UpdateOpts{Password: password}).Extract(); err != nil {
		return "", wrap("identity: set user password", err)
	}
	return id, nil
}

// DeleteUser implements Identity.
func (s *Session) DeleteUser(ctx context.Context, id string) error {
	return ignoreNotFound(wrap("identity: delete user", users.Delete(ctx, s.identity, id).ExtractErr()))
}

// FindRole implements Identity.
func (s *Session) FindRole(ctx context.Context, name string) (string, error) {
	var id string
	err := roles.List(s.identity, roles.ListOpts{Name: name}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := roles.ExtractRoles(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		id = list[0].ID
		return false, nil
	})
	return id, wrap("identity: find role", err)
}

// AssignRole implements Identity.
func (s *Session) AssignRole(ctx context.Context, roleID, userID, projectID string) error {
	return wrap("identity: assign role", roles.Assign(ctx, s.identity, roleID, roles.AssignOpts{UserID: userID, ProjectID: projectID}).ExtractErr())
}

// RevokeRole implements Accounts.
func (s *Session) RevokeRole(ctx context.Context, roleID, userID, projectID string) error {
	err := roles.Unassign(ctx, s.identity, roleID, roles.UnassignOpts{UserID: userID, ProjectID: projectID}).ExtractErr()
	return wrap("identity: revoke role", ignoreNotFound(err))
}

// HasRole implements Identity.
func (s *Session) HasRole(ctx context.Context, roleID, userID, projectID string) (bool, error) {
	found := false
	err := roles.ListAssignments(s.identity, roles.ListAssignmentsOpts{RoleID: roleID, UserID: userID, ScopeProjectID: projectID}).
		EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
			list, err := roles.ExtractRoleAssignments(p)
			found = err == nil && len(list) > 0
			return !found, err
		})
	return found, wrap("identity: list role assignments", err)
}

// Catalog implements Identity.
func (s *Session) Catalog(ctx context.Context) ([]CatalogService, error) {
	var out []CatalogService
	err := catalog.List(s.identity).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		entries, err := catalog.ExtractServiceCatalog(p)
		if err != nil {
			return false, err
		}
		for _, e := range entries {
			svc := CatalogService{Type: e.Type, Name: e.Name}
			for _, ep := range e.Endpoints {
				svc.Endpoints = append(svc.Endpoints, CatalogEndpoint{Interface: ep.Interface, Region: ep.Region, URL: ep.URL})
			}
			out = append(out, svc)
		}
		return true, nil
	})
	return out, wrap("identity: list catalog", err)
}

func ignoreNotFound(err error) error {
	if IsNotFound(err) {
		return nil
	}
	return err
}
