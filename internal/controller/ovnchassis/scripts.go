package ovnchassis

import (
	"embed"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/scriptfiles"
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
	data := scriptfiles.Load(scriptFiles, "scripts")
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
