package roundtrip_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// chassisRoundTrips are the OVN chassis's optional fields. The base chassis
// names a central and a node selector no node matches, so it renders its
// DaemonSets and places no pod.
func chassisRoundTrips() map[string]roundTrip {
	return map[string]roundTrip{
		"spec.bridgeMappings":                away("bridgeMappings", `[{"physicalNetwork":"physnet1","bridge":"br-ex"}]`),
		"spec.controller":                    away("controller", `{"resources":{"requests":{"cpu":"50m"}}}`),
		"spec.controller.resources":          away("controller.resources", `{"limits":{"memory":"512Mi"}}`),
		"spec.controller.resources.limits":   away("controller.resources.limits", `{"cpu":"1"}`),
		"spec.controller.resources.requests": away("controller.resources.requests", `{"memory":"128Mi"}`),
		"spec.encapType":                     away("encapType", `"vxlan"`),
		"spec.gateway":                       away("gateway", `{"nodeSelector":{"roundtrip.anvil.c5c3.io/gateway":"true"}}`),
		"spec.image":                         away("image", `{"repository":"ghcr.io/c5c3/ovn","tag":"other","pullPolicy":"Always"}`),
		"spec.ovs":                           away("ovs", `{"revalidatorThreads":3}`),
		"spec.ovs.resources":                 away("ovs.resources", `{"requests":{"cpu":"50m"}}`),
		"spec.ovs.resources.limits":          away("ovs.resources.limits", `{"cpu":"1"}`),
		"spec.ovs.resources.requests":        away("ovs.resources.requests", `{"memory":"128Mi"}`),
		"spec.ovs.revalidatorThreads":        away("ovs.revalidatorThreads", "4"),
		"spec.remoteProbeIntervalMs":         away("remoteProbeIntervalMs", "30000"),
		"spec.tolerations":                   away("tolerations", `[{"key":"roundtrip","operator":"Exists","effect":"NoSchedule"}]`),
		"spec.updateStrategy":                away("updateStrategy", `{"type":"OnDelete"}`),
		"spec.updateStrategy.maxUnavailable": away("updateStrategy.maxUnavailable", "2"),
		"spec.updateStrategy.type":           away("updateStrategy.type", `"OnDelete"`),
	}
}

// chassisNotRoundTripped are the chassis's optional fields without a round
// trip, each with the reason.
var chassisNotRoundTripped = map[string]string{
	"spec.image.digest":                "set and removed with spec.image, which the base leaves out",
	"spec.image.pullPolicy":            "set and removed with spec.image, which the base leaves out",
	"spec.image.tag":                   "set and removed with spec.image, which the base leaves out",
	"spec.controller.resources.claims": "names a pod-level resource claim, which a chassis pod never has",
	"spec.ovs.resources.claims":        "names a pod-level resource claim, which a chassis pod never has",
	"spec.targetClusterRef":            "immutable: placing a chassis on another cluster is a new chassis, not a setting",
}

// chassisEntryRoundTrips remove one entry of each list and map of the
// chassis, from a base that has two of each, and put it back.
func chassisEntryRoundTrips() map[string]roundTrip {
	entry := func(field, change, back string) roundTrip {
		return roundTrip{field: "spec." + field, change: at(field, change), back: at(field, back)}
	}
	return map[string]roundTrip{
		"a bridge mapping": {field: "spec.bridgeMappings", change: at("bridgeMappings", `[`+bridgeA+`]`),
			back:   at("bridgeMappings", `[`+bridgeA+`,`+bridgeB+`]`),
			beyond: "bridge mappings go into each selected node's entry (TestDecideNodes), and this chassis selects no node"},
		"a controller limit":   entry("controller.resources.limits", `{"memory":null}`, `{"memory":"512Mi"}`),
		"a controller request": entry("controller.resources.requests", `{"memory":null}`, `{"memory":"128Mi"}`),
		"a gateway nodeSelector key": {field: "spec.gateway.nodeSelector",
			change: at("gateway.nodeSelector", `{"roundtrip.anvil.c5c3.io/uplink":null}`),
			back:   at("gateway.nodeSelector", `{"roundtrip.anvil.c5c3.io/uplink":"10g"}`),
			beyond: "the gateway selector marks selected nodes' entries as gateways (TestDecideNodes), and this chassis selects no node"},
		"a nodeSelector key": entry("nodeSelector", `{"roundtrip.anvil.c5c3.io/rack":null}`, `{"roundtrip.anvil.c5c3.io/rack":"r1"}`),
		"an ovs limit":       entry("ovs.resources.limits", `{"memory":null}`, `{"memory":"1Gi"}`),
		"an ovs request":     entry("ovs.resources.requests", `{"memory":null}`, `{"memory":"256Mi"}`),
		"a toleration":       entry("tolerations", `[`+tolerationA+`]`, `[`+tolerationA+`,`+tolerationB+`]`),
	}
}

// Bridge mappings of the base of the chassis's entry round trips, as JSON.
const (
	bridgeA = `{"physicalNetwork":"physnet1","bridge":"br-ex"}`
	bridgeB = `{"physicalNetwork":"physnet2","bridge":"br-storage"}`
)

// chassisEntriesNotRoundTripped are the chassis's lists and maps without
// an entry round trip, each with the reason.
var chassisEntriesNotRoundTripped = map[string]string{
	"spec.controller.resources.claims": "names a pod-level resource claim, which a chassis pod never has: the DaemonSet would be refused",
	"spec.ovs.resources.claims":        "names a pod-level resource claim, which a chassis pod never has: the DaemonSet would be refused",
}

func TestChassisEntryRoundTripsCoverEveryListAndMap(t *testing.T) {
	checkEntryCoverage(t, "ovn.openstack.c5c3.io_ovnchassis.yaml", chassisEntryRoundTrips(), chassisEntriesNotRoundTripped)
}

func TestChassisRoundTripsCoverEveryOptionalField(t *testing.T) {
	fields := optionalFields(t, "ovn.openstack.c5c3.io_ovnchassis.yaml")
	if len(fields) < 20 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	checkCoverage(t, fields, chassisRoundTrips(), chassisNotRoundTripped)
}

// Every optional field of an OVN chassis goes and comes back with merge
// patches, and its DaemonSets and ConfigMaps come back to the base's, with
// OVSReady True again; its Ready stays False, since it selects no node.
func TestIntegrationChassisFieldsRoundTrip(t *testing.T) {
	e := startOperator(t)
	testenv.StartCertManager(t, e.Management)
	c := e.Management.Client
	central := reachableCentral("rt-chassis-ovn", 32662, 32672)
	if err := c.Create(t.Context(), central); err != nil {
		t.Fatal(err)
	}
	ch := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "rt-chassis", Namespace: namespace}}
	ch.Spec.CentralRef.Name = central.Name
	ch.Spec.NodeSelector = map[string]string{"roundtrip.anvil.c5c3.io/chassis": "true"}
	if err := c.Create(t.Context(), ch); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, chassisSubject(ch), chassisRoundTrips())

	// A second chassis of the same central holds two entries in each list
	// and map, and the entry round trips remove one. Its selector keys
	// are its own, so the two chassis never claim the same node.
	entries := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "rt-chassis-entries", Namespace: namespace}}
	entries.Spec.CentralRef.Name = central.Name
	entries.Spec.NodeSelector = map[string]string{"roundtrip.anvil.c5c3.io/entries": "true", "roundtrip.anvil.c5c3.io/rack": "r1"}
	entries.Spec.Gateway = &ovnv1alpha1.ChassisGatewaySpec{NodeSelector: map[string]string{
		"roundtrip.anvil.c5c3.io/gateway": "true", "roundtrip.anvil.c5c3.io/uplink": "10g"}}
	for _, raw := range []string{bridgeA, bridgeB} {
		var m ovnv1alpha1.BridgeMapping
		mustUnmarshal(t, raw, &m)
		entries.Spec.BridgeMappings = append(entries.Spec.BridgeMappings, m)
	}
	entries.Spec.Tolerations = twoTolerations(t)
	entries.Spec.Controller.Resources = twoOfEach("1", "512Mi", "50m", "128Mi")
	entries.Spec.OVS.Resources = twoOfEach("1", "1Gi", "50m", "256Mi")
	if err := c.Create(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, chassisSubject(entries), chassisEntryRoundTrips())
}

// chassisSubject is what a round trip of a chassis compares: its
// DaemonSets, ConfigMaps and maintenance Jobs, once OVSReady is True.
func chassisSubject(ch *ovnv1alpha1.OVNChassis) subject {
	return subject{
		gvk:      ovnv1alpha1.GroupVersion.WithKind("OVNChassis"),
		key:      client.ObjectKeyFromObject(ch),
		children: []schema.GroupVersionKind{v1Kind("apps", "DaemonSet"), v1Kind("", "ConfigMap"), v1Kind("batch", "Job")},
		ready:    anvilmeta.ReadyCondition, settled: ovnv1alpha1.OVSReadyCondition,
	}
}
