package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// object is one stored object as the census sees it: where it lives and
// its metadata, never its data.
type object struct {
	cluster  string
	resource schema.GroupVersionResource
	meta     metav1.PartialObjectMetadata
}

// key names an object in a failure message and in the foreign snapshot.
func (o object) key() string {
	return objectKey(o.cluster, o.resource.Resource, o.meta.Namespace, o.meta.Name)
}

func objectKey(cluster, resource, namespace, name string) string {
	return fmt.Sprintf("%s %s %s/%s", cluster, resource, namespace, name)
}

// volatileResources are written all the time by others than Anvil (the
// kubelets, the controller manager, the apiserver itself) or are the
// churn's own inputs; they are left out of the foreign snapshot. Events
// are left out of every census but the leak census, which reads them
// through the typed API.
var volatileResources = []string{
	"events", "nodes", "pods", "leases", "endpoints", "endpointslices",
	"replicasets", "controllerrevisions", "persistentvolumes", "persistentvolumeclaims",
	"certificatesigningrequests", "apiservices", "flowschemas", "prioritylevelconfigurations",
	"clusterroles", "clusterrolebindings", "customresourcedefinitions",
}

// listAll lists the metadata of every object of every listable resource on
// a cluster, events aside.
func listAll(t *testing.T, c *testenv.Cluster) []object {
	t.Helper()
	// Listing every resource meets the deprecated ones, whose warnings
	// say nothing about Anvil.
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatalf("discovering the resources of %s: %v", c.Name, err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []object
	for _, l := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list"}}, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if r.Name == "events" || r.Name == "componentstatuses" {
				continue
			}
			gvr := gv.WithResource(r.Name)
			got, err := mc.Resource(gvr).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s on %s: %v", gvr, c.Name, err)
			}
			for _, m := range got.Items {
				out = append(out, object{cluster: c.Name, resource: gvr, meta: m})
			}
		}
	}
	return out
}

// anvilGroup tells whether an API group is one of Anvil's.
func anvilGroup(group string) bool { return strings.HasSuffix(group, "c5c3.io") }

// anvilOwned tells whether Anvil claims an object: one of its kinds, a
// remote child with the ownership labels, or a local child with a
// controller reference to one of its kinds.
func anvilOwned(o object) bool {
	if anvilGroup(o.resource.Group) {
		return true
	}
	if o.meta.Labels[childwriter.OwnerKindLabel] != "" {
		return true
	}
	for _, ref := range o.meta.OwnerReferences {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && anvilGroup(gv.Group) {
			return true
		}
	}
	return false
}

// ownerOf returns the owner an Anvil child names, by its ownership labels
// or its controller reference, as an object to look up on the management
// cluster; ok is false for an object that names none.
func ownerOf(t *testing.T, o object) (owner *metav1.PartialObjectMetadata, ok bool) {
	t.Helper()
	if kind := o.meta.Labels[childwriter.OwnerKindLabel]; kind != "" {
		gvk, found := anvilKind(kind)
		if !found {
			t.Errorf("%s names an owner of kind %s, which is not Anvil's", o.key(), kind)
			return nil, false
		}
		owner = &metav1.PartialObjectMetadata{}
		owner.SetGroupVersionKind(gvk)
		owner.Namespace, owner.Name = o.meta.Labels[childwriter.OwnerNamespaceLabel], o.meta.Labels[childwriter.OwnerNameLabel]
		return owner, true
	}
	for _, ref := range o.meta.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || !anvilGroup(gv.Group) {
			continue
		}
		owner = &metav1.PartialObjectMetadata{}
		owner.SetGroupVersionKind(gv.WithKind(ref.Kind))
		owner.Namespace, owner.Name = o.meta.Namespace, ref.Name
		return owner, true
	}
	return nil, false
}

// anvilKind finds an Anvil kind by name in the environment's scheme.
func anvilKind(kind string) (schema.GroupVersionKind, bool) {
	for gvk := range env.Scheme.AllKnownTypes() {
		if gvk.Kind == kind && anvilGroup(gvk.Group) {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// orphans returns, on every cluster, each object that names an Anvil owner
// which does not exist or is being deleted: a child left behind.
func orphans(t *testing.T, e *testenv.Environment) []string {
	t.Helper()
	var out []string
	for _, c := range allClusters(e) {
		for _, o := range listAll(t, c) {
			owner, ok := ownerOf(t, o)
			if !ok {
				continue
			}
			err := e.Management.Client.Get(t.Context(), client.ObjectKeyFromObject(owner), owner)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%s: owner %s %s/%s: %v", o.key(), owner.Kind, owner.Namespace, owner.Name, err))
			case owner.DeletionTimestamp != nil:
				out = append(out, fmt.Sprintf("%s: owner %s %s/%s is being deleted", o.key(), owner.Kind, owner.Namespace, owner.Name))
			}
		}
	}
	return out
}

func allClusters(e *testenv.Environment) []*testenv.Cluster {
	return append([]*testenv.Cluster{e.Management}, e.Compute...)
}

// foreignSnapshot is every object Anvil does not own, by key, with the
// fingerprint it had before the chaos began.
type foreignSnapshot map[string]string

// fingerprint is what a write by anyone but the object's own controller
// changes: the UID (a replacement), the metadata Anvil could stamp (labels,
// annotations, finalizers, owners) and the content. An object with a
// generation counts content by it, so that the status its controller
// writes (a DaemonSet's, by the controller manager) is no change; one
// without, such as a Secret, by its resourceVersion.
func fingerprint(m metav1.PartialObjectMetadata) string {
	version := m.ResourceVersion
	if m.Generation > 0 {
		version = fmt.Sprintf("generation %d", m.Generation)
	}
	raw, _ := json.Marshal([]any{m.Labels, m.Annotations, m.Finalizers, m.OwnerReferences})
	return fmt.Sprintf("%s@%s %s", m.UID, version, raw)
}

// snapshotForeign records the objects of every cluster that Anvil does not
// own, except the volatile kinds.
func snapshotForeign(t *testing.T, e *testenv.Environment) foreignSnapshot {
	t.Helper()
	snap := foreignSnapshot{}
	for _, c := range allClusters(e) {
		for _, o := range listAll(t, c) {
			if anvilOwned(o) || slices.Contains(volatileResources, o.resource.Resource) {
				continue
			}
			snap[o.key()] = fingerprint(o.meta)
		}
	}
	return snap
}

// compareForeign reports every snapshotted object that is gone, replaced or
// changed.
func compareForeign(t *testing.T, e *testenv.Environment, before foreignSnapshot) []string {
	t.Helper()
	now := map[string]string{}
	for _, c := range allClusters(e) {
		for _, o := range listAll(t, c) {
			now[o.key()] = fingerprint(o.meta)
		}
	}
	var out []string
	for k, v := range before {
		switch got, ok := now[k]; {
		case !ok:
			out = append(out, k+": deleted")
		case got != v:
			out = append(out, k+": changed")
		}
	}
	slices.Sort(out)
	return out
}

// auditMarks records where each cluster's audit log ends.
func auditMarks(t *testing.T, e *testenv.Environment) map[string]int64 {
	t.Helper()
	marks := map[string]int64{}
	for _, c := range allClusters(e) {
		m, err := c.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		marks[c.Name] = m
	}
	return marks
}

// operatorWrites returns the write requests the operator sent to each
// cluster since the marks: as operatorUser to the management cluster, as
// the registration's user to compute clusters.
func operatorWrites(t *testing.T, e *testenv.Environment, marks map[string]int64) map[string][]testenv.AuditEvent {
	t.Helper()
	out := map[string][]testenv.AuditEvent{}
	for _, c := range allClusters(e) {
		events, _, err := c.AuditWrites(marks[c.Name])
		if err != nil {
			t.Fatal(err)
		}
		user := testenv.RegistrationUser
		if c == e.Management {
			user = operatorUser
		}
		for _, ev := range events {
			if ev.User == user {
				out[c.Name] = append(out[c.Name], ev)
			}
		}
	}
	return out
}

// foreignTouches returns the operator's writes to objects of the foreign
// snapshot, and to nodes, namespaces and CRDs, which it never owns.
func foreignTouches(writes map[string][]testenv.AuditEvent, before foreignSnapshot) []string {
	var out []string
	for cluster, events := range writes {
		for _, ev := range events {
			_, foreign := before[objectKey(cluster, ev.Resource, ev.Namespace, ev.Name)]
			if foreign || slices.Contains([]string{"nodes", "namespaces", "customresourcedefinitions"}, ev.Resource) {
				out = append(out, cluster+": "+ev.String())
			}
		}
	}
	return out
}

// leakTexts gathers where a credential must never appear: every event
// message on every cluster, the annotations of every object, and the
// status of every object of Anvil's kinds.
func leakTexts(t *testing.T, e *testenv.Environment) []string {
	t.Helper()
	var texts []string
	for _, c := range allClusters(e) {
		texts = append(texts, c.EventMessages(t)...)
		for _, o := range listAll(t, c) {
			for k, v := range o.meta.Annotations {
				texts = append(texts, k+"="+v)
			}
			if anvilGroup(o.resource.Group) && c == e.Management {
				texts = append(texts, anvilStatus(t, o))
			}
		}
	}
	return texts
}

// anvilStatus returns an Anvil object's status as JSON.
func anvilStatus(t *testing.T, o object) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(o.resource.GroupVersion().String())
	// A metadata list names its items PartialObjectMetadata; the kind
	// comes from the resource.
	gvk, ok := anvilKindOfResource(o.resource)
	if !ok {
		return ""
	}
	u.SetKind(gvk.Kind)
	if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: o.meta.Namespace, Name: o.meta.Name}, u); err != nil {
		return ""
	}
	raw, _ := json.Marshal(u.Object["status"])
	return string(raw)
}

// anvilKindOfResource maps an Anvil resource to its kind through the
// management cluster's REST mapper.
func anvilKindOfResource(gvr schema.GroupVersionResource) (schema.GroupVersionKind, bool) {
	gvk, err := env.Management.Client.RESTMapper().KindFor(gvr)
	return gvk, err == nil
}
