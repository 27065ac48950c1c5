package roundtrip_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// roundTrip is one optional field: a merge patch that moves it away from
// the base object (setting what the base leaves out, or removing what it
// sets) and one that moves it back. A null in either removes the field.
type roundTrip struct {
	change, back string
	// field is the dotted path the patches change, when the case is named
	// otherwise (the removal of one entry of a list or map).
	field string
	// beyond says why the removal of an entry acts beyond the children
	// compared here. Without it, such a removal that leaves the children
	// as they were fails: an entry that reached the children must leave
	// them when it goes.
	beyond string
}

// at builds a merge patch that sets the dotted path under spec to the
// JSON value.
func at(path, value string) string {
	parts := strings.Split(path, ".")
	out := value
	for i := len(parts) - 1; i >= 0; i-- {
		out = `{"` + parts[i] + `":` + out + `}`
	}
	return `{"spec":` + out + `}`
}

// away sets a field to a value other than its default and removes it
// again.
func away(path, value string) roundTrip {
	return roundTrip{change: at(path, value), back: at(path, "null")}
}

// drop removes a field the base sets and puts its value back.
func drop(path, value string) roundTrip {
	return roundTrip{change: at(path, "null"), back: at(path, value)}
}

// optionalFields lists every optional property under spec in a CRD file of
// config/crd/bases, at every depth of nested objects, as dotted paths.
// Properties of list items and map values are not walked: removing an
// entry is a case of its own (collectionFields).
func optionalFields(t *testing.T, file string) []string {
	t.Helper()
	return walkSpec(t, file, func(_ apiextensionsv1.JSONSchemaProps, required bool) bool { return !required })
}

// collectionFields lists every list and map under spec, required or not:
// removing one entry of each must be a way back too.
func collectionFields(t *testing.T, file string) []string {
	t.Helper()
	return walkSpec(t, file, func(prop apiextensionsv1.JSONSchemaProps, _ bool) bool {
		return prop.Type == "array" || (prop.Type == "object" && prop.AdditionalProperties != nil)
	})
}

// walkSpec lists the properties under spec that keep accepts, at every
// depth of nested objects, as sorted dotted paths.
func walkSpec(t *testing.T, file string, keep func(prop apiextensionsv1.JSONSchemaProps, required bool) bool) []string {
	t.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/" + file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(node apiextensionsv1.JSONSchemaProps, path string)
	walk = func(node apiextensionsv1.JSONSchemaProps, path string) {
		for name, prop := range node.Properties {
			p := path + "." + name
			if keep(prop, slices.Contains(node.Required, name)) {
				out = append(out, p)
			}
			if prop.Type == "object" && len(prop.Properties) > 0 {
				walk(prop, p)
			}
		}
	}
	walk(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"], "spec")
	slices.Sort(out)
	return out
}

// checkCoverage fails for an optional field with neither a round trip nor
// a reason to have none, and for a case that names no optional field.
func checkCoverage(t *testing.T, fields []string, cases map[string]roundTrip, reasons map[string]string) {
	t.Helper()
	for _, f := range fields {
		_, covered := cases[f]
		_, why := reasons[f]
		switch {
		case covered && why:
			t.Errorf("%s has a round trip and a reason to have none", f)
		case !covered && !why:
			t.Errorf("%s is optional and has no round trip nor a reason to have none", f)
		}
	}
	for _, f := range slices.Concat(slices.Collect(maps.Keys(cases)), slices.Collect(maps.Keys(reasons))) {
		if !slices.Contains(fields, f) {
			t.Errorf("%s names no optional field of the schema", f)
		}
	}
}

// checkEntryCoverage is checkCoverage for the entry round trips of a CRD
// file, which name their field in roundTrip.field.
func checkEntryCoverage(t *testing.T, file string, cases map[string]roundTrip, reasons map[string]string) {
	t.Helper()
	byField := map[string]roundTrip{}
	for _, rt := range cases {
		byField[rt.field] = rt
	}
	checkCoverage(t, collectionFields(t, file), byField, reasons)
}

// v1Kind names a kind of a group at v1, where every child kind compared
// here lives.
func v1Kind(group, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}
}

// subject is the object the round trips patch, and what its pass renders.
type subject struct {
	gvk schema.GroupVersionKind
	key client.ObjectKey
	// children are the kinds of the subject's children in its namespace;
	// every object of them that the subject controls is compared.
	children []schema.GroupVersionKind
	// ready is the condition every pass of the subject reports on, and
	// settled the one that is True once its children are in place; for a
	// kind whose Ready needs OpenStack they differ.
	ready, settled string
}

// runRoundTrips runs every case against a settled subject, in path order:
// change, a pass on the new generation, back, and then the subject's
// children must equal those of the base, ready must be True again, and
// no child may have been stored more than once each way.
func runRoundTrips(t *testing.T, c client.Client, s subject, cases map[string]roundTrip) {
	t.Helper()
	waitSettled(t, c, s)
	base := snapshot(t, c, s)
	for _, path := range slices.Sorted(maps.Keys(cases)) {
		rt := cases[path]
		t.Run(path, func(t *testing.T) {
			if rt.field != "" {
				path = rt.field
			}
			before := fieldAt(t, c, s, path)
			mark := auditMark(t)
			mergePatch(t, c, s, rt.change)
			if fieldAt(t, c, s, path) == before {
				t.Fatalf("the change left %s as it was (%s): the patch names no field the schema keeps", path, before)
			}
			waitPassOnGeneration(t, c, s)
			// Some fields act beyond the children (OpenStack, status);
			// the log says which, for whoever reads a passing run.
			if maps.Equal(snapshot(t, c, s), base) {
				if rt.field != "" && rt.beyond == "" {
					t.Errorf("removing an entry of %s left the children as they were", path)
				} else {
					t.Logf("the change of %s left the children as they were", path)
				}
			}
			mergePatch(t, c, s, rt.back)
			// A nested object with defaults reads differently removed
			// than emptied; the children decide whether that matters.
			if got := fieldAt(t, c, s, path); got != before {
				t.Logf("the way back left %s at %s, not %s", path, got, before)
			}
			waitSettled(t, c, s)
			waitChildren(t, c, s, base)
			checkWrittenOnceEachWay(t, c, s, mark)
		})
	}
}

// mergePatch sends a JSON merge patch, as kubectl patch --type merge does.
func mergePatch(t *testing.T, c client.Client, s subject, patch string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(s.gvk)
	u.SetNamespace(s.key.Namespace)
	u.SetName(s.key.Name)
	if err := c.Patch(t.Context(), u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching %s with %s: %v", s.key.Name, patch, err)
	}
}

// get reads the subject.
func get(ctx context.Context, c client.Client, s subject) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(s.gvk)
	return u, c.Get(ctx, s.key, u)
}

// fieldAt renders the subject's value at a dotted path as JSON, "absent"
// when it is not there.
func fieldAt(t *testing.T, c client.Client, s subject, path string) string {
	t.Helper()
	u, err := get(t.Context(), c, s)
	if err != nil {
		t.Fatal(err)
	}
	v, found, err := unstructured.NestedFieldNoCopy(u.Object, strings.Split(path, ".")...)
	if err != nil || !found || emptyObject(v) {
		return "absent"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// emptyObject tells whether v is an object holding nothing but empty
// objects: a client that sends a struct's zero value writes one, and it
// means the same as no field.
func emptyObject(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, inner := range m {
		if !emptyObject(inner) {
			return false
		}
	}
	return true
}

// conditionOf returns the subject's generation and its condition of the
// type.
func conditionOf(ctx context.Context, c client.Client, s subject, condType string) (int64, *metav1.Condition, error) {
	u, err := get(ctx, c, s)
	if err != nil {
		return 0, nil, err
	}
	var status struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := u.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &status)
	}
	return u.GetGeneration(), apimeta.FindStatusCondition(status.Conditions, condType), nil
}

// waitPassOnGeneration waits until the subject reports on its current
// generation, whatever the outcome: a change may leave it waiting for an
// input, which is fine; what matters is the way back.
func waitPassOnGeneration(t *testing.T, c client.Client, s subject) {
	t.Helper()
	var seen string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		gen, cond, err := conditionOf(ctx, c, s, s.ready)
		if err != nil || cond == nil {
			return false, nil //nolint:nilerr // poll again
		}
		seen = fmt.Sprintf("%s=%s %s on generation %d of %d", s.ready, cond.Status, cond.Reason, cond.ObservedGeneration, gen)
		return cond.ObservedGeneration == gen, nil
	})
	if err != nil {
		t.Fatalf("%s: no pass on its generation: %s", s.key.Name, seen)
	}
}

// waitSettled waits until the subject's settled condition is True on its
// current generation.
func waitSettled(t *testing.T, c client.Client, s subject) {
	t.Helper()
	var seen string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		gen, cond, err := conditionOf(ctx, c, s, s.settled)
		if err != nil || cond == nil {
			return false, nil //nolint:nilerr // poll again
		}
		seen = fmt.Sprintf("%s=%s %s on generation %d of %d: %s", s.settled, cond.Status, cond.Reason, cond.ObservedGeneration, gen, cond.Message)
		return cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == gen, nil
	})
	if err != nil {
		t.Fatalf("%s did not settle: %s", s.key.Name, seen)
	}
}

// waitChildren waits until the subject's children equal want, and names
// the ones that differ when they never do.
func waitChildren(t *testing.T, c client.Client, s subject, want map[string]string) {
	t.Helper()
	var got map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		got = snapshot(t, c, s)
		return maps.Equal(got, want), nil
	})
	if err != nil {
		var diff []string
		for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
			for k := range got {
				yield(k, true)
			}
			for k := range want {
				yield(k, true)
			}
		}))) {
			if got[k] != want[k] {
				diff = append(diff, fmt.Sprintf("%s:\n  before: %s\n  now:    %s", k, orAbsent(want[k]), orAbsent(got[k])))
			}
		}
		t.Fatalf("the children did not come back:\n%s", strings.Join(diff, "\n"))
	}
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
