package ovncentral_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/ovncentral"
	"github.com/anvil/anvil/internal/dev/ovntest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// certificateNames are the central's Certificates, each named like its
// Secret, in the order the TLS step goes through them: its own CA first,
// the client identity last.
func certificateNames(central string) []string {
	return []string{central + "-ca", central + "-nb-server", central + "-sb-server", central + "-client"}
}

// tied reads the Certificate name and its Secret on the cluster cl reaches
// and returns the Secret, or an error that says why it is not tied to its
// Certificate: by an ownerReference to the Certificate's UID that is not a
// controller reference.
func tied(ctx context.Context, cl client.Client, name string) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: name}
	cert := &cmv1.Certificate{}
	if err := cl.Get(ctx, key, cert); err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := cl.Get(ctx, key, secret); err != nil {
		return nil, err
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID != cert.UID {
			continue
		}
		if ref.Kind != cmv1.CertificateKind || ref.Name != name || (ref.Controller != nil && *ref.Controller) {
			return nil, fmt.Errorf("Secret %s refers to its Certificate as %+v", name, ref)
		}
		return secret, nil
	}
	return nil, fmt.Errorf("Secret %s has no reference to its Certificate (it has %+v)", name, secret.OwnerReferences)
}

// gone is nil once none of the named objects exists on the cluster cl
// reaches, and otherwise names those left.
func gone(ctx context.Context, cl client.Client, objs ...client.Object) error {
	var left []string
	for _, o := range objs {
		err := cl.Get(ctx, client.ObjectKeyFromObject(o), o)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		default:
			left = append(left, fmt.Sprintf("%T %s", o, o.GetName()))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("still there: %s", strings.Join(left, ", "))
	}
	return nil
}

// certificateAndSecret are name's Certificate and Secret, empty but for
// their keys.
func certificateAndSecret(name string) []client.Object {
	meta := metav1.ObjectMeta{Namespace: testenv.WorkloadNamespace, Name: name}
	return []client.Object{&cmv1.Certificate{ObjectMeta: meta}, &corev1.Secret{ObjectMeta: meta}}
}

// checkSecretsTiedAndSettled checks that every certificate Secret of the
// settled central c is tied to its Certificate, and that a pass over tied
// Secrets writes nothing to them. The tie of the client Secret, the last
// the TLS step visits, is taken away and the client Certificate touched,
// which brings a pass; once the client Secret is tied again, that pass has
// gone through every other Secret before it, and their resourceVersions
// must not have moved.
func checkSecretsTiedAndSettled(t *testing.T, c *ovnv1alpha1.OVNCentral) {
	t.Helper()
	ctx, cl := context.Background(), env.Management.Client
	names := certificateNames(c.Name)
	versions := map[string]string{}
	for _, name := range names {
		s, err := tied(ctx, cl, name)
		if err != nil {
			t.Fatalf("the settled central: %v", err)
		}
		versions[name] = s.ResourceVersion
	}
	last := names[len(names)-1]
	untie := []byte(`{"metadata":{"ownerReferences":null}}`)
	if err := cl.Patch(ctx, certificateAndSecret(last)[1], client.RawPatch(types.MergePatchType, untie)); err != nil {
		t.Fatal(err)
	}
	touch := []byte(`{"metadata":{"annotations":{"test.anvil.c5c3.io/touched":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
	if err := cl.Patch(ctx, certificateAndSecret(last)[0], client.RawPatch(types.MergePatchType, touch)); err != nil {
		t.Fatal(err)
	}
	ovntest.Eventually(t, time.Minute, "the central ties the client Secret again", func() error {
		_, err := tied(ctx, cl, last)
		return err
	})
	for _, name := range names[:len(names)-1] {
		s := &corev1.Secret{}
		if err := cl.Get(ctx, workloadKey(name), s); err != nil {
			t.Fatal(err)
		}
		if s.ResourceVersion != versions[name] {
			t.Errorf("Secret %s was written by a pass that found it tied: resourceVersion %s, was %s", name, s.ResourceVersion, versions[name])
		}
	}
}

// checkRetiredSecretsGo turns the relay on and off again, then names an
// issuer, and checks that the relay's and the own CA's Secrets go with
// their Certificates. It leaves c Ready on the named issuer.
func checkRetiredSecretsGo(t *testing.T, c *ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNCentral {
	t.Helper()
	ctx, cl := context.Background(), env.Management.Client
	update := func(change func(*ovnv1alpha1.OVNCentral)) {
		t.Helper()
		now := &ovnv1alpha1.OVNCentral{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(c), now); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(now.DeepCopy())
		change(now)
		if err := cl.Patch(ctx, now, patch); err != nil {
			t.Fatal(err)
		}
	}
	relay := c.Name + "-sb-relay"
	update(func(c *ovnv1alpha1.OVNCentral) { c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{} })
	ovntest.Eventually(t, 2*time.Minute, "the relay's Secret is issued and tied", func() error {
		_, err := tied(ctx, cl, relay)
		return err
	})
	update(func(c *ovnv1alpha1.OVNCentral) { c.Spec.Relay = nil })
	ovntest.Eventually(t, 2*time.Minute, "the relay's Certificate and Secret go", func() error {
		return gone(ctx, cl, certificateAndSecret(relay)...)
	})

	update(func(c *ovnv1alpha1.OVNCentral) {
		c.Spec.TLS.IssuerRef = &ovnv1alpha1.IssuerReference{Name: testenv.CAClusterIssuer}
	})
	ovntest.Eventually(t, 2*time.Minute, "the own CA's Certificate and Secret go", func() error {
		return gone(ctx, cl, certificateAndSecret(ovncentral.OwnCAName(c))...)
	})
	c = waitReady(t, c.Name, 4*time.Minute)
	for _, name := range certificateNames(c.Name)[1:] {
		if _, err := tied(ctx, cl, name); err != nil {
			t.Errorf("on the named issuer: %v", err)
		}
	}
	return c
}

// A central placed on a compute cluster asks that cluster's cert-manager
// for its certificates, ties each Secret there to its Certificate, and
// leaves none behind when it is deleted: its teardown sweeps the
// Certificates, and the compute cluster's garbage collector the Secrets
// after them. Its pods never run, for the cluster has no node; the
// certificates come before them.
func TestIntegrationPlacedCentralSecrets(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	compute := e.ComputeCluster(computeName)
	testenv.StartCertManager(t, compute)
	ctx := context.Background()
	c := newCentralWith(t, "ocplaced", 1, 31821, 31831, func(c *ovnv1alpha1.OVNCentral) {
		c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: computeName}
	})
	ovntest.Eventually(t, 4*time.Minute, "the placed central's certificates are issued", func() error {
		got := &ovnv1alpha1.OVNCentral{}
		if err := e.Management.Client.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			return err
		}
		if got.Status.ClientSecretName == "" {
			return errorf("no client identity published yet (conditions %+v)", got.Status.Conditions)
		}
		return nil
	})
	var objs []client.Object
	for _, name := range certificateNames(c.Name) {
		if _, err := tied(ctx, compute.Client, name); err != nil {
			t.Errorf("on %s: %v", computeName, err)
		}
		objs = append(objs, certificateAndSecret(name)...)
	}
	if err := e.Management.Client.Delete(ctx, c); err != nil {
		t.Fatal(err)
	}
	ovntest.Eventually(t, 2*time.Minute, "the placed central is gone", func() error {
		return gone(ctx, e.Management.Client, &ovnv1alpha1.OVNCentral{ObjectMeta: c.ObjectMeta})
	})
	ovntest.Eventually(t, 2*time.Minute, "every Certificate and certificate Secret is gone from "+computeName, func() error {
		return gone(ctx, compute.Client, objs...)
	})
}
