package webhook_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// newStandaloneNova returns a Nova of no ControlPlane whose Keystone is
// the suite's allowed host.
func newStandaloneNova(name string) *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.Messaging.SecretRef.Name = "bus"
	n.Spec.KeystoneEndpoint = "http://" + allowedKeystone + ":5000/v3"
	n.Spec.ServiceUser.SecretRef.Name = "nova-password"
	n.Spec.Metadata.SharedSecretRef.Name = "metadata"
	return n
}

// A Nova may name only the operator's allowed Keystone hosts, or the
// Keystone its owning ControlPlane declares; admission names the field and
// the host, and never the URL's user info. An owner reference counts only
// when it is the ControlPlane's real UID.
func TestIntegrationNovaKeystoneHosts(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client

	public := "https://keystone.example.com/v3"
	for _, tt := range []struct {
		name, field string
		mutate      func(*novav1alpha1.Nova)
	}{
		{"in-cluster Keystone elsewhere", "spec.keystoneEndpoint", func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = "http://keystone.evil.example:5000/v3" }},
		{"public Keystone not declared", "spec.keystonePublicEndpoint", func(n *novav1alpha1.Nova) { n.Spec.KeystonePublicEndpoint = public }},
		{"user info that names the allowed host", "spec.keystoneEndpoint", func(n *novav1alpha1.Nova) {
			n.Spec.KeystoneEndpoint = "http://" + allowedKeystone + ":" + password + "@keystone.evil.example/v3"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newStandaloneNova("ks-refused")
			tt.mutate(n)
			err := c.Create(ctx, n)
			if err == nil {
				_ = c.Delete(ctx, n)
				t.Fatal("admitted")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.field+": Forbidden") || !strings.Contains(msg, "is not allowed") || strings.Contains(msg, password) {
				t.Errorf("refusal %q does not name %s, or repeats the password", msg, tt.field)
			}
		})
	}

	standalone := newStandaloneNova("ks-standalone")
	if err := c.Create(ctx, standalone); err != nil {
		t.Fatalf("a Nova on the allowed host was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, standalone) })

	// A ControlPlane's child may name the ControlPlane's public Keystone,
	// which is on no allowlist; a forged reference may not.
	cp := newControlPlane("ks-owner")
	if err := c.Create(ctx, cp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, cp) })
	child := func(name string, uid types.UID) *novav1alpha1.Nova {
		n := newStandaloneNova(name)
		n.Spec.KeystonePublicEndpoint = public
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: c5c3v1alpha1.GroupVersion.String(), Kind: "ControlPlane", Name: cp.Name, UID: uid, Controller: ptr.To(true)}}
		return n
	}
	forged := child("ks-forged", "00000000-0000-0000-0000-000000000000")
	if err := c.Create(ctx, forged); err == nil || !strings.Contains(err.Error(), "spec.keystonePublicEndpoint: Forbidden") {
		_ = c.Delete(ctx, forged)
		t.Errorf("a reference with another UID made the Nova a child: %v", err)
	}
	owned := child("ks-child", cp.UID)
	if err := c.Create(ctx, owned); err != nil {
		t.Fatalf("the ControlPlane's child naming its public Keystone was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, owned) })

	// An update that moves the Keystone is checked; one that leaves it is
	// not, so a tightened policy never blocks an unrelated change.
	moved := standalone.DeepCopy()
	moved.Spec.KeystoneEndpoint = "http://keystone.evil.example:5000/v3"
	if err := c.Update(ctx, moved); err == nil || !strings.Contains(err.Error(), "spec.keystoneEndpoint: Forbidden") {
		t.Errorf("moving the Keystone to another host: %v", err)
	}
	region := standalone.DeepCopy()
	region.Spec.Region = "RegionTwo"
	if err := c.Update(ctx, region); err != nil {
		t.Errorf("an update that leaves the Keystone alone was refused: %v", err)
	}
}
