package chaos_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// poolKey is the node label the suite's pools select on.
const poolKey = "openstack.c5c3.io/nova-compute-pool"

// controlPlane is a ControlPlane of the suite and the credentials its
// input Secrets hold, which the leak census looks for.
type controlPlane struct {
	name    string
	secrets []string
	// busURL is the bus its Secrets name, for the remote one too.
	busURL string
}

// mirrorName is the contract's mirror on a compute cluster.
func (cp *controlPlane) mirrorName() string { return cp.name + "-nova-compute-config" }

// novaName is the Nova the ControlPlane projects, which its pools name.
func (cp *controlPlane) novaName() string { return cp.name + "-nova" }

// createControlPlane declares a ControlPlane named name that points at the
// local services, as the NovaCompute suite's does: the TLS bus, the https
// Keystone, the databases and the remote hand-over, so every compute
// cluster with a pool receives the contract.
func createControlPlane(t *testing.T, e *testenv.Environment, name, metadataSecret string) *controlPlane {
	t.Helper()
	local := cloud.Local()
	busURL, err := local.TransportURL(true)
	if err != nil {
		t.Fatal(err)
	}
	novaPassword, err := local.ServicePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	dbPassword, err := local.DatabasePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(local.Endpoints[localcloud.RabbitMQCA])
	if err != nil {
		t.Fatal(err)
	}
	m := e.Management
	m.PutSecret(t, ns, name+"-bus", map[string]string{"transport_url": busURL})
	m.PutSecret(t, ns, name+"-bus-ca", map[string]string{"ca.crt": string(ca)})
	m.PutSecret(t, ns, name+"-nova-password", map[string]string{"password": novaPassword})
	m.PutSecret(t, ns, name+"-remote-transport", map[string]string{"transport_url": busURL})
	m.PutSecret(t, ns, name+"-metadata", map[string]string{"shared_secret": metadataSecret})
	m.PutSecret(t, ns, name+"-db", map[string]string{"username": "nova", "password": dbPassword})
	if err := m.Client.Create(t.Context(), buildControlPlane(t, name)); err != nil {
		t.Fatal(err)
	}
	secrets := []string{busURL, novaPassword, dbPassword, metadataSecret}
	if u, err := url.Parse(busURL); err == nil {
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	return &controlPlane{name: name, secrets: secrets, busURL: busURL}
}

// buildControlPlane returns the ControlPlane object of createControlPlane.
func buildControlPlane(t *testing.T, name string) *c5c3v1alpha1.ControlPlane {
	t.Helper()
	ep := cloud.Endpoints
	svc := func(url string) *c5c3v1alpha1.ReferencedService {
		return &c5c3v1alpha1.ReferencedService{InternalEndpoint: url, PublicEndpoint: url}
	}
	port := int32(13306)
	if _, err := fmt.Sscanf(ep[localcloud.MariaDBPort], "%d", &port); err != nil {
		t.Fatalf("the MariaDB port in endpoints.env: %v", err)
	}
	db := func(schema string) *c5c3v1alpha1.DatabaseSpec {
		return &c5c3v1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: port, Database: schema, SecretName: name + "-db"}
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{
		SecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus"},
		TLS:       &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus-ca"}},
	}
	cp.Spec.Services = c5c3v1alpha1.ServicesSpec{
		Keystone:  &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: ep[localcloud.KeystoneURL], PublicEndpoint: ep[localcloud.KeystonePublicURL], Region: ep[localcloud.Region]},
		Placement: svc(ep[localcloud.PlacementURL]), Neutron: &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: *svc(ep[localcloud.NeutronURL])}, Glance: svc(ep[localcloud.ImageURL]),
		Nova: &c5c3v1alpha1.NovaServiceSpec{
			OpenStackRelease:        "2026.1",
			Image:                   anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
			ServiceUserSecretRef:    c5c3v1alpha1.SecretKeyRef{Name: name + "-nova-password"},
			MetadataSharedSecretRef: &c5c3v1alpha1.SecretKeyRef{Name: name + "-metadata", Key: "shared_secret"},
			RemoteCompute:           &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-remote-transport"}},
			APIDatabase:             db("nova_api"),
			Database:                db("nova"),
		},
	}
	return cp
}

// newPool creates a pool of cp's Nova on a compute cluster that selects the
// nodes labelled with its own name.
func newPool(t *testing.T, e *testenv.Environment, cp *controlPlane, name, cluster string, mut ...func(*novav1alpha1.NovaCompute)) {
	t.Helper()
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	p.Spec.NovaRef.Name = cp.novaName()
	p.Spec.NodeSelector = map[string]string{poolKey: name}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	p.Spec.Libvirt.VirtType = "kvm"
	for _, m := range mut {
		m(p)
	}
	if err := e.Management.Client.Create(t.Context(), p); err != nil {
		t.Fatalf("creating pool %s: %v", name, err)
	}
}

// deleteObject deletes obj unless it is gone already.
func deleteObject(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Delete(t.Context(), obj); client.IgnoreNotFound(err) != nil {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
}

// gone tells whether an object no longer exists, and what it saw.
func gone(ctx context.Context, c client.Client, obj client.Object) (bool, string) {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	return false, fmt.Sprintf("%s still exists (finalizers %v)", obj.GetName(), obj.GetFinalizers())
}

// conditionOf renders a condition for a failure message.
func conditionOf(conds []metav1.Condition, typ string) (*metav1.Condition, string) {
	c := apimeta.FindStatusCondition(conds, typ)
	if c == nil {
		return nil, typ + " absent"
	}
	return c, fmt.Sprintf("%s=%s %s: %s", typ, c.Status, c.Reason, c.Message)
}

// deleteControlPlane deletes a ControlPlane and waits until it and its
// Nova are gone.
func deleteControlPlane(t *testing.T, e *testenv.Environment, cp *controlPlane) {
	t.Helper()
	obj := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: cp.name, Namespace: ns}}
	deleteObject(t, e.Management.Client, obj)
	eventually(t, 3*time.Minute, "ControlPlane "+cp.name+" and its Nova gone", func(ctx context.Context) (bool, string) {
		if ok, seen := gone(ctx, e.Management.Client, obj); !ok {
			return false, seen
		}
		return gone(ctx, e.Management.Client, &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: cp.novaName(), Namespace: ns}})
	})
}
