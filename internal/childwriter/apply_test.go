package childwriter

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestSettled(t *testing.T) {
	applied := func(fields string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(fields)}}
	}
	desired := map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "1"}},
		"data":     map[string]any{"k": "dg=="},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "c", "image": "i", "ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}}},
		}, "volumes": []any{map[string]any{"name": "v", "emptyDir": map[string]any{}}}},
	}
	ownedNow := `{"f:metadata":{"f:labels":{"f:a":{}}},"f:data":{".":{},"f:k":{}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{},` +
		`"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}},"f:volumes":{"k:{\"name\":\"v\"}":{"f:emptyDir":{}}}}}`
	live := func(mutate func(m map[string]any)) map[string]any {
		m := map[string]any{
			"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "1", "other": "kept"}, "resourceVersion": "7"},
			"data":     map[string]any{"k": "dg=="},
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "c", "image": "i", "terminationMessagePath": "/dev/termination-log",
					"ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}}},
			}, "volumes": []any{map[string]any{"name": "v"}}},
		}
		if mutate != nil {
			mutate(m)
		}
		return m
	}
	tests := []struct {
		name    string
		live    map[string]any
		managed []metav1.ManagedFieldsEntry
		want    bool
	}{
		{name: "defaults and others' labels do not count", live: live(nil), managed: applied(ownedNow), want: true},
		{name: "a changed value", live: live(func(m map[string]any) { m["data"].(map[string]any)["k"] = "eA==" }), managed: applied(ownedNow)},
		{name: "a value missing", live: live(func(m map[string]any) { delete(m["metadata"].(map[string]any)["labels"].(map[string]any), "a") }), managed: applied(ownedNow)},
		{name: "a list element more", live: live(func(m map[string]any) {
			spec := m["spec"].(map[string]any)
			spec["containers"] = append(spec["containers"].([]any), map[string]any{"name": "d"})
		}), managed: applied(ownedNow)},
		{name: "never applied by Anvil", live: live(nil),
			managed: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(ownedNow)}}},
		{name: "only Updated by Anvil before", live: live(nil),
			managed: []metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(ownedNow)}}},
		{name: "a data key Anvil applied and no longer renders", live: live(func(m map[string]any) { m["data"].(map[string]any)["gone"] = "eA==" }),
			managed: applied(`{"f:data":{"f:k":{},"f:gone":{}}}`)},
		{name: "a list element Anvil applied and no longer renders", live: live(nil),
			managed: applied(`{"f:spec":{"f:containers":{"k:{\"name\":\"old\"}":{".":{}}}}}`)},
		{name: "a set element by value", live: live(nil), managed: applied(`{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{}}}}}}`), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Settled(desired, tt.live, tt.managed); got != tt.want {
				t.Errorf("Settled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	obj := map[string]any{"finalizers": []any{"a", "b"}, "args": []any{"x"}}
	tests := []struct {
		key  string
		in   any
		want bool
	}{
		{key: "f:finalizers", in: obj, want: true},
		{key: "f:missing", in: obj},
		{key: `v:"b"`, in: obj["finalizers"], want: true},
		{key: `v:"c"`, in: obj["finalizers"]},
		{key: "i:0", in: obj["args"], want: true},
		{key: "i:1", in: obj["args"]},
		{key: "bogus", in: obj},
	}
	for _, tt := range tests {
		if _, got := lookup(tt.key, tt.in); got != tt.want {
			t.Errorf("lookup(%s) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestApplyConfigurationDropsServerFields(t *testing.T) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "7", UID: "u", Generation: 3}}
	got, err := applyConfiguration(obj)
	if err != nil {
		t.Fatal(err)
	}
	meta := got["metadata"].(map[string]any)
	for _, k := range []string{"resourceVersion", "uid", "generation", "creationTimestamp"} {
		if _, ok := meta[k]; ok {
			t.Errorf("metadata.%s is still in the apply configuration", k)
		}
	}
	if meta["name"] != "x" {
		t.Errorf("name = %v", meta["name"])
	}
}

func TestSettledObjectIgnoresTheEmptyTypeOfATypedRead(t *testing.T) {
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: map[string]string{"a": "1"}},
		Immutable: ptr.To(true), Data: map[string]string{"k": "v"}}
	desired, err := applyConfiguration(want)
	if err != nil {
		t.Fatal(err)
	}
	desired["apiVersion"], desired["kind"] = "v1", "ConfigMap"
	live := want.DeepCopy()
	live.ResourceVersion, live.UID = "9", "u"
	live.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:k":{}},"f:immutable":{},"f:metadata":{"f:labels":{"f:a":{}}}}`)}}
	settled, err := settledObject(desired, live)
	if err != nil || !settled {
		t.Errorf("settled = %v, %v; want a live copy of the desired object settled", settled, err)
	}
	live.Data["k"] = "changed"
	if settled, _ := settledObject(desired, live); settled {
		t.Error("a changed value reads as settled")
	}
}

// A registration scoped to namespaces gets no write, deletion or sweep
// outside them: the refusal comes before any call, so a nil client is
// never touched.
func TestChildrenStayInTheRegistrationsNamespaces(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &Writer{Scheme: scheme, Cluster: "compute-a", Namespaces: []string{"openstack"}}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "team-x"}}
	obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-x"}}
	err := w.Apply(context.Background(), owner, obj)
	var refused *NamespaceNotAllowedError
	if !errors.As(err, &refused) || refused.Cluster != "compute-a" || refused.Namespace != "team-x" {
		t.Errorf("Apply outside the scope = %v, want a NamespaceNotAllowedError", err)
	}
	if deleted, err := w.DeleteIf(context.Background(), obj, func(client.Object) bool { return true }); deleted || err != nil {
		t.Errorf("DeleteIf outside the scope = %v, %v, want nothing done", deleted, err)
	}
	err = w.Sweep(context.Background(), owner, []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}})
	if !errors.As(err, &refused) || refused.Namespace != "team-x" {
		t.Errorf("Sweep outside the scope = %v, want a NamespaceNotAllowedError", err)
	}
	if !(&Writer{}).Allows("anything") || !(&Writer{Namespaces: []string{"openstack"}}).Allows("openstack") {
		t.Error("a cluster-wide registration, or a listed namespace, is refused")
	}
}

func TestAppliedHash(t *testing.T) {
	config := func(data string, annotations map[string]any) map[string]any {
		meta := map[string]any{"name": "m", "namespace": "ns"}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": map[string]any{"k": data}}
	}
	hash := func(c map[string]any) string {
		h, err := appliedHash(c)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hash(config("a", nil))
	cases := []struct {
		name   string
		config map[string]any
		same   bool
	}{
		{"the same configuration", config("a", nil), true},
		{"its own annotation is left out", config("a", map[string]any{AppliedHashAnnotation: "old"}), true},
		{"other data", config("b", nil), false},
		{"another annotation", config("a", map[string]any{"note": "x"}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := hash(tc.config) == base; got != tc.same {
				t.Errorf("equal hashes = %v, want %v", got, tc.same)
			}
		})
	}
	// annotateAppliedHash records the hash of what it was given.
	c := config("a", nil)
	returned, err := annotateAppliedHash(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := c["metadata"].(map[string]any)["annotations"].(map[string]any)[AppliedHashAnnotation]; got != base || returned != base {
		t.Errorf("annotation %v, returned %s, want %s", got, returned, base)
	}
}

// A key dropped from an atomic map (a pod's nodeSelector) leaves a live
// object that holds every value desired sets, and the apiserver records
// the map as one owned leaf that desired still has. Only the digest of
// the configuration tells the child apart from a settled one.
func TestSettledSeesAKeyDroppedFromAnAtomicMap(t *testing.T) {
	gvk := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	daemonSet := func(selector map[string]string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns"},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Image: "i"}},
			}}},
		}
	}
	two := map[string]string{"a": "1", "b": "2"}
	applied, _, err := desiredConfiguration(daemonSet(two), gvk)
	if err != nil {
		t.Fatal(err)
	}
	owned := []metav1.ManagedFieldsEntry{{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:` + AppliedHashAnnotation + `":{}}},` +
			`"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}},"f:nodeSelector":{}}}}}`)}}
	cases := []struct {
		name     string
		selector map[string]string
		settled  bool
	}{
		{"the same selector", two, true},
		{"one key dropped", map[string]string{"a": "1"}, false},
		{"every key dropped", nil, false},
		{"a key added", map[string]string{"a": "1", "b": "2", "c": "3"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired, _, err := desiredConfiguration(daemonSet(tc.selector), gvk)
			if err != nil {
				t.Fatal(err)
			}
			if got := Settled(desired, applied, owned); got != tc.settled {
				t.Errorf("Settled = %v, want %v", got, tc.settled)
			}
		})
	}
}
