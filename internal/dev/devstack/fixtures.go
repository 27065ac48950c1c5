package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
)

// The objects the hypervisor operator's start and smoke test look for, as
// the guide's step 7 names them. In production K-ORC creates them from
// deploy/kind/hypervisor-operator-fixtures; the devstack runs no K-ORC.
const (
	// FixtureDomain is the domain hvo's second login is scoped to.
	FixtureDomain = "cc3test"
	// FixtureProject is the project in FixtureDomain hvo logs in to.
	FixtureProject = "test"
	// FixtureRole is the role hvo's user holds on FixtureProject.
	FixtureRole = "admin"
	// FixtureUserDomain is the domain of hvo's user.
	FixtureUserDomain = "Default"
	// FixtureSmokeTest names the smoke test's flavor, network and subnet.
	FixtureSmokeTest = "hvo-smoke-test"
	// FixtureImage is the image the smoke test and the failed-builds
	// section boot.
	FixtureImage = "cirros-kvm"
	// FixtureFlavorID is the flavor ID the smoke test and the failed-builds
	// section boot.
	FixtureFlavorID = "1"
	// FixtureLabNetwork is the network the failed-builds section boots on.
	FixtureLabNetwork = "lab-net"
	// FixtureVolumeType is the smoke test's volume type; the devstack has
	// no Cinder, so it is never created.
	FixtureVolumeType = "premium"
)

// fixtureKind says which API an object lives in and how it is found.
type fixtureKind string

const (
	kindDomain     fixtureKind = "domain"
	kindProject    fixtureKind = "project"
	kindRole       fixtureKind = "role"
	kindUser       fixtureKind = "user"
	kindAssignment fixtureKind = "role assignment"
	kindFlavor     fixtureKind = "flavor"
	kindImage      fixtureKind = "image"
	kindNetwork    fixtureKind = "network"
	kindSubnet     fixtureKind = "subnet"
	kindVolumeType fixtureKind = "volume type"
)

// flavorSpec is what a created flavor gets. An empty ID lets Nova choose.
type flavorSpec struct {
	ID    string
	Name  string
	RAM   int
	VCPUs int
	Disk  int
}

// fixture is one object of the plan. Its key, kind plus name, is how later
// fixtures name it in needs, and how the runner hands them its ID.
type fixture struct {
	kind fixtureKind
	name string
	// needs are the keys of earlier fixtures whose IDs this one needs, in
	// the order its kind documents in fixtureCloud.
	needs []string
	// domain is the domain name a user is looked up in.
	domain string
	// flavor is set for flavors; a flavor with an ID is found by it, one
	// without by name.
	flavor *flavorSpec
	// cidr is a subnet's range.
	cidr string
	// missing, when set, means the command never creates the object: a
	// missing one stops the run with this explanation.
	missing string
	// skip, when set, means the object is not looked for at all, for this
	// reason.
	skip string
}

func (f fixture) key() string { return string(f.kind) + " " + f.name }

// fixtureCloud finds and creates fixtures. find returns "" for a missing
// object. The IDs of a fixture's needs arrive in ids under their keys.
type fixtureCloud interface {
	find(ctx context.Context, f fixture, ids map[string]string) (string, error)
	create(ctx context.Context, f fixture, ids map[string]string) (string, error)
}

// FixturesOptions configure Stack.Fixtures.
type FixturesOptions struct {
	// SkipRoleAssignment leaves out hvo's user and its role on the project,
	// for a run before the ControlPlane has created the user.
	SkipRoleAssignment bool
}

// fixturePlan lists the fixtures in the order they are ensured: every
// fixture after those it needs, and hvo's user last, so that a run before
// step 2 still creates everything else before it stops.
func fixturePlan(opts FixturesOptions) []fixture {
	domain := fixture{kind: kindDomain, name: FixtureDomain}
	project := fixture{kind: kindProject, name: FixtureProject, needs: []string{domain.key()}}
	role := fixture{kind: kindRole, name: FixtureRole,
		missing: "Keystone has no role " + FixtureRole + "; keystone-manage bootstrap creates it"}
	smokeNet := fixture{kind: kindNetwork, name: FixtureSmokeTest}
	labNet := fixture{kind: kindNetwork, name: FixtureLabNetwork}
	plan := []fixture{
		domain, project, role,
		// ID 1 is the classic m1.tiny; both flavors fit an image of any
		// size the stub reports, and a non-zero disk keeps Nova's
		// zero-disk boot policy out of the way.
		{kind: kindFlavor, name: FixtureFlavorID, flavor: &flavorSpec{ID: FixtureFlavorID, Name: "m1.tiny", RAM: 512, VCPUs: 1, Disk: 1}},
		{kind: kindFlavor, name: FixtureSmokeTest, flavor: &flavorSpec{Name: FixtureSmokeTest, RAM: 128, VCPUs: 1, Disk: 1}},
		{kind: kindImage, name: FixtureImage},
		smokeNet,
		{kind: kindSubnet, name: FixtureSmokeTest, needs: []string{smokeNet.key()}, cidr: "10.240.1.0/24"},
		labNet,
		{kind: kindSubnet, name: FixtureLabNetwork, needs: []string{labNet.key()}, cidr: "10.240.2.0/24"},
		{kind: kindVolumeType, name: FixtureVolumeType, skip: "the devstack runs no Cinder"},
	}
	if opts.SkipRoleAssignment {
		return append(plan, fixture{kind: kindAssignment, name: assignmentName(),
			skip: "--skip-role-assignment; run again without it after step 2 of the guide"})
	}
	user := fixture{kind: kindUser, name: c5c3v1alpha1.HypervisorOperatorUser, domain: FixtureUserDomain,
		missing: fmt.Sprintf("the user %s (domain %s) is not there yet: the ControlPlane creates it in step 2 of the guide; "+
			"run this command again after step 2, or pass --skip-role-assignment", c5c3v1alpha1.HypervisorOperatorUser, FixtureUserDomain)}
	return append(plan, user, fixture{kind: kindAssignment, name: assignmentName(),
		needs: []string{role.key(), user.key(), project.key()}})
}

func assignmentName() string {
	return fmt.Sprintf("%s for %s@%s on %s@%s", FixtureRole, c5c3v1alpha1.HypervisorOperatorUser, FixtureUserDomain, FixtureProject, FixtureDomain)
}

// Outcomes of one fixture, as the report prints them.
const (
	outcomeCreated = "created"
	outcomeKept    = "kept"
	outcomeSkipped = "skipped"
	outcomeMissing = "missing"
)

// errFixtureMissing marks a run that stopped at an object it must not
// create.
var errFixtureMissing = errors.New("a fixture's prerequisite is missing")

// ensureFixtures walks the plan: an object that exists is kept as it is,
// whatever its attributes, and a missing one is created. It prints one row
// per fixture and stops at the first error.
func ensureFixtures(ctx context.Context, cloud fixtureCloud, plan []fixture, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	row := func(outcome string, f fixture, detail string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", outcome, f.kind, f.name, detail)
	}
	ids := map[string]string{}
	for _, f := range plan {
		if f.skip != "" {
			row(outcomeSkipped, f, f.skip)
			continue
		}
		id, err := cloud.find(ctx, f, ids)
		if err != nil {
			return fmt.Errorf("looking up %s %s: %w", f.kind, f.name, err)
		}
		outcome := outcomeKept
		if id == "" && f.missing != "" {
			row(outcomeMissing, f, "")
			_ = tw.Flush()
			return fmt.Errorf("%w: %s", errFixtureMissing, f.missing)
		}
		if id == "" {
			if id, err = cloud.create(ctx, f, ids); err != nil {
				return fmt.Errorf("creating %s %s: %w", f.kind, f.name, err)
			}
			outcome = outcomeCreated
		}
		ids[f.key()] = id
		row(outcome, f, "id "+id)
	}
	return nil
}

// Fixtures creates, through the local Keystone, Nova, Neutron and the
// Glance stub, the objects K-ORC creates for the hypervisor operator in
// production, and the image, flavor and network the guide's failed-builds
// section boots with. Objects that exist are kept. It needs the running
// OpenStack services and the sample ControlPlane's Nova in the catalog.
func (s *Stack) Fixtures(ctx context.Context, opts FixturesOptions) error {
	cloud, err := newGophercloudFixtures(ctx, s.OpenStackDir())
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "Ensuring the hypervisor operator's fixtures in the OpenStack of %s\n", s.OpenStackDir())
	return ensureFixtures(ctx, cloud, fixturePlan(opts), s.out)
}
