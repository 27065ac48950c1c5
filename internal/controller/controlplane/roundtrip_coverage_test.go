package controlplane_test

import (
	"maps"
	"os"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The round trips reach every optional field of the ControlPlane at every
// depth of the CRD's schema, so a field added anywhere fails here until it
// has a case or a reason not to.
func TestRoundTripsCoverEveryOptionalField(t *testing.T) {
	raw, err := os.ReadFile("../../../config/crd/bases/c5c3.io_controlplanes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	fields := optionalFields(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], "spec")
	if len(fields) < 60 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	cases, reasons := roundTrips("x"), notRoundTripped()
	for _, f := range fields {
		_, covered := cases[f]
		_, why := reasons[f]
		switch {
		case covered && why:
			t.Errorf("%s has a round trip and a reason to have none", f)
		case !covered && !why:
			t.Errorf("%s is optional and has no round trip (roundTrips) nor a reason to have none (notRoundTripped)", f)
		}
	}
	for _, f := range slices.Concat(slices.Collect(maps.Keys(cases)), slices.Collect(maps.Keys(reasons))) {
		if !slices.Contains(fields, f) {
			t.Errorf("%s names no optional field of the schema", f)
		}
	}
}

// optionalFields lists the optional properties below node at every depth,
// by dotted path; the elements of a list of objects add no path part.
func optionalFields(node apiextensionsv1.JSONSchemaProps, path string) []string {
	var out []string
	for name, prop := range node.Properties {
		p := path + "." + name
		if !slices.Contains(node.Required, name) {
			out = append(out, p)
		}
		if prop.Items != nil && prop.Items.Schema != nil {
			prop = *prop.Items.Schema
		}
		out = append(out, optionalFields(prop, p)...)
	}
	slices.Sort(out)
	return out
}
