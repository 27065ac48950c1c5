package neutronmetadataagent

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

// scriptFiles are what the agent's pods run besides the agent itself.
//
//go:embed scripts/*.sh
var scriptFiles embed.FS

// scriptsMountPath is where the scripts ConfigMap is mounted.
const scriptsMountPath = "/scripts"

// BuildScripts returns the ConfigMap of the agent's scripts. They live in
// a ConfigMap rather than inline in the pod template, so that they can be
// read, linted and changed as files.
func BuildScripts(a *neutronv1alpha1.NeutronMetadataAgent) *corev1.ConfigMap {
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
		ObjectMeta: metav1.ObjectMeta{Name: ScriptsName(a), Namespace: a.Namespace, Labels: childLabels(a, scriptsComponent)},
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
