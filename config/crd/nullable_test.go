package crd

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// A kind Anvil projects (the ControlPlane's Nova) is applied with server-side
// apply, and an optional struct the projection sends as a value comes back
// null when the fields it carried are removed: the schema must accept null
// there, or removing a setting from the ControlPlane wedges it (issue #34).
// Walked from the Go type, so a field added later is checked too.
func TestProjectedValueStructsAreNullable(t *testing.T) {
	crds, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	var nova *apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		if c.Spec.Names.Kind == "Nova" {
			nova = c
		}
	}
	if nova == nil {
		t.Fatal("no Nova CRD")
	}
	spec := nova.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	checked := checkNullable(t, reflect.TypeFor[novav1alpha1.NovaSpec](), spec, "spec")
	if checked < 7 {
		t.Errorf("checked %d optional value structs, want the console proxy, the endpoints and their five services", checked)
	}
}

// checkNullable walks a struct type beside its schema and fails for every
// optional (omitempty) field of struct kind whose schema is not nullable.
// It returns how many such fields it checked.
func checkNullable(t *testing.T, typ reflect.Type, schema apiextensionsv1.JSONSchemaProps, path string) int {
	t.Helper()
	checked := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		prop, ok := schema.Properties[name]
		if name == "" || name == "-" || !ok {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			// A nil pointer is left out of the apply, so the field is
			// removed, not nulled; its own fields are walked all the same.
			ft = ft.Elem()
		} else if ft.Kind() == reflect.Struct && strings.Contains(opts, "omitempty") {
			checked++
			if !prop.Nullable {
				t.Errorf("%s.%s is an optional struct sent as a value but its schema is not nullable: mark the field +nullable", path, name)
			}
		}
		if ft.Kind() == reflect.Struct && prop.Type == "object" {
			checked += checkNullable(t, ft, prop, path+"."+name)
		}
	}
	return checked
}
