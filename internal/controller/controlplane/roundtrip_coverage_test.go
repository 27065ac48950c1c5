package controlplane_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The round trips reach every optional field of the ControlPlane the Nova
// projection can read: walked from the CRD's schema, one level below spec,
// spec.services, spec.services.nova, spec.infrastructure.messaging and the
// services whose endpoints the Nova takes, so a field added there fails
// here until it has a case or a reason not to.
func TestRoundTripsCoverEveryOptionalField(t *testing.T) {
	raw, err := os.ReadFile("../../../config/crd/bases/c5c3.io_controlplanes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	cases := roundTrips("x")
	var fields []string
	for _, parent := range []string{"", "services", "infrastructure", "services.nova", "infrastructure.messaging",
		"services.placement", "services.glance", "services.neutron"} {
		fields = append(fields, optionalBelow(root, parent)...)
	}
	if len(fields) < 20 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	for _, f := range fields {
		_, covered := cases[f]
		if _, why := notProjected[f]; !covered && !why {
			t.Errorf("%s is optional and has no round trip (roundTrips) nor a reason to have none (notProjected)", f)
		}
	}
	for f := range cases {
		if !slices.Contains(fields, f) {
			t.Errorf("the round trip of %s names no optional field of the schema", f)
		}
	}
}

// optionalBelow lists the optional properties of the object at the dotted
// path under spec, as spec.<path>.<name>.
func optionalBelow(spec apiextensionsv1.JSONSchemaProps, path string) []string {
	node, prefix := spec, "spec"
	if path != "" {
		for part := range strings.SplitSeq(path, ".") {
			node = node.Properties[part]
			prefix += "." + part
		}
	}
	var out []string
	for name := range node.Properties {
		if !slices.Contains(node.Required, name) {
			out = append(out, prefix+"."+name)
		}
	}
	slices.Sort(out)
	return out
}
