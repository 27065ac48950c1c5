package roundtrip_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// The agent's own Secrets: the shared secret its base names, with a second
// key for the key's round trip, and a CA bundle for the https case.
const (
	agentSharedSecret = "rt-agent-metadata"
	agentCABundle     = "rt-agent-metadata-ca"
)

// agentRoundTrips are the metadata agent's optional fields. The base agent
// runs on the management cluster beside its chassis, names its shared
// secret and leaves the rest to the defaults.
func agentRoundTrips() map[string]roundTrip {
	shared := `{"name":"` + agentSharedSecret + `"}`
	return map[string]roundTrip{
		// Admission takes exactly one of tag and digest, so the digest
		// replaces the base's tag and the tag comes back with the way back.
		"spec.image.digest": {
			change: at("image", `{"tag":null,"digest":"sha256:`+zeros64+`"}`),
			back:   at("image", `{"digest":null,"tag":"2026.1"}`),
			field:  "spec.image.digest",
		},
		"spec.image.pullPolicy": away("image.pullPolicy", `"Always"`),
		// The image names no default: its tag moves to another value and
		// back instead of away.
		"spec.image.tag":         {change: at("image.tag", `"2026.2"`), back: at("image.tag", `"2026.1"`)},
		"spec.metadataWorkers":   away("metadataWorkers", "2"),
		"spec.novaMetadata":      drop("novaMetadata", `{"sharedSecretRef":`+shared+`}`),
		"spec.novaMetadata.host": away("novaMetadata.host", `"nova-metadata.example.com"`),
		"spec.novaMetadata.port": away("novaMetadata.port", "8776"),
		// Admission takes a CA bundle only with https, so both come and
		// go together.
		"spec.novaMetadata.caBundleSecretRef": {
			change: at("novaMetadata", `{"protocol":"https","caBundleSecretRef":{"name":"`+agentCABundle+`"}}`),
			back:   at("novaMetadata", `{"protocol":null,"caBundleSecretRef":null}`),
			field:  "spec.novaMetadata.caBundleSecretRef",
		},
		"spec.novaMetadata.protocol":            away("novaMetadata.protocol", `"https"`),
		"spec.novaMetadata.sharedSecretRef":     drop("novaMetadata.sharedSecretRef", shared),
		"spec.novaMetadata.sharedSecretRef.key": away("novaMetadata.sharedSecretRef.key", `"rotated"`),
		"spec.resources":                        away("resources", `{"requests":{"cpu":"50m"}}`),
		"spec.resources.limits":                 away("resources.limits", `{"memory":"256Mi"}`),
		"spec.resources.requests":               away("resources.requests", `{"memory":"64Mi"}`),
	}
}

// zeros64 makes a digest of the right shape that names no real image.
const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// agentNotRoundTripped are the agent's optional fields without a round
// trip, each with the reason.
var agentNotRoundTripped = map[string]string{
	"spec.novaMetadata.caBundleSecretRef.key": "set and removed with spec.novaMetadata.caBundleSecretRef, which the base leaves out",
	"spec.resources.claims":                   "names a pod-level resource claim, which an agent pod never has",
	"spec.targetClusterRef":                   "immutable: placing an agent on another cluster is a new agent, not a setting",
}

// agentEntryRoundTrips remove one entry of each list and map of the agent,
// from a base that has two of each, and put it back.
func agentEntryRoundTrips() map[string]roundTrip {
	resources := func(field, body string) roundTrip {
		return roundTrip{field: "spec.resources." + field, change: at("resources."+field, `{"memory":null}`), back: at("resources."+field, body)}
	}
	return map[string]roundTrip{
		"a resources limit":   resources("limits", `{"memory":"256Mi"}`),
		"a resources request": resources("requests", `{"memory":"64Mi"}`),
	}
}

// agentEntriesNotRoundTripped are the agent's lists and maps without an
// entry round trip, each with the reason.
var agentEntriesNotRoundTripped = map[string]string{
	"spec.resources.claims": "names a pod-level resource claim, which an agent pod never has: the DaemonSet would be refused",
}

func TestAgentEntryRoundTripsCoverEveryListAndMap(t *testing.T) {
	checkEntryCoverage(t, "neutron.openstack.c5c3.io_neutronmetadataagents.yaml", agentEntryRoundTrips(), agentEntriesNotRoundTripped)
}

func TestAgentRoundTripsCoverEveryOptionalField(t *testing.T) {
	fields := optionalFields(t, "neutron.openstack.c5c3.io_neutronmetadataagents.yaml")
	if len(fields) < 12 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	checkCoverage(t, fields, agentRoundTrips(), agentNotRoundTripped)
}

// Every optional field of a metadata agent goes and comes back with merge
// patches, and its DaemonSet comes back to the base's, with DaemonSetReady
// True again. The chassis selects no node, so the DaemonSet places no pod,
// and the agent needs no Nova. The agent's ConfigMaps are named by their
// content and the two before the current one are kept for a rollback, so
// a round trip leaves one behind by design; the DaemonSet names the one it
// mounts, so its equality is the configuration's.
func TestIntegrationAgentFieldsRoundTrip(t *testing.T) {
	e := startOperator(t)
	testenv.StartCertManager(t, e.Management)
	c := e.Management.Client
	central := reachableCentral("rt-agent-ovn", 32702, 32712)
	ch := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "rt-agent-chassis", Namespace: namespace}}
	ch.Spec.CentralRef.Name = central.Name
	ch.Spec.NodeSelector = map[string]string{"roundtrip.anvil.c5c3.io/agent": "true"}
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: agentSharedSecret, Namespace: namespace},
		StringData: map[string]string{"shared_secret": "rt-agent-shared", "rotated": "rt-agent-rotated"}}
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: agentCABundle, Namespace: namespace},
		// The agent mounts the bundle and never parses it.
		StringData: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n"}}
	a := &neutronv1alpha1.NeutronMetadataAgent{ObjectMeta: metav1.ObjectMeta{Name: "rt-agent", Namespace: namespace}}
	a.Spec.OpenStackRelease = "2026.1"
	a.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/neutron", Tag: "2026.1"}
	a.Spec.ChassisRef.Name = ch.Name
	a.Spec.NovaMetadata.SharedSecretRef = &neutronv1alpha1.SecretKeyRef{Name: agentSharedSecret}
	for _, o := range []client.Object{central, ch, shared, ca, a} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	runRoundTrips(t, c, agentSubject(a), agentRoundTrips())

	// A second agent on the same chassis holds two entries in each map,
	// and the entry round trips remove one.
	entries := a.DeepCopy()
	entries.ObjectMeta = metav1.ObjectMeta{Name: "rt-agent-entries", Namespace: namespace}
	entries.Spec.Resources = twoOfEach("1", "256Mi", "50m", "64Mi")
	if err := c.Create(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, agentSubject(entries), agentEntryRoundTrips())
}

// agentSubject is what a round trip of an agent compares: its DaemonSet
// and any Secret it writes, once DaemonSetReady is True.
func agentSubject(a *neutronv1alpha1.NeutronMetadataAgent) subject {
	return subject{
		gvk:      neutronv1alpha1.GroupVersion.WithKind("NeutronMetadataAgent"),
		key:      client.ObjectKeyFromObject(a),
		children: []schema.GroupVersionKind{v1Kind("apps", "DaemonSet"), v1Kind("", "Secret")},
		ready:    anvilmeta.ReadyCondition, settled: neutronv1alpha1.DaemonSetReadyCondition,
	}
}
