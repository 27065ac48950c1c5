package roundtrip_test

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// poolRoundTrips are the pool's optional fields. The base pool, made by
// TestIntegrationPoolFieldsRoundTrip, sets only its Nova and a node
// selector no node matches, so the pool renders its DaemonSet and
// ConfigMap and places no pod.
func poolRoundTrips() map[string]roundTrip {
	return map[string]roundTrip{
		"spec.extraConfig":                  away("extraConfig", `{"DEFAULT":{"heal_instance_info_cache_interval":"120"}}`),
		"spec.failedBuildsWarningThreshold": away("failedBuildsWarningThreshold", "5"),
		"spec.hostTraits":                   away("hostTraits", `[{"nodeName":"rt-node","traits":["CUSTOM_ROUNDTRIP"]}]`),
		"spec.image": away("image", `{"repository":"ghcr.io/c5c3/nova","digest":"sha256:`+strings.Repeat("cd", 32)+
			`","pullPolicy":"Always"}`),
		"spec.libvirt":                       away("libvirt", `{"virtType":"qemu","cpuMode":"custom","cpuModels":["Haswell"],"imagesType":"raw"}`),
		"spec.libvirt.cpuMode":               away("libvirt.cpuMode", `"host-passthrough"`),
		"spec.libvirt.imagesType":            away("libvirt.imagesType", `"raw"`),
		"spec.libvirt.virtType":              away("libvirt.virtType", `"qemu"`),
		"spec.resources":                     away("resources", `{"requests":{"cpu":"100m"},"limits":{"cpu":"2"}}`),
		"spec.resources.limits":              away("resources.limits", `{"memory":"2Gi"}`),
		"spec.resources.requests":            away("resources.requests", `{"memory":"1Gi"}`),
		"spec.tolerations":                   away("tolerations", `[{"key":"roundtrip","operator":"Exists","effect":"NoSchedule"}]`),
		"spec.traits":                        away("traits", `["CUSTOM_ROUNDTRIP_POOL"]`),
		"spec.updateStrategy":                away("updateStrategy", `{"type":"RollingUpdate","maxUnavailable":"50%"}`),
		"spec.updateStrategy.maxUnavailable": away("updateStrategy.maxUnavailable", "2"),
		"spec.updateStrategy.type":           away("updateStrategy.type", `"OnDelete"`),
	}
}

// poolNotRoundTripped are the pool's optional fields without a round
// trip, each with the reason.
var poolNotRoundTripped = map[string]string{
	"spec.image.digest":      "set and removed with spec.image, which the base leaves out",
	"spec.image.pullPolicy":  "set and removed with spec.image, which the base leaves out",
	"spec.image.tag":         "the image takes exactly one of a tag and a digest; spec.image's round trip sets the digest",
	"spec.libvirt.cpuModels": "only with cpuMode custom (admission), so set and removed with spec.libvirt",
	"spec.resources.claims":  "names a pod-level resource claim, which a pool's pod never has: the DaemonSet would be refused",
	"spec.targetClusterRef":  "immutable: placing a pool on another cluster is a new pool, not a setting",
}

func TestPoolRoundTripsCoverEveryOptionalField(t *testing.T) {
	fields := optionalFields(t, "nova.openstack.c5c3.io_novacomputes.yaml")
	if len(fields) < 20 {
		t.Fatalf("found only %d optional fields: the schema walk is broken (%v)", len(fields), fields)
	}
	checkCoverage(t, fields, poolRoundTrips(), poolNotRoundTripped)
}

// Every optional field of a pool goes and comes back with merge patches,
// and its DaemonSet comes back to the base's, with
// DaemonSetReady True again. The pool's Keystone answers nothing, so its
// Ready stays False on the aggregates and services, which need OpenStack.
func TestIntegrationPoolFieldsRoundTrip(t *testing.T) {
	e := startOperator(t)
	c := e.Management.Client
	nova := poolNova(t, c, "rtp")
	pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "rt-pool", Namespace: namespace}}
	pool.Spec.NovaRef.Name = nova.Name
	pool.Spec.NodeSelector = map[string]string{"roundtrip.anvil.c5c3.io/pool": "true"}
	if err := c.Create(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, poolSubject(pool), poolRoundTrips())
}

// poolNova creates a Nova for a round trip's pool, with a Keystone that
// answers nothing, and waits until it is Ready.
func poolNova(t *testing.T, c client.Client, name string) *novav1alpha1.Nova {
	t.Helper()
	nova := baseNova(t, c, name, "http://"+closedKeystone(t))
	waitSettled(t, c, subject{gvk: novav1alpha1.GroupVersion.WithKind("Nova"), key: client.ObjectKeyFromObject(nova),
		ready: anvilmeta.ReadyCondition, settled: anvilmeta.ReadyCondition})
	return nova
}

// poolSubject is a pool as the round trips see it. The DaemonSet names the
// pool's configuration ConfigMap by the hash of its content, so equal
// DaemonSets mount equal files; the ConfigMaps themselves are left out,
// since the pool keeps the previous ones as a rollback history. Settled is
// DaemonSetReady: the pool's Ready needs OpenStack.
func poolSubject(pool *novav1alpha1.NovaCompute) subject {
	return subject{
		gvk:      novav1alpha1.GroupVersion.WithKind("NovaCompute"),
		key:      client.ObjectKeyFromObject(pool),
		children: []schema.GroupVersionKind{appsv1.SchemeGroupVersion.WithKind("DaemonSet")},
		ready:    anvilmeta.ReadyCondition, settled: novav1alpha1.DaemonSetReadyCondition,
	}
}

// poolEntryRoundTrips remove one entry of each list and map of the pool,
// from a base that has two of each (made by
// TestIntegrationPoolEntriesRoundTrip), and put it back; a JSON merge patch
// replaces a list whole, as GitOps does when a line of it goes.
func poolEntryRoundTrips() map[string]roundTrip {
	spec := func(body string) string { return `{"spec":{` + body + `}}` }
	entry := func(field, change, back string) roundTrip {
		return roundTrip{field: "spec." + field, change: spec(change), back: spec(back)}
	}
	// Traits go to the nodes' Hypervisor objects, which the hypervisor
	// operator turns into Placement traits; the DaemonSet never holds them.
	beyond := func(rt roundTrip) roundTrip {
		rt.beyond = "traits act on the nodes' Hypervisors, not on the DaemonSet"
		return rt
	}
	return map[string]roundTrip{
		"an extraConfig key": entry("extraConfig",
			`"extraConfig":{"DEFAULT":{"sync_power_state_interval":null}}`,
			`"extraConfig":{"DEFAULT":{"sync_power_state_interval":"1200"}}`),
		"an extraConfig section": entry("extraConfig",
			`"extraConfig":{"libvirt":null}`, `"extraConfig":{"libvirt":{"hw_machine_type":"x86_64=q35"}}`),
		"a hostTraits entry": beyond(entry("hostTraits",
			`"hostTraits":[`+hostTraitsA+`]`, `"hostTraits":[`+hostTraitsA+`,`+hostTraitsB+`]`)),
		"a cpuModels entry": entry("libvirt.cpuModels",
			`"libvirt":{"cpuModels":["Haswell"]}`, `"libvirt":{"cpuModels":["Haswell","Skylake-Client"]}`),
		"a nodeSelector key": entry("nodeSelector",
			`"nodeSelector":{"roundtrip.anvil.c5c3.io/rack":null}`, `"nodeSelector":{"roundtrip.anvil.c5c3.io/rack":"r1"}`),
		"a resources limit": entry("resources.limits",
			`"resources":{"limits":{"memory":null}}`, `"resources":{"limits":{"memory":"2Gi"}}`),
		"a resources request": entry("resources.requests",
			`"resources":{"requests":{"memory":null}}`, `"resources":{"requests":{"memory":"1Gi"}}`),
		"a toleration": entry("tolerations",
			`"tolerations":[`+tolerationA+`]`, `"tolerations":[`+tolerationA+`,`+tolerationB+`]`),
		"a trait": beyond(entry("traits", `"traits":["CUSTOM_ROUNDTRIP_A"]`, `"traits":["CUSTOM_ROUNDTRIP_A","CUSTOM_ROUNDTRIP_B"]`)),
	}
}

// Entries of the base of TestIntegrationPoolEntriesRoundTrip, as JSON.
const (
	hostTraitsA = `{"nodeName":"rt-node-a","traits":["CUSTOM_ROUNDTRIP_HOST"]}`
	hostTraitsB = `{"nodeName":"rt-node-b","traits":["CUSTOM_ROUNDTRIP_HOST"]}`
	tolerationA = `{"key":"roundtrip-a","operator":"Exists","effect":"NoSchedule"}`
	tolerationB = `{"key":"roundtrip-b","operator":"Exists","effect":"NoSchedule"}`
)

// poolEntriesNotRoundTripped are the pool's lists and maps without an
// entry round trip, each with the reason.
var poolEntriesNotRoundTripped = map[string]string{
	"spec.resources.claims": "names a pod-level resource claim, which a pool's pod never has: the DaemonSet would be refused",
}

func TestPoolEntryRoundTripsCoverEveryListAndMap(t *testing.T) {
	checkEntryCoverage(t, "nova.openstack.c5c3.io_novacomputes.yaml", poolEntryRoundTrips(), poolEntriesNotRoundTripped)
}

// Removing one entry of a pool's list or map and putting it back brings
// its DaemonSet back to the base's, as removing a whole field does.
func TestIntegrationPoolEntriesRoundTrip(t *testing.T) {
	e := startOperator(t)
	c := e.Management.Client
	nova := poolNova(t, c, "rte")
	pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "rt-entries", Namespace: namespace}}
	pool.Spec.NovaRef.Name = nova.Name
	pool.Spec.NodeSelector = map[string]string{"roundtrip.anvil.c5c3.io/pool": "true", "roundtrip.anvil.c5c3.io/rack": "r1"}
	pool.Spec.ExtraConfig = map[string]map[string]string{
		"DEFAULT": {"heal_instance_info_cache_interval": "120", "sync_power_state_interval": "1200"},
		"libvirt": {"hw_machine_type": "x86_64=q35"},
	}
	pool.Spec.Libvirt = novav1alpha1.LibvirtSpec{CPUMode: "custom", CPUModels: []string{"Haswell", "Skylake-Client"}}
	pool.Spec.Resources = twoOfEach("2", "2Gi", "100m", "1Gi")
	pool.Spec.Tolerations = twoTolerations(t)
	for _, raw := range []string{hostTraitsA, hostTraitsB} {
		var ht novav1alpha1.HostTraitsSpec
		mustUnmarshal(t, raw, &ht)
		pool.Spec.HostTraits = append(pool.Spec.HostTraits, ht)
	}
	pool.Spec.Traits = []string{"CUSTOM_ROUNDTRIP_A", "CUSTOM_ROUNDTRIP_B"}
	if err := c.Create(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	runRoundTrips(t, c, poolSubject(pool), poolEntryRoundTrips())
}

// twoTolerations are the tolerations of an entry round trip's base.
func twoTolerations(t *testing.T) []corev1.Toleration {
	t.Helper()
	out := make([]corev1.Toleration, 2)
	for i, raw := range []string{tolerationA, tolerationB} {
		mustUnmarshal(t, raw, &out[i])
	}
	return out
}

// twoOfEach is a resources block with a CPU and a memory entry in both
// its limits and its requests, as an entry round trip's base holds them.
func twoOfEach(cpuLimit, memLimit, cpuRequest, memRequest string) *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit), corev1.ResourceMemory: resource.MustParse(memLimit)},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest), corev1.ResourceMemory: resource.MustParse(memRequest)},
	}
}

func mustUnmarshal(t *testing.T, raw string, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(raw), into); err != nil {
		t.Fatal(err)
	}
}
