package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeFixtures is a cloud that holds objects by key and records what the
// runner created and which IDs it handed to each call.
type fakeFixtures struct {
	existing map[string]string
	failFind string
	created  []string
	// got records, per key, the IDs of its needs the runner passed.
	got map[string][]string
}

func (c *fakeFixtures) needs(f fixture, ids map[string]string) {
	for _, n := range f.needs {
		c.got[f.key()] = append(c.got[f.key()], ids[n])
	}
}

func (c *fakeFixtures) find(_ context.Context, f fixture, ids map[string]string) (string, error) {
	if f.key() == c.failFind {
		return "", errors.New("HTTP 500")
	}
	c.needs(f, ids)
	return c.existing[f.key()], nil
}

func (c *fakeFixtures) create(_ context.Context, f fixture, _ map[string]string) (string, error) {
	c.created = append(c.created, f.key())
	id := fmt.Sprintf("new-%d", len(c.created))
	c.existing[f.key()] = id
	return id, nil
}

func TestFixturePlan(t *testing.T) {
	keys := func(plan []fixture) []string {
		var out []string
		for _, f := range plan {
			out = append(out, f.key())
		}
		return out
	}
	common := []string{
		"domain cc3test", "project test", "role admin", "flavor 1", "flavor hvo-smoke-test", "image cirros-kvm",
		"network hvo-smoke-test", "subnet hvo-smoke-test", "network lab-net", "subnet lab-net", "volume type premium",
	}
	assignment := "role assignment " + assignmentName()
	tests := []struct {
		name string
		opts FixturesOptions
		want []string
	}{
		{"with the role assignment", FixturesOptions{}, append(append([]string{}, common...), "user hypervisor-operator", assignment)},
		{"skipping it", FixturesOptions{SkipRoleAssignment: true}, append(append([]string{}, common...), assignment)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := fixturePlan(tt.opts)
			if got := keys(plan); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("plan =\n%v\nwant\n%v", got, tt.want)
			}
			seen := map[string]bool{}
			for _, f := range plan {
				for _, n := range f.needs {
					if !seen[n] {
						t.Errorf("%s needs %s, which does not come before it", f.key(), n)
					}
				}
				seen[f.key()] = true
				if (f.kind == kindFlavor) != (f.flavor != nil) || (f.kind == kindSubnet) != (f.cidr != "") {
					t.Errorf("%s: flavor spec %v, cidr %q", f.key(), f.flavor, f.cidr)
				}
			}
			last := plan[len(plan)-1]
			if (last.skip != "") != tt.opts.SkipRoleAssignment {
				t.Errorf("role assignment skip = %q", last.skip)
			}
		})
	}
	for _, f := range fixturePlan(FixturesOptions{}) {
		if f.key() == "flavor 1" && (f.flavor.ID != "1" || f.flavor.Disk == 0) {
			t.Errorf("flavor 1 = %+v; it needs ID 1 and a disk", *f.flavor)
		}
		if f.kind == kindVolumeType && f.skip == "" {
			t.Error("the volume type is not skipped, but the devstack has no Cinder")
		}
	}
}

func TestEnsureFixtures(t *testing.T) {
	all := func(except ...string) map[string]string {
		m := map[string]string{}
		for _, f := range fixturePlan(FixturesOptions{}) {
			if f.skip == "" {
				m[f.key()] = "id-" + f.name
			}
		}
		for _, k := range except {
			delete(m, k)
		}
		return m
	}
	assignment := "role assignment " + assignmentName()
	tests := []struct {
		name        string
		opts        FixturesOptions
		existing    map[string]string
		failFind    string
		wantCreated []string
		wantErr     string
		wantMissing bool
		wantRows    []string
	}{{
		name:     "everything there is kept",
		existing: all(),
		wantRows: []string{"kept domain cc3test id id-cc3test", "kept image cirros-kvm", "skipped volume type premium the devstack runs no Cinder",
			"kept role assignment admin for hypervisor-operator@Default on test@cc3test id id-admin"},
	}, {
		name:     "a fresh cloud gets every fixture once the user exists",
		existing: map[string]string{"role admin": "r", "user hypervisor-operator": "u"},
		wantCreated: []string{"domain cc3test", "project test", "flavor 1", "flavor hvo-smoke-test", "image cirros-kvm",
			"network hvo-smoke-test", "subnet hvo-smoke-test", "network lab-net", "subnet lab-net", assignment},
		wantRows: []string{"created domain cc3test id new-1", "kept role admin id r", "created role assignment"},
	}, {
		name:        "a subnet missing on a kept network is created",
		existing:    all("subnet lab-net"),
		wantCreated: []string{"subnet lab-net"},
		wantRows:    []string{"kept network lab-net", "created subnet lab-net id new-1"},
	}, {
		name:        "no user yet: what is missing is made, then the run fails",
		existing:    all("user hypervisor-operator", "role assignment "+assignmentName(), "domain cc3test"),
		wantCreated: []string{"domain cc3test"},
		wantErr:     "run this command again after step 2",
		wantMissing: true,
		wantRows:    []string{"created domain cc3test", "missing user hypervisor-operator"},
	}, {
		name:     "no user, skipped",
		opts:     FixturesOptions{SkipRoleAssignment: true},
		existing: all("user hypervisor-operator", "role assignment "+assignmentName()),
		wantRows: []string{"skipped role assignment admin for hypervisor-operator@Default on test@cc3test --skip-role-assignment"},
	}, {
		name:        "no admin role stops before anything needs it",
		existing:    all("role admin"),
		wantErr:     "keystone-manage bootstrap",
		wantMissing: true,
	}, {
		name:     "a failed lookup stops the run",
		existing: all(),
		failFind: "network lab-net",
		wantErr:  "looking up network lab-net: HTTP 500",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloud := &fakeFixtures{existing: tt.existing, failFind: tt.failFind, got: map[string][]string{}}
			var out bytes.Buffer
			err := ensureFixtures(t.Context(), cloud, fixturePlan(tt.opts), &out)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if strings.Join(cloud.created, "|") != strings.Join(tt.wantCreated, "|") {
				t.Errorf("created %v, want %v", cloud.created, tt.wantCreated)
			}
			if errors.Is(err, errFixtureMissing) != tt.wantMissing {
				t.Errorf("err = %v; only a missing user or role is errFixtureMissing", err)
			}
			// Rows compare with their columns' padding collapsed.
			var rows []string
			for _, line := range strings.Split(out.String(), "\n") {
				rows = append(rows, strings.Join(strings.Fields(line), " "))
			}
			for _, row := range tt.wantRows {
				if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, row) }) {
					t.Errorf("output lacks a row %q:\n%s", row, out.String())
				}
			}
		})
	}
}

// TestEnsureFixturesPassesIDs checks that a fixture's lookup gets the IDs
// of what it needs, whether those were kept or created.
func TestEnsureFixturesPassesIDs(t *testing.T) {
	cloud := &fakeFixtures{existing: map[string]string{"role admin": "r", "user hypervisor-operator": "u", "network lab-net": "net"},
		got: map[string][]string{}}
	if err := ensureFixtures(t.Context(), cloud, fixturePlan(FixturesOptions{}), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"project test":                        "new-1",
		"subnet lab-net":                      "net",
		"role assignment " + assignmentName(): "r u new-2",
	}
	for key, ids := range want {
		if got := strings.Join(cloud.got[key], " "); got != ids {
			t.Errorf("%s got IDs %q, want %q", key, got, ids)
		}
	}
}
