package controlplane_test

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// otherCABundle is the second key of the round trips' CA Secret.
const otherCABundle = "-----BEGIN CERTIFICATE-----\nMIIBother\n-----END CERTIFICATE-----\n"

// roundTrip is one optional field of a ControlPlane: a merge patch that
// changes it from the suite's ControlPlane, one that changes it back, and
// what of the ControlPlane's children the field decides.
type roundTrip struct {
	change, back string
	observed     func(t *testing.T, cp string) any
}

// novaPart observes a part of the projected Nova.
func novaPart(part func(*novav1alpha1.Nova) any) func(*testing.T, string) any {
	return func(t *testing.T, cp string) any {
		t.Helper()
		n := &novav1alpha1.Nova{}
		if err := env.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: cp + c5c3v1alpha1.NovaSuffix}, n); err != nil {
			return err.Error()
		}
		return part(n)
	}
}

// secretDigest observes a Secret the ControlPlane writes by a digest of its
// data, so that a failure prints no credential.
func secretDigest(suffix string) func(*testing.T, string) any {
	return func(t *testing.T, cp string) any {
		t.Helper()
		s := &corev1.Secret{}
		if err := env.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: cp + suffix}, s); err != nil {
			return err.Error()
		}
		h := sha256.New()
		for _, k := range slices.Sorted(maps.Keys(s.Data)) {
			h.Write([]byte(k + "\x00"))
			h.Write(s.Data[k])
			h.Write([]byte{0})
		}
		return hex.EncodeToString(h.Sum(nil))
	}
}

// conditionReason observes the reason of one of the ControlPlane's
// conditions, for a field that decides what the ControlPlane reports
// rather than what it writes.
func conditionReason(conditionType string) func(*testing.T, string) any {
	return func(t *testing.T, name string) any {
		t.Helper()
		cp := &c5c3v1alpha1.ControlPlane{}
		if err := env.Management.Client.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: name}, cp); err != nil {
			return err.Error()
		}
		if c := apimeta.FindStatusCondition(cp.Status.Conditions, conditionType); c != nil {
			return c.Reason
		}
		return ""
	}
}

// roundTrips holds a case for every optional field of the ControlPlane's
// spec that decides one of its children, keyed by its schema path. Cases
// set what the suite's ControlPlane leaves out and unset or change what it
// sets, so each runs both ways: a field GitOps removes, and one it adds
// back.
func roundTrips(name string) map[string]roundTrip {
	services := func(body string) string { return `{"spec":{"services":` + body + `}}` }
	nova := func(field string) func(value string) string {
		return func(value string) string { return services(`{"nova":{"` + field + `":` + value + `}}`) }
	}
	keystone := func(body string) string { return services(`{"keystone":` + body + `}`) }
	messaging := func(body string) string { return `{"spec":{"infrastructure":{"messaging":` + body + `}}}` }
	projected := func(part func(*novav1alpha1.Nova) any) func(string, string) roundTrip {
		return func(change, back string) roundTrip {
			return roundTrip{change: change, back: back, observed: novaPart(part)}
		}
	}
	endpoints := projected(func(n *novav1alpha1.Nova) any { return n.Spec.Endpoints })
	// service adds a referenced service the suite's ControlPlane leaves
	// out; the Nova's endpoints use its internal endpoint.
	service := func(svc string) roundTrip {
		patch := func(value string) string { return services(`{"` + svc + `":` + value + `}`) }
		return endpoints(patch(`{"internalEndpoint":"http://`+svc+`.openstack.svc","publicEndpoint":"https://`+svc+`.example.com"}`), patch("null"))
	}
	// internal drops the internal endpoint of a service the suite's
	// ControlPlane has, which leaves the Nova's override of it empty.
	internal := func(svc string) roundTrip {
		patch := func(value string) string { return services(`{"` + svc + `":{"internalEndpoint":` + value + `}}`) }
		return endpoints(patch("null"), patch(`"http://`+svc+`.openstack.svc"`))
	}
	databases := projected(func(n *novav1alpha1.Nova) any { return []any{n.Spec.APIDatabase, n.Spec.Database} })
	database := func(field, db string) roundTrip {
		return databases(nova(field)("null"), nova(field)(`{"host":"mariadb.openstack.svc","database":"`+db+`","secretName":"`+name+`-db"}`))
	}
	port := func(field string) roundTrip {
		return databases(nova(field)(`{"port":3307}`), nova(field)(`{"port":null}`))
	}
	image := projected(func(n *novav1alpha1.Nova) any { return n.Spec.Image })
	keystoneURL := projected(func(n *novav1alpha1.Nova) any { return n.Spec.KeystonePublicEndpoint })
	return map[string]roundTrip{
		"spec.services.nova.consoleProxy": projected(func(n *novav1alpha1.Nova) any { return n.Spec.ConsoleProxy })(
			nova("consoleProxy")(`{"enabled":true,"hostname":"console.example.com"}`), nova("consoleProxy")("null")),
		"spec.services.nova.metadataGateway": projected(func(n *novav1alpha1.Nova) any { return n.Spec.Metadata.Gateway })(
			nova("metadataGateway")(`{"hostname":"metadata.example.com","parentRef":{"name":"gateway","namespace":"`+testNamespace+`"}}`),
			nova("metadataGateway")("null")),
		"spec.services.nova.metadataSharedSecretRef": projected(func(n *novav1alpha1.Nova) any { return n.Spec.Metadata.SharedSecretRef })(
			nova("metadataSharedSecretRef")(`{"name":"`+name+`-shared","key":"secret"}`), nova("metadataSharedSecretRef")("null")),
		"spec.services.nova.remoteCompute": projected(func(n *novav1alpha1.Nova) any { return n.Spec.RemoteCompute })(
			nova("remoteCompute")(`{"transportURLSecretRef":{"name":"`+name+`-remote-transport"}}`), nova("remoteCompute")("null")),
		"spec.services.nova.replicas": projected(func(n *novav1alpha1.Nova) any { return n.Spec.Replicas })(
			nova("replicas")("3"), nova("replicas")("null")),
		"spec.services.nova.serviceUserSecretRef.key": projected(func(n *novav1alpha1.Nova) any { return n.Spec.ServiceUser.SecretRef })(
			nova("serviceUserSecretRef")(`{"key":"other"}`), nova("serviceUserSecretRef")(`{"key":null}`)),
		// Admission wants exactly one of tag and digest.
		"spec.services.nova.image.digest": image(nova("image")(`{"tag":null,"digest":"sha256:`+digestHex+`"}`),
			nova("image")(`{"tag":"2026.1","digest":null}`)),
		"spec.services.nova.image.pullPolicy": image(nova("image")(`{"pullPolicy":"Always"}`), nova("image")(`{"pullPolicy":null}`)),
		"spec.services.nova.image.tag":        image(nova("image")(`{"tag":"2026.1.1"}`), nova("image")(`{"tag":"2026.1"}`)),
		"spec.services.nova.apiDatabase":      database("apiDatabase", "nova_api"),
		"spec.services.nova.database":         database("database", "nova"),
		"spec.services.nova.apiDatabase.port": port("apiDatabase"),
		"spec.services.nova.database.port":    port("database"),
		"spec.services.keystone.publicEndpoint": keystoneURL(
			keystone(`{"publicEndpoint":null}`), keystone(`{"publicEndpoint":"https://keystone.example.com/v3"}`)),
		// The gateway's hostname names the public Keystone only without a
		// publicEndpoint, so the change trades one for the other.
		"spec.services.keystone.gateway": keystoneURL(
			keystone(`{"publicEndpoint":null,"gateway":{"hostname":"keystone-gw.example.com","parentRef":{"name":"gateway"}}}`),
			keystone(`{"publicEndpoint":"https://keystone.example.com/v3","gateway":null}`)),
		"spec.services.keystone.region": projected(func(n *novav1alpha1.Nova) any { return n.Spec.Region })(
			keystone(`{"region":"RegionTwo"}`), keystone(`{"region":"RegionOne"}`)),
		"spec.infrastructure.messaging.tls": projected(func(n *novav1alpha1.Nova) any { return n.Spec.Messaging.TLS })(
			messaging(`{"tls":null}`), messaging(`{"tls":{"caBundleSecretRef":{"name":"`+name+`-bus-ca"}}}`)),
		"spec.infrastructure.messaging.secretRef.key": {
			change: messaging(`{"secretRef":{"key":"other_url"}}`), back: messaging(`{"secretRef":{"key":null}}`),
			observed: secretDigest(c5c3v1alpha1.NovaMessagingSuffix),
		},
		"spec.infrastructure.messaging.tls.caBundleSecretRef.key": {
			change:   messaging(`{"tls":{"caBundleSecretRef":{"key":"other.crt"}}}`),
			back:     messaging(`{"tls":{"caBundleSecretRef":{"key":null}}}`),
			observed: secretDigest(c5c3v1alpha1.NovaMessagingCASuffix),
		},
		// The ControlPlane only reads the central it names, and reports it.
		"spec.services.neutron.ovn": {
			change:   services(`{"neutron":{"ovn":{"centralRef":{"name":"` + name + `-no-such-central"}}}}`),
			back:     services(`{"neutron":{"ovn":null}}`),
			observed: conditionReason(c5c3v1alpha1.OVNReadyCondition),
		},
		"spec.services.cinder":                     service("cinder"),
		"spec.services.barbican":                   service("barbican"),
		"spec.services.placement.internalEndpoint": internal("placement"),
		"spec.services.glance.internalEndpoint":    internal("glance"),
		"spec.services.neutron.internalEndpoint":   internal("neutron"),
	}
}

// digestHex is a well-formed image digest for the digest round trip.
const digestHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Reasons shared by many fields of notRoundTripped.
const (
	withParent    = "set and removed with its parent, which the suite's ControlPlane leaves out"
	admissionOnly = "read by admission alone: with remoteCompute, each catalog service needs a publicEndpoint or a gateway, and Anvil publishes none of these services"
	gatewayPart   = "set and removed with its gateway, which the suite's ControlPlane leaves out; only a gateway's hostname is read, and only Keystone's and the metadata API's"
	requiredBy    = "admission requires it with services.nova"
)

// notRoundTripped returns the optional fields of the ControlPlane without
// a round trip, each with the reason.
func notRoundTripped() map[string]string {
	reasons := map[string]string{
		"spec.infrastructure":                                        "holds messaging, which admission requires with services.nova",
		"spec.infrastructure.messaging":                              requiredBy,
		"spec.services":                                              "holds services.nova, the projection's subject",
		"spec.services.nova":                                         "the projection's subject: without it the Nova is removed, not defaulted",
		"spec.services.keystone":                                     requiredBy,
		"spec.services.placement":                                    requiredBy,
		"spec.services.glance":                                       requiredBy,
		"spec.services.neutron":                                      requiredBy,
		"spec.services.keystone.adminCredentialsSecretRef":           "lets Anvil write Keystone (the catalog, the hypervisor operator's account); without it Anvil holds no Keystone credential to remove anything with. TestIntegrationCatalog and TestIntegrationHypervisorOperatorAccount set it and delete what it wrote",
		"spec.services.keystone.gateway.parentRef":                   gatewayPart,
		"spec.services.keystone.gateway.parentRef.namespace":         gatewayPart,
		"spec.services.keystone.gateway.parentRef.sectionName":       gatewayPart,
		"spec.services.keystone.gateway.path":                        gatewayPart,
		"spec.services.neutron.ovn.centralRef.namespace":             withParent,
		"spec.services.nova.hypervisorOperator":                      "acts on Keystone users and the compute clusters' copies, with admin credentials the suite's ControlPlane leaves out; TestIntegrationHypervisorOperatorAccount unsets it and checks both go",
		"spec.services.nova.internalEndpoint":                        "read by the catalog step alone, which needs adminCredentialsSecretRef; TestIntegrationCatalog changes it in place",
		"spec.services.nova.publicEndpoint":                          "read by the catalog step alone, which needs adminCredentialsSecretRef; TestIntegrationCatalog registers it",
		"spec.services.nova.consoleProxy.enabled":                    withParent,
		"spec.services.nova.consoleProxy.hostname":                   withParent,
		"spec.services.nova.metadataGateway.parentRef":               "admission requires it with metadataGateway; " + withParent,
		"spec.services.nova.metadataGateway.parentRef.namespace":     withParent,
		"spec.services.nova.metadataGateway.parentRef.sectionName":   withParent,
		"spec.services.nova.metadataGateway.path":                    "admission allows only an empty path or /: the Nova publishes its metadata API at the hostname's root",
		"spec.services.nova.metadataSharedSecretRef.key":             withParent,
		"spec.services.nova.remoteCompute.credentials":               withParent + "; TestIntegrationPerClusterCredentials sets PerCluster",
		"spec.services.nova.remoteCompute.brokerAdminSecretRef":      "acts on a real broker, with PerCluster and Keystone admin credentials the suite's ControlPlane leaves out; TestIntegrationPerClusterBrokerUsers unsets it and checks the users go and the mirror logs in as the shared user again",
		"spec.services.nova.remoteCompute.transportURLSecretRef.key": withParent,
	}
	// The referenced services share theirs.
	for _, svc := range []string{"placement", "glance", "neutron", "cinder", "barbican"} {
		prefix := "spec.services." + svc
		reasons[prefix+".gateway"] = admissionOnly
		if svc == "cinder" || svc == "barbican" {
			reasons[prefix+".publicEndpoint"] = withParent
			reasons[prefix+".internalEndpoint"] = withParent
			reasons[prefix+".gateway"] = withParent
		} else {
			reasons[prefix+".publicEndpoint"] = admissionOnly
		}
		for _, part := range []string{".gateway.parentRef", ".gateway.parentRef.namespace", ".gateway.parentRef.sectionName", ".gateway.path"} {
			reasons[prefix+part] = gatewayPart
		}
	}
	return reasons
}
