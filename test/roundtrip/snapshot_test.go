package roundtrip_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
)

// snapshot renders every child the subject controls, keyed by kind and
// name, without what the apiserver or other controllers add: the status,
// the bookkeeping metadata, a Service's addresses, a Job's generated
// selector, a Deployment's revision.
func snapshot(t *testing.T, c client.Client, s subject) map[string]string {
	t.Helper()
	owner, err := get(t.Context(), c, s)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, gvk := range s.children {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(t.Context(), list, client.InNamespace(s.key.Namespace)); err != nil {
			t.Fatalf("listing %s: %v", gvk.Kind, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			if !controlledBy(item, owner) {
				continue
			}
			raw, err := json.Marshal(normalize(item))
			if err != nil {
				t.Fatal(err)
			}
			out[gvk.Kind+"/"+item.GetName()] = string(raw)
		}
	}
	return out
}

// controlledBy tells whether the owner controls u: by a controller
// reference, or by Anvil's ownership labels, which children a kind may
// also place on another cluster carry instead.
func controlledBy(u, owner *unstructured.Unstructured) bool {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == owner.GetUID() {
			return true
		}
	}
	l := u.GetLabels()
	return l[childwriter.OwnerKindLabel] == owner.GetKind() && l[childwriter.OwnerNameLabel] == owner.GetName() &&
		l[childwriter.OwnerNamespaceLabel] == owner.GetNamespace()
}

// normalize keeps what the subject's pass decides.
func normalize(u *unstructured.Unstructured) map[string]any {
	labels, annotations := u.GetLabels(), u.GetAnnotations()
	delete(annotations, "deployment.kubernetes.io/revision")
	delete(annotations, "deprecated.daemonset.template.generation")
	obj := map[string]any{"labels": labels, "annotations": annotations}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			obj[k] = v
		}
	}
	switch u.GetKind() {
	case "Service":
		for _, f := range []string{"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"} {
			unstructured.RemoveNestedField(obj, "spec", f)
		}
	case "Job":
		dropGenerated(labels)
		unstructured.RemoveNestedField(obj, "spec", "selector")
		tmpl, _, _ := unstructured.NestedStringMap(obj, "spec", "template", "metadata", "labels")
		dropGenerated(tmpl)
		_ = unstructured.SetNestedStringMap(obj, tmpl, "spec", "template", "metadata", "labels")
	}
	return obj
}

// dropGenerated removes the labels the Job controller adds, which carry
// the Job's UID.
func dropGenerated(labels map[string]string) {
	for k := range labels {
		if strings.HasSuffix(k, "controller-uid") || strings.HasSuffix(k, "job-name") {
			delete(labels, k)
		}
	}
}
