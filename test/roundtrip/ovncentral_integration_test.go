package roundtrip_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// centralRoundTrips are the OVN central's optional fields. The base central
// (TestIntegrationCentralFieldsRoundTrip) runs one replica of each database, with node
// ports, a suspended backup and nothing else.
func centralRoundTrips() map[string]roundTrip {
	cases := map[string]roundTrip{
		"spec.backup":                          drop("backup", `{"suspend":true}`),
		"spec.backup.retentionDays":            away("backup.retentionDays", "3"),
		"spec.backup.schedule":                 away("backup.schedule", `"0 4 * * *"`),
		"spec.backup.storage":                  away("backup.storage", `{"size":"2Gi","storageClassName":"fast"}`),
		"spec.backup.storage.size":             away("backup.storage.size", `"3Gi"`),
		"spec.backup.storage.storageClassName": away("backup.storage.storageClassName", `"fast"`),
		"spec.backup.suspend":                  drop("backup.suspend", "true"),
		"spec.image":                           away("image", `{"repository":"ghcr.io/c5c3/ovn","tag":"other"}`),
		"spec.northd":                          away("northd", `{"replicas":2,"threads":4}`),
		"spec.northd.replicas":                 away("northd.replicas", "2"),
		"spec.northd.threads":                  away("northd.threads", "4"),
		"spec.relay":                           away("relay", `{"replicas":2}`),
		"spec.relay.externallyReachable":       away("relay", `{"externallyReachable":true,"nodePort":32681}`),
		"spec.relay.nodeSelector":              away("relay", `{"nodeSelector":{"kubernetes.io/hostname":"roundtrip-node"}}`),
		"spec.relay.replicas":                  away("relay", `{"replicas":3}`),
		"spec.relay.resources":                 away("relay", `{"resources":{"requests":{"cpu":"50m"}}}`),
		"spec.relay.tolerations":               away("relay", `{"tolerations":[{"key":"roundtrip","operator":"Exists","effect":"NoSchedule"}]}`),
		"spec.tls":                             away("tls", `{"issuerRef":{"name":"roundtrip-issuer","kind":"Issuer"}}`),
		"spec.tls.issuerRef":                   away("tls.issuerRef", `{"name":"roundtrip-issuer","kind":"Issuer"}`),
	}
	for _, db := range []string{"northbound", "southbound"} {
		cases["spec."+db+".externallyReachable"] = drop(db+".externallyReachable", "true")
		cases["spec."+db+".inactivityProbeMs"] = away(db+".inactivityProbeMs", "30000")
		cases["spec."+db+".nodePortBase"] = drop(db+".nodePortBase", map[string]string{"northbound": "32661", "southbound": "32671"}[db])
		cases["spec."+db+".nodeSelector"] = away(db+".nodeSelector", `{"kubernetes.io/hostname":"roundtrip-node"}`)
		cases["spec."+db+".resources"] = away(db+".resources", `{"requests":{"cpu":"50m"},"limits":{"memory":"1Gi"}}`)
		cases["spec."+db+".resources.limits"] = away(db+".resources.limits", `{"cpu":"1"}`)
		cases["spec."+db+".resources.requests"] = away(db+".resources.requests", `{"memory":"256Mi"}`)
		cases["spec."+db+".tolerations"] = away(db+".tolerations", `[{"key":"roundtrip","operator":"Exists","effect":"NoSchedule"}]`)
	}
	return cases
}

// centralNotRoundTripped are the central's optional fields without a round
// trip, each with the reason.
var centralNotRoundTripped = map[string]string{
	"spec.image.digest":             "set and removed with spec.image, which the base leaves out",
	"spec.image.pullPolicy":         "set and removed with spec.image, which the base leaves out",
	"spec.image.tag":                "set and removed with spec.image, which the base leaves out",
	"spec.relay.resources.claims":   "names a pod-level resource claim, which a relay's pod never has",
	"spec.relay.resources.limits":   "set and removed with spec.relay.resources",
	"spec.relay.resources.requests": "set and removed with spec.relay.resources",
	"spec.relay.nodePort":           "only with externallyReachable (admission), so set and removed with spec.relay.externallyReachable's case",
	"spec.tls.issuerRef.kind":       "set and removed with spec.tls.issuerRef",
	"spec.targetClusterRef":         "immutable: placing a central on another cluster is a new central, not a setting",
	"spec.northbound":               "its fields are immutable or have their own cases; removing it whole would change the immutable replicas and storage",
	"spec.southbound":               "its fields are immutable or have their own cases; removing it whole would change the immutable replicas and storage",
}

// immutableDatabaseFields are refused once set (Raft membership, the
// volume claim templates, the election timer), so they have no way back.
var immutableDatabaseFields = []string{"electionTimerMs", "replicas", "storage", "storage.size", "storage.storageClassName"}

func centralReasons() map[string]string {
	out := map[string]string{}
	for k, v := range centralNotRoundTripped {
		out[k] = v
	}
	for _, db := range []string{"northbound", "southbound"} {
		for _, f := range immutableDatabaseFields {
			out["spec."+db+"."+f] = "immutable once set (admission), so it has no way back to a default"
		}
		out["spec."+db+".resources.claims"] = "names a pod-level resource claim, which a database pod never has"
	}
	return out
}

// centralEntryRoundTrips remove one entry of each list and map of the
// central's databases and relay, from a base that has two of each, and put
// it back. Both node selector keys match the kwok node, so every member
// stays schedulable and Ready comes back.
func centralEntryRoundTrips() map[string]roundTrip {
	cases := map[string]roundTrip{}
	for _, part := range []string{"northbound", "southbound", "relay"} {
		entry := func(field, change, back string) roundTrip {
			return roundTrip{field: "spec." + part + "." + field, change: at(part+"."+field, change), back: at(part+"."+field, back)}
		}
		cases["a "+part+" nodeSelector key"] = entry("nodeSelector", `{"kubernetes.io/os":null}`, `{"kubernetes.io/os":"linux"}`)
		cases["a "+part+" limit"] = entry("resources.limits", `{"memory":null}`, `{"memory":"1Gi"}`)
		cases["a "+part+" request"] = entry("resources.requests", `{"memory":null}`, `{"memory":"256Mi"}`)
		cases["a "+part+" toleration"] = entry("tolerations", `[`+tolerationA+`]`, `[`+tolerationA+`,`+tolerationB+`]`)
	}
	return cases
}

// centralEntriesNotRoundTripped are the central's lists and maps without
// an entry round trip, each with the reason.
var centralEntriesNotRoundTripped = map[string]string{
	"spec.northbound.resources.claims": "names a pod-level resource claim, which a database pod never has: the StatefulSet would be refused",
	"spec.southbound.resources.claims": "names a pod-level resource claim, which a database pod never has: the StatefulSet would be refused",
	"spec.relay.resources.claims":      "names a pod-level resource claim, which a relay's pod never has: the Deployment would be refused",
}

func TestCentralEntryRoundTripsCoverEveryListAndMap(t *testing.T) {
	checkEntryCoverage(t, "ovn.openstack.c5c3.io_ovncentrals.yaml", centralEntryRoundTrips(), centralEntriesNotRoundTripped)
}

func TestCentralRoundTripsCoverEveryOptionalField(t *testing.T) {
	fields := optionalFields(t, "ovn.openstack.c5c3.io_ovncentrals.yaml")
	if len(fields) < 50 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	checkCoverage(t, fields, centralRoundTrips(), centralReasons())
}

// Every optional field of an OVN central goes and comes back with merge
// patches, and its workloads, Services, certificates and backup come back
// to the base's, with Ready True again. The issued keys are left out: a
// certificate whose names changed is issued anew, as it must be.
func TestIntegrationCentralFieldsRoundTrip(t *testing.T) {
	e := startOperator(t)
	testenv.StartCertManager(t, e.Management)
	c := e.Management.Client
	central := reachableCentral("rt-ovn", 32661, 32671)
	central.Spec.Backup = &ovnv1alpha1.OVNBackupSpec{Suspend: true}
	if err := c.Create(t.Context(), central); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, centralSubject(central), centralRoundTrips())

	// A second central, with a relay, holds two entries in each list and
	// map of its databases and relay, and the entry round trips remove
	// one. It is reachable only inside the cluster, so it takes no node
	// port of the first.
	entries := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: "rt-ovn-entries", Namespace: namespace}}
	entries.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{}
	placement := func(sel *map[string]string, res **corev1.ResourceRequirements, tols *[]corev1.Toleration) {
		*sel = map[string]string{"kubernetes.io/hostname": "roundtrip-node", "kubernetes.io/os": "linux"}
		*res = twoOfEach("1", "1Gi", "50m", "256Mi")
		*tols = twoTolerations(t)
	}
	for _, db := range []*ovnv1alpha1.OVNDatabaseSpec{&entries.Spec.Northbound, &entries.Spec.Southbound} {
		db.Replicas = ptr.To[int32](1)
		placement(&db.NodeSelector, &db.Resources, &db.Tolerations)
	}
	r := entries.Spec.Relay
	placement(&r.NodeSelector, &r.Resources, &r.Tolerations)
	entries.Spec.Backup = &ovnv1alpha1.OVNBackupSpec{Suspend: true}
	if err := c.Create(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, centralSubject(entries), centralEntryRoundTrips())
}

// reachableCentral is a central of one member per database, reachable from
// other clusters through node ports from the two bases given; each test's
// central takes bases of its own.
func reachableCentral(name string, northboundPort, southboundPort int32) *ovnv1alpha1.OVNCentral {
	central := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	for _, db := range []*ovnv1alpha1.OVNDatabaseSpec{&central.Spec.Northbound, &central.Spec.Southbound} {
		db.Replicas = ptr.To[int32](1)
		db.ExternallyReachable = true
	}
	central.Spec.Northbound.NodePortBase, central.Spec.Southbound.NodePortBase = ptr.To(northboundPort), ptr.To(southboundPort)
	return central
}

// centralSubject is what a round trip of a central compares: its
// workloads, Services, certificates and backup, once Ready is True.
func centralSubject(central *ovnv1alpha1.OVNCentral) subject {
	return subject{
		gvk: ovnv1alpha1.GroupVersion.WithKind("OVNCentral"),
		key: client.ObjectKeyFromObject(central),
		children: []schema.GroupVersionKind{
			v1Kind("apps", "StatefulSet"), v1Kind("apps", "Deployment"), v1Kind("", "Service"), v1Kind("", "ConfigMap"),
			v1Kind("batch", "CronJob"), v1Kind("policy", "PodDisruptionBudget"),
			v1Kind("cert-manager.io", "Certificate"), v1Kind("cert-manager.io", "Issuer"),
		},
		ready: anvilmeta.ReadyCondition, settled: anvilmeta.ReadyCondition,
	}
}
