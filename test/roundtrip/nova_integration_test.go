package roundtrip_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// novaRoundTrips are the Nova's optional fields. The base Nova (baseNova)
// sets the databases, the bus's TLS, the remote computes, the region and
// the public Keystone endpoint and leaves the rest out. A field the schema
// defaults moves to another value and back to null, which must bring the
// default back; a field without a default is added and removed, or, where
// the base sets it, removed and added.
func novaRoundTrips(name string) map[string]roundTrip {
	db := func(database string) string {
		return `{"host":"mariadb.openstack.svc","database":"` + database + `","secretRef":{"name":"` + name + `-db"}}`
	}
	cases := map[string]roundTrip{
		"spec.apiDatabase":      drop("apiDatabase", db("nova_api")),
		"spec.apiDatabase.port": away("apiDatabase.port", "3307"),
		"spec.database":         drop("database", db("nova")),
		"spec.database.port":    away("database.port", "3307"),
		"spec.consoleProxy":     away("consoleProxy", `{"enabled":true,"hostname":"console.example.com"}`),
		"spec.endpoints":        away("endpoints", `{"placement":{"override":"http://placement.example.com:8778"}}`),
		// The image takes exactly one of a tag and a digest.
		"spec.image.digest": {
			change: at("image", `{"tag":null,"digest":"sha256:`+strings.Repeat("ab", 32)+`"}`),
			back:   at("image", `{"tag":"2026.1","digest":null}`),
		},
		"spec.image.pullPolicy":                        away("image.pullPolicy", `"Always"`),
		"spec.keystonePublicEndpoint":                  drop("keystonePublicEndpoint", `"https://keystone.example.com"`),
		"spec.logging":                                 away("logging", `{"debug":true}`),
		"spec.logging.debug":                           away("logging.debug", "true"),
		"spec.messaging.secretRef.key":                 away("messaging.secretRef.key", `"other_url"`),
		"spec.messaging.tls.caBundleSecretRef.key":     away("messaging.tls.caBundleSecretRef.key", `"other.crt"`),
		"spec.metadata.gateway":                        away("metadata.gateway", `{"hostname":"metadata.example.com","parentRef":{"name":"gateway","namespace":"`+namespace+`","sectionName":"https"}}`),
		"spec.metadata.sharedSecretRef.key":            away("metadata.sharedSecretRef.key", `"other_secret"`),
		"spec.region":                                  drop("region", `"RegionOne"`),
		"spec.remoteCompute.transportURLSecretRef.key": away("remoteCompute.transportURLSecretRef.key", `"other_url"`),
		"spec.replicas":                                away("replicas", "3"),
		"spec.serviceUser.projectDomainName":           away("serviceUser.projectDomainName", `"Other"`),
		"spec.serviceUser.projectName":                 away("serviceUser.projectName", `"other"`),
		"spec.serviceUser.secretRef.key":               away("serviceUser.secretRef.key", `"other_password"`),
		"spec.serviceUser.userDomainName":              away("serviceUser.userDomainName", `"Other"`),
		"spec.serviceUser.username":                    away("serviceUser.username", `"nova-other"`),
	}
	// Each endpoint alone, under an endpoints object the base leaves out:
	// the way back leaves an empty object behind, which must read as none.
	for _, svc := range []string{"placement", "neutron", "glance", "cinder", "barbican"} {
		cases["spec.endpoints."+svc] = away("endpoints."+svc, `{"override":"http://`+svc+`.example.com"}`)
		cases["spec.endpoints."+svc+".override"] = away("endpoints."+svc+".override", `"http://`+svc+`.example.com"`)
	}
	for _, svc := range []string{"cinder", "barbican"} {
		cases["spec.endpoints."+svc+".enabled"] = away("endpoints."+svc+".enabled", "true")
	}
	return cases
}

// novaNotRoundTripped are the Nova's optional fields without a round trip,
// each with the reason.
var novaNotRoundTripped = map[string]string{
	"spec.consoleProxy.enabled":                   "set and removed with spec.consoleProxy, which the base leaves out",
	"spec.consoleProxy.hostname":                  "set and removed with spec.consoleProxy, which the base leaves out",
	"spec.metadata.gateway.parentRef.namespace":   "set and removed with spec.metadata.gateway, which the base leaves out",
	"spec.metadata.gateway.parentRef.sectionName": "set and removed with spec.metadata.gateway, which the base leaves out",
	"spec.messaging.tls":                          "the base's remoteCompute requires it (admission); dropping both is spec.remoteCompute's way",
	"spec.remoteCompute":                          "removing it is a withdrawal with its own tests (TestIntegrationDroppingTLSAndRemoteCompute), not a default",
	"spec.image.tag":                              "the image takes exactly one of a tag and a digest: removing the base's tag is spec.image.digest's round trip",
	"spec.targetClusterRef":                       "immutable: placing a Nova on another cluster is a new Nova, not a setting",
}

func TestNovaRoundTripsCoverEveryOptionalField(t *testing.T) {
	fields := optionalFields(t, "nova.openstack.c5c3.io_novas.yaml")
	if len(fields) < 40 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	checkCoverage(t, fields, novaRoundTrips("x"), novaNotRoundTripped)
}

// Every optional field of a standalone Nova goes and comes back with merge
// patches, and its Secrets, Services, Deployments, Jobs, disruption budgets
// and routes come back to those of the base, with Ready True again.
func TestIntegrationNovaFieldsRoundTrip(t *testing.T) {
	e := startOperator(t)
	const name = "rt"
	n := baseNova(t, e.Management.Client, name, "http://keystone.openstack.svc:5000")
	runRoundTrips(t, e.Management.Client, subject{
		gvk: novav1alpha1.GroupVersion.WithKind("Nova"),
		key: client.ObjectKeyFromObject(n),
		children: []schema.GroupVersionKind{
			corev1.SchemeGroupVersion.WithKind("Secret"), corev1.SchemeGroupVersion.WithKind("Service"),
			appsv1.SchemeGroupVersion.WithKind("Deployment"), batchv1.SchemeGroupVersion.WithKind("Job"),
			policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		},
		ready: anvilmeta.ReadyCondition, settled: anvilmeta.ReadyCondition,
	}, novaRoundTrips(name))
}

// baseNova creates the Nova the round trips start from, with its inputs;
// keystone is its internal Keystone endpoint, which its pools dial.
func baseNova(t *testing.T, c client.Client, name, keystone string) *novav1alpha1.Nova {
	t.Helper()
	put := func(suffix string, data map[string]string) {
		env.Management.PutSecret(t, namespace, name+suffix, data)
	}
	put("-bus", map[string]string{"transport_url": "rabbit://nova:bus-pass@rabbit.openstack.svc:5671/nova"})
	put("-bus-ca", map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIBcp\n-----END CERTIFICATE-----\n"})
	put("-password", map[string]string{"password": "service-pass"})
	put("-metadata", map[string]string{"shared_secret": "metadata-secret"})
	put("-db", map[string]string{"username": "nova", "password": "db-pass"})
	put("-transport", map[string]string{"transport_url": "rabbit://nova:remote-pass@rabbit.example.com:5671/nova"})
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	n.Spec.OpenStackRelease = "2026.1"
	n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"}
	n.Spec.Messaging.SecretRef.Name = name + "-bus"
	n.Spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{CABundleSecretRef: novav1alpha1.CABundleSecretRef{Name: name + "-bus-ca"}}
	n.Spec.KeystoneEndpoint = keystone
	n.Spec.KeystonePublicEndpoint = "https://keystone.example.com"
	n.Spec.ServiceUser.SecretRef.Name = name + "-password"
	n.Spec.Region = "RegionOne"
	n.Spec.Metadata.SharedSecretRef.Name = name + "-metadata"
	n.Spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{
		KeystoneEndpoint:      "https://keystone.example.com",
		TransportURLSecretRef: novav1alpha1.TransportURLSecretRef{Name: name + "-transport"},
	}
	ref := novav1alpha1.DatabaseSecretRef{Name: name + "-db"}
	n.Spec.APIDatabase = &novav1alpha1.DatabaseSpec{Host: "mariadb.openstack.svc", Database: "nova_api", SecretRef: ref}
	n.Spec.Database = &novav1alpha1.DatabaseSpec{Host: "mariadb.openstack.svc", Database: "nova", SecretRef: ref}
	if err := c.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The Nova has no list or map of its own today; one added needs an entry
// round trip like the pool's (poolEntryRoundTrips).
func TestNovaHasNoListOrMapWithoutEntryRoundTrips(t *testing.T) {
	checkCoverage(t, collectionFields(t, "nova.openstack.c5c3.io_novas.yaml"), nil, nil)
}
