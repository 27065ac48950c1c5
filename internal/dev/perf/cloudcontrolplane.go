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
	cp := buildControlPlane(name, controlPlaneEndpoints{
		keystone:  &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: ep[localcloud.KeystoneURL], PublicEndpoint: ep[localcloud.KeystonePublicURL], Region: ep[localcloud.Region]},
		placement: ep[localcloud.PlacementURL],
		neutron:   ep[localcloud.NeutronURL],
		glance:    ep[localcloud.ImageURL],
		dbHost:    "127.0.0.1",
		dbPort:    dbPort,
	})
	if metadata {
		cp.Spec.Services.Nova.MetadataSharedSecretRef = &c5c3v1alpha1.SecretKeyRef{Name: name + "-metadata", Key: "shared_secret"}
	}
	return cp
}

// controlPlaneEndpoints are where a bench's ControlPlane finds its
// services; a service's empty public URL repeats its internal one.
type controlPlaneEndpoints struct {
	keystone           *c5c3v1alpha1.KeystoneSpec
	placement, neutron string
	glance             string
	publicSuffix       string
	dbHost             string
	dbPort             int32
}

// buildControlPlane is the ControlPlane every bench declares: a TLS bus,
// the remote hand-over, and the input Secrets named after it. P1, P2, P3
// and P4 differ only in where the services are.
func buildControlPlane(name string, at controlPlaneEndpoints) *c5c3v1alpha1.ControlPlane {
	svc := func(internal, public string) *c5c3v1alpha1.ReferencedService {
		if public == "" {
			public = internal
		}
		return &c5c3v1alpha1.ReferencedService{InternalEndpoint: internal, PublicEndpoint: public}
	}
	db := func(schema string) *c5c3v1alpha1.DatabaseSpec {
		return &c5c3v1alpha1.DatabaseSpec{Host: at.dbHost, Port: at.dbPort, Database: schema, SecretName: name + "-db"}
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{
		SecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus"},
		TLS:       &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-bus-ca"}},
	}
	cp.Spec.Services = c5c3v1alpha1.ServicesSpec{
		Keystone:  at.keystone,
		Placement: svc(at.placement, publicURL("placement", at.publicSuffix)),
		Neutron:   &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: *svc(at.neutron, publicURL("neutron", at.publicSuffix))},
		Glance:    svc(at.glance, publicURL("glance", at.publicSuffix)),
		Nova: &c5c3v1alpha1.NovaServiceSpec{
			OpenStackRelease:     "2026.1",
			Image:                anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
			ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-nova-password"},
			RemoteCompute:        &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: name + "-remote-transport"}},
			APIDatabase:          db("nova_api"),
			Database:             db("nova"),
		},
	}
	return cp
}

// publicURL is https://{host}{suffix}, or "" without a suffix.
func publicURL(host, suffix string) string {
	if suffix == "" {
		return ""
	}
	return "https://" + host + suffix
}

// benchEndpoints are P1's and P4's made-up in-cluster addresses, which
// nothing dials: only the Keystone and the database differ.
func benchEndpoints(keystone *c5c3v1alpha1.KeystoneSpec, dbHost string, dbPort int32) controlPlaneEndpoints {
	return controlPlaneEndpoints{
		keystone:  keystone,
		placement: "http://placement.openstack.svc", neutron: "http://neutron.openstack.svc", glance: "http://glance.openstack.svc",
		publicSuffix: ".bench.invalid", dbHost: dbHost, dbPort: dbPort,
	}
}
