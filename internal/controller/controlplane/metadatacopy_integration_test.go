package controlplane_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// newAgent creates a metadata agent on cluster that signs with secret.
func newAgent(t *testing.T, name, cluster, secret string) {
	t.Helper()
	a := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	a.Spec.OpenStackRelease = "2026.1"
	a.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	a.Spec.ChassisRef.Name = name + "-chassis"
	a.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	a.Spec.NovaMetadata.SharedSecretRef = &neutronv1alpha1.SecretKeyRef{Name: secret}
	if err := env.Management.Client.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Management.Client.Delete(context.Background(), a) })
}

// The shared secret's copy goes only to the clusters whose agents name it,
// holds only shared_secret with the mirror label, and never replaces a
// same-named Secret the ControlPlane did not write; the other clusters are
// still served.
func TestIntegrationCopiesTheMetadataSecretToAgentClusters(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "mdc-nova-metadata-agent-secret", Namespace: testNamespace},
		Data:       map[string][]byte{"shared_secret": []byte("someone else's")},
	}
	if err := env.ComputeCluster("compute-b").Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	newControlPlane(t, "mdc", true)
	waitNovaReady(t, "mdc", c5c3v1alpha1.NovaReadyReason)
	copyName := "mdc-nova-metadata-agent-secret"
	newAgent(t, "mdc-a", "compute-a", copyName)
	newAgent(t, "mdc-b", "compute-b", copyName)
	newAgent(t, "mdc-c", "compute-c", "a-secret-of-its-own")

	want := localSecret(t, "mdc-nova-compute-config").Data[novaconfig.KeyMetadataSecret]
	got := waitMirror(t, "compute-a", copyName, func(s *corev1.Secret) bool { return bytes.Equal(s.Data["shared_secret"], want) }, 30*time.Second)
	if len(got.Data) != 1 || got.Labels[neutronv1alpha1.MetadataSharedSecretMirrorLabel] != "true" {
		t.Errorf("the copy has keys %d and labels %v, want only shared_secret and the mirror label", len(got.Data), got.Labels)
	}
	c := waitNovaReady(t, "mdc", c5c3v1alpha1.NovaMetadataAgentSecretErrorReason)
	if !strings.Contains(c.Message, copyName) || !strings.Contains(c.Message, "compute-b") {
		t.Errorf("message = %q, want it to name the Secret and compute-b", c.Message)
	}
	kept, err := remoteSecret(t, "compute-b", copyName)
	if err != nil || string(kept.Data["shared_secret"]) != "someone else's" || kept.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Secret on compute-b was changed: %v", err)
	}
	for _, cluster := range []string{"compute-c", "compute-d"} {
		if _, err := remoteSecret(t, cluster, copyName); !apierrors.IsNotFound(err) {
			t.Errorf("a copy appeared on %s, where no agent names it: %v", cluster, err)
		}
	}
	// A pool on compute-a brings the contract's mirror there too.
	newPool(t, "mdc", "mdc-pool", "compute-a")
	waitMirror(t, "compute-a", "mdc-nova-compute-config", func(*corev1.Secret) bool { return true }, 30*time.Second)
	assertTeardownReapsCopies(t, "mdc", copyName, "mdc-nova-compute-config")
	assertNoLeak(t)
}

// assertTeardownReapsCopies deletes the ControlPlane name while its agents
// and pools still run: its copies on compute-a go with it, with an event,
// and the foreign Secret of copyName on compute-b stays as it was.
func assertTeardownReapsCopies(t *testing.T, name, copyName string, more ...string) {
	t.Helper()
	ctx := context.Background()
	foreign, err := remoteSecret(t, "compute-b", copyName)
	if err != nil {
		t.Fatal(err)
	}
	deleteControlPlane(t, &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}})
	for _, n := range append([]string{copyName}, more...) {
		if _, err := remoteSecret(t, "compute-a", n); !apierrors.IsNotFound(err) {
			t.Errorf("the copy %s on compute-a outlived its ControlPlane: %v", n, err)
		}
	}
	kept, err := remoteSecret(t, "compute-b", copyName)
	if err != nil || kept.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the teardown touched the foreign Secret on compute-b: %v", err)
	}
	list := &corev1.EventList{}
	if err := env.Management.Client.List(ctx, list, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name && ev.Reason == c5c3v1alpha1.DeliveredCopyReapedEvent && strings.Contains(ev.Message, "compute-a") {
			return
		}
	}
	t.Errorf("no %s event names compute-a", c5c3v1alpha1.DeliveredCopyReapedEvent)
}
