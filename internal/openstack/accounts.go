package openstack

import (
	"context"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/domains"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Accounts is the Keystone work of the accounts Anvil owns. Keystone has
// no labels, so Anvil marks what it creates with a description and
// deletes only what carries its mark.
type Accounts interface {
	// DomainID returns the ID of the domain with that name, or "".
	DomainID(ctx context.Context, name string) (string, error)
	// LookupUser returns the user of that name in the domain, if any.
	LookupUser(ctx context.Context, name, domainID string) (Account, bool, error)
	// CreateUser creates an enabled user with a password and a description.
	CreateUser(ctx context.Context, name, domainID, password, description string) (string, error)
	// SetPassword replaces a user's password.
	SetPassword(ctx context.Context, userID, password string) error
	// LookupProject returns the project of that name in the domain, if any.
	LookupProject(ctx context.Context, name, domainID string) (Account, bool, error)
	// CreateProject creates a project with a description.
	CreateProject(ctx context.Context, name, domainID, description string) (string, error)
	// FindRole returns the role's ID, or "" when it does not exist.
	FindRole(ctx context.Context, name string) (string, error)
	// AssignRole grants a role to a user on a project; granting twice is fine.
	AssignRole(ctx context.Context, roleID, userID, projectID string) error
	// RevokeRole takes a role of a user on a project; a missing grant is
	// not an error.
	RevokeRole(ctx context.Context, roleID, userID, projectID string) error
	// RolesOn lists the IDs of the roles a user holds directly on a project.
	RolesOn(ctx context.Context, userID, projectID string) ([]string, error)
	// DeleteUser deletes a user; a missing one is not an error.
	DeleteUser(ctx context.Context, id string) error
	// DeleteProject deletes a project; a missing one is not an error.
	DeleteProject(ctx context.Context, id string) error
}

// Account is a Keystone user or project as Anvil reads it.
type Account struct {
	ID          string
	Description string
}

var _ Accounts = (*Session)(nil)

// DomainID implements Accounts.
func (s *Session) DomainID(ctx context.Context, name string) (string, error) {
	var id string
	err := domains.List(s.identity, domains.ListOpts{Name: name}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := domains.ExtractDomains(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		id = list[0].ID
		return false, nil
	})
	return id, wrap("identity: find domain", err)
}

// LookupUser implements Accounts.
func (s *Session) LookupUser(ctx context.Context, name, domainID string) (Account, bool, error) {
	var out Account
	found := false
	err := users.List(s.identity, users.ListOpts{Name: name, DomainID: domainID}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := users.ExtractUsers(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		out, found = Account{ID: list[0].ID, Description: list[0].Description}, true
		return false, nil
	})
	return out, found, wrap("identity: find user", err)
}

// CreateUser implements Accounts.
func (s *Session) CreateUser(ctx context.Context, name, domainID, password, description string) (string, error) {
	enabled := true
	u, err := users.Create(ctx, s.identity, users.CreateOpts{
		Name: name, DomainID: domainID, Password: password, Description: description, Enabled: &enabled,
	}).Extract()
	if err != nil {
		return "", wrap("identity: create user", err)
	}
	return u.ID, nil
}

// SetPassword implements Accounts.
func (s *Session) SetPassword(ctx context.Context, userID, password string) error {
	_, err := users.Update(ctx, s.identity, userID, users.UpdateOpts{Password: password}).Extract()
	return wrap("identity: set user password", err)
}

// LookupProject implements Accounts.
func (s *Session) LookupProject(ctx context.Context, name, domainID string) (Account, bool, error) {
	var out Account
	found := false
	err := projects.List(s.identity, projects.ListOpts{Name: name, DomainID: domainID}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		list, err := projects.ExtractProjects(p)
		if err != nil || len(list) == 0 {
			return false, err
		}
		out, found = Account{ID: list[0].ID, Description: list[0].Description}, true
		return false, nil
	})
	return out, found, wrap("identity: find project", err)
}

// CreateProject implements Accounts.
func (s *Session) CreateProject(ctx context.Context, name, domainID, description string) (string, error) {
	p, err := projects.Create(ctx, s.identity, projects.CreateOpts{Name: name, DomainID: domainID, Description: description}).Extract()
	if err != nil {
		return "", wrap("identity: create project", err)
	}
	return p.ID, nil
}

// RolesOn implements Accounts.
func (s *Session) RolesOn(ctx context.Context, userID, projectID string) ([]string, error) {
	var ids []string
	err := roles.ListAssignments(s.identity, roles.ListAssignmentsOpts{UserID: userID, ScopeProjectID: projectID}).
		EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
			list, err := roles.ExtractRoleAssignments(p)
			if err != nil {
				return false, err
			}
			for _, a := range list {
				ids = append(ids, a.Role.ID)
			}
			return true, nil
		})
	return ids, wrap("identity: list role assignments", err)
}
