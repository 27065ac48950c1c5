package childwriter

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := ovnv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func chassis(name string) *ovnv1alpha1.OVNChassis {
	return &ovnv1alpha1.OVNChassis{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack", UID: "uid-1"},
		Spec:       ovnv1alpha1.OVNChassisSpec{TargetClusterRef: &anvilmeta.TargetClusterRef{Name: "compute-a"}},
	}
}

func TestControls(t *testing.T) {
	s := testScheme(t)
	owner := chassis("c1")
	labels := map[string]string{OwnerKindLabel: "OVNChassis", OwnerNameLabel: "c1", OwnerNamespaceLabel: "openstack"}
	ref := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "ovn.openstack.c5c3.io/v1alpha1", Kind: kind, Name: name, UID: "other-cluster-uid", Controller: ptr.To(true)}}
	}
	with := func(l map[string]string, mutate func(map[string]string)) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			out[k] = v
		}
		mutate(out)
		return out
	}
	tests := []struct {
		name string
		obj  metav1.ObjectMeta
		want bool
	}{
		{name: "all three labels", obj: metav1.ObjectMeta{Labels: labels}, want: true},
		{name: "controller reference by kind and name", obj: metav1.ObjectMeta{OwnerReferences: ref("OVNChassis", "c1")}, want: true},
		{name: "no marks", obj: metav1.ObjectMeta{}, want: false},
		{name: "other owner name", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { l[OwnerNameLabel] = "c2" })}, want: false},
		{name: "other owner kind", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { l[OwnerKindLabel] = "NovaCompute" })}, want: false},
		{name: "other owner namespace", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { l[OwnerNamespaceLabel] = "ovn" })}, want: false},
		{name: "two of three labels", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { delete(l, OwnerNamespaceLabel) })}, want: false},
		{name: "controller reference to another name", obj: metav1.ObjectMeta{OwnerReferences: ref("OVNChassis", "c2")}, want: false},
		{name: "this management cluster", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { l[ManagementClusterLabel] = "mgmt-a" })}, want: true},
		{name: "another management cluster, same owner names", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { l[ManagementClusterLabel] = "mgmt-b" })}, want: false},
		{name: "another management cluster, empty identity", obj: metav1.ObjectMeta{Labels: with(labels, func(l map[string]string) { l[ManagementClusterLabel] = "" })}, want: false},
		{name: "written before the identity label", obj: metav1.ObjectMeta{Labels: labels}, want: true},
		{name: "another management cluster's controller reference", obj: metav1.ObjectMeta{OwnerReferences: ref("OVNChassis", "c1"), Labels: map[string]string{ManagementClusterLabel: "mgmt-b"}}, want: false},
	}
	SetManagementCluster("mgmt-a")
	t.Cleanup(func() { SetManagementCluster("") })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: tt.obj}
			if got := Controls(owner, obj, s); got != tt.want {
				t.Errorf("Controls = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClaimRemote(t *testing.T) {
	s := testScheme(t)
	owner := chassis("c1")

	desired := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "x", Namespace: "openstack", Labels: map[string]string{"app": "ovs"},
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "ovn.openstack.c5c3.io/v1alpha1", Kind: "OVNChassis", Name: "c1", Controller: ptr.To(true)},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "unrelated"},
		},
	}}
	if err := ClaimRemote(owner, desired, nil, s); err != nil {
		t.Fatal(err)
	}
	if desired.Labels["app"] != "ovs" || desired.Labels[OwnerNameLabel] != "c1" || desired.Labels[OwnerKindLabel] != "OVNChassis" {
		t.Errorf("labels = %v", desired.Labels)
	}
	if len(desired.OwnerReferences) != 1 || desired.OwnerReferences[0].Name != "unrelated" {
		t.Errorf("the stale controller reference was not dropped: %v", desired.OwnerReferences)
	}
	if _, ok := desired.Labels[ManagementClusterLabel]; ok {
		t.Errorf("an operator without an identity wrote one: %v", desired.Labels)
	}
	SetManagementCluster("mgmt-a")
	t.Cleanup(func() { SetManagementCluster("") })
	if err := ClaimRemote(owner, desired, nil, s); err != nil || desired.Labels[ManagementClusterLabel] != "mgmt-a" {
		t.Errorf("the identity label was not set: %v, %v", desired.Labels, err)
	}
	other := desired.DeepCopy()
	other.Labels[ManagementClusterLabel] = "mgmt-b"
	var otherErr *NotOwnedError
	if err := ClaimRemote(owner, desired.DeepCopy(), other, s); !errors.As(err, &otherErr) {
		t.Errorf("claiming another management cluster's child: err = %v, want NotOwnedError", err)
	}

	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "openstack"}}
	var notOwned *NotOwnedError
	if err := ClaimRemote(owner, &corev1.ConfigMap{}, foreign, s); !errors.As(err, &notOwned) {
		t.Errorf("claiming an unlabelled live object: err = %v, want NotOwnedError", err)
	}

	long := chassis("a-name-that-is-far-too-long-to-fit-into-a-kubernetes-label-value-x")
	if err := ClaimRemote(long, &corev1.ConfigMap{}, nil, s); err == nil {
		t.Error("an owner name over 63 characters was accepted")
	}
}

func TestClaimLocal(t *testing.T) {
	s := testScheme(t)
	owner := chassis("c1")
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "openstack"}}
	if err := ClaimLocal(owner, obj, nil, s); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(obj); ref == nil || ref.Name != "c1" || ref.UID != "uid-1" {
		t.Errorf("controller reference = %v", ref)
	}
	if len(obj.Labels) != 0 {
		t.Errorf("a local child got ownership labels: %v", obj.Labels)
	}
	if err := ClaimLocal(owner, obj.DeepCopy(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, s); err == nil {
		t.Error("claimed a live object owner does not control")
	}
}

func TestOwnerKeyFromLabels(t *testing.T) {
	l := map[string]string{OwnerKindLabel: "OVNChassis", OwnerNameLabel: "c1", OwnerNamespaceLabel: "openstack"}
	tests := []struct {
		name   string
		labels map[string]string
		kind   string
		ns     string
		ok     bool
	}{
		{name: "match", labels: l, kind: "OVNChassis", ns: "openstack", ok: true},
		{name: "other kind", labels: l, kind: "NovaCompute", ns: "openstack"},
		{name: "child in another namespace", labels: l, kind: "OVNChassis", ns: "kube-system"},
		{name: "no name", labels: map[string]string{OwnerKindLabel: "OVNChassis", OwnerNamespaceLabel: "openstack"}, kind: "OVNChassis", ns: "openstack"},
		{name: "unlabelled", labels: nil, kind: "OVNChassis", ns: "openstack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok := OwnerKeyFromLabels(tt.labels, tt.kind, tt.ns)
			if ok != tt.ok || (ok && key.Name != "c1") {
				t.Errorf("got %v, %v", key, ok)
			}
		})
	}
}
