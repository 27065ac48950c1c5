package perf

import (
	"context"
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/dev/localcloud"
)

// createCloudControlPlane declares, in Namespace, a ControlPlane named name
// whose services are the local ones: the TLS bus, the https Keystone, the
// databases, and the remote hand-over so that compute clusters receive the
// contract. The credentials go only into the input Secrets it creates
// first. A non-empty metadataSecret also sets the metadata proxy's shared
// secret. P2 and P3 share it, so both measure the same ControlPlane.
func createCloudControlPlane(ctx context.Context, c client.Client, local *localcloud.Cloud, name, metadataSecret string) error {
	busURL, err := local.TransportURL(true)
	if err != nil {
		return err
	}
	novaPassword, err := local.ServicePassword("nova")
	if err != nil {
		return err
	}
	dbPassword, err := local.DatabasePassword("nova")
	if err != nil {
		return err
	}
	ep := local.Endpoints
	ca, err := os.ReadFile(ep[localcloud.RabbitMQCA])
	if err != nil {
		return err
	}
	port, err := strconv.ParseInt(ep[localcloud.MariaDBPort], 10, 32)
	if err != nil {
		return fmt.Errorf("the MariaDB port in endpoints.env: %w", err)
	}
	secrets := map[string]map[string]string{
		name + "-bus":              {"transport_url": busURL},
		name + "-bus-ca":           {"ca.crt": string(ca)},
		name + "-nova-password":    {"password": novaPassword},
		name + "-remote-transport": {"transport_url": busURL},
		name + "-db":               {"username": "nova", "password": dbPassword},
	}
	if metadataSecret != "" {
		secrets[name+"-metadata"] = map[string]string{"shared_secret": metadataSecret}
	}
	for secret, data := range secrets {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: Namespace}, StringData: data}
		if err := c.Create(ctx, sec); err != nil {
			return fmt.Errorf("creating Secret %s: %w", secret, err)
		}
	}
	return c.Create(ctx, buildCloudControlPlane(name, ep, int32(port), metadataSecret != ""))
}

// buildCloudControlPlane is the ControlPlane of createCloudControlPlane.
func buildCloudControlPlane(name string, ep map[string]string, dbPort int32, metadata bool) *c5c3v1alpha1.ControlPlane {
	svc := func(u string) *c5c3v1alpha1.ReferencedService {
		return &c5c3v1alpha1.ReferencedService{InternalEndpoint: u, PublicEndpoint: u}
	}
	db := func(schema string) *c5c3v1alpha1.DatabaseSpec {
		return &c5c3v1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: dbPort, Database: schema, SecretName: name + "-db"}
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{
		SecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus"},
		TLS:       &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus-ca"}},
	}
	nova := &c5c3v1alpha1.NovaServiceSpec{
		OpenStackRelease:     "2026.1",
		Image:                anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
		ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-nova-password"},
		RemoteCompute:        &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-remote-transport"}},
		APIDatabase:          db("nova_api"),
		Database:             db("nova"),
	}
	if metadata {
		nova.MetadataSharedSecretRef = &c5c3v1alpha1.SecretKeyRef{Name: name + "-metadata", Key: "shared_secret"}
	}
	cp.Spec.Services = c5c3v1alpha1.ServicesSpec{
		Keystone: &c5c3v1alpha1.KeystoneSpec{
			InternalEndpoint: ep[localcloud.KeystoneURL], PublicEndpoint: ep[localcloud.KeystonePublicURL], Region: ep[localcloud.Region],
		},
		Placement: svc(ep[localcloud.PlacementURL]),
		Neutron:   &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: *svc(ep[localcloud.NeutronURL])},
		Glance:    svc(ep[localcloud.ImageURL]),
		Nova:      nova,
	}
	return cp
}
