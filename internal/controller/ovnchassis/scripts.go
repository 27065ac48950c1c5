package ovnchassis

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// scriptFiles are what the chassis's pods and Jobs run; docs/design/ovn.md
// is their contract.
//
//go:embed scripts/*.sh
var scriptFiles embed.FS

// scriptsMountPath is where the scripts ConfigMap is mounted.
const scriptsMountPath = "/scripts"

// BuildScripts returns the ConfigMap of the chassis's scripts.
func BuildScripts(c *ovnv1alpha1.OVNChassis) *corev1.ConfigMap {
	entries, err := scriptFiles.ReadDir("scripts")
	if err != nil {
		panic(err) // embedded at build time
	}
	data := map[string]string{}
	for _, e := range entries {
		b, err := scriptFiles.ReadFile("scripts/" + e.Name())
		if err != nil {
			panic(err)
		}
		data[e.Name()] = string(b)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ScriptsName(c), Namespace: c.Namespace, Labels: childLabels(c, "scripts")},
		Data:       data,
	}
}

// BuildNodes returns the ConfigMap of node entries, one key per node.
func BuildNodes(c *ovnv1alpha1.OVNChassis, entries []NodeEntry) *corev1.ConfigMap {
	data := map[string]string{}
	for _, e := range entries {
		data[e.Name] = e.Render()
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: NodesName(c), Namespace: c.Namespace, Labels: childLabels(c, "nodes")},
		Data:       data,
	}
}

// contentHash is a short hash of a ConfigMap's data.
func contentHash(cm *corev1.ConfigMap) string {
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k + "\x00" + cm.Data[k] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
