package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestDefinitionsCoverEveryKind(t *testing.T) {
	crds, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ControlPlane":         "c5c3.io",
		"Nova":                 "nova.openstack.c5c3.io",
		"NovaCompute":          "nova.openstack.c5c3.io",
		"OVNCentral":           "ovn.openstack.c5c3.io",
		"OVNChassis":           "ovn.openstack.c5c3.io",
		"NeutronMetadataAgent": "neutron.openstack.c5c3.io",
	}
	if len(crds) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(crds), len(want))
	}
	for _, c := range crds {
		group, ok := want[c.Spec.Names.Kind]
		if !ok || c.Spec.Group != group {
			t.Errorf("unexpected CRD %s (%s)", c.Name, c.Spec.Group)
			continue
		}
		if c.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s is not namespaced", c.Name)
		}
		if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Name != "v1alpha1" {
			t.Fatalf("%s: versions %v", c.Name, c.Spec.Versions)
		}
		v := c.Spec.Versions[0]
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s has no status subresource", c.Name)
		}
		cols := map[string]bool{}
		for _, col := range v.AdditionalPrinterColumns {
			cols[col.Name] = true
		}
		if !cols["Ready"] || !cols["Age"] {
			t.Errorf("%s printer columns = %v", c.Name, v.AdditionalPrinterColumns)
		}
		status := v.Schema.OpenAPIV3Schema.Properties["status"]
		for _, f := range []string{"conditions", "observedGeneration"} {
			if _, ok := status.Properties[f]; !ok {
				t.Errorf("%s status lacks %s", c.Name, f)
			}
		}
	}
}
