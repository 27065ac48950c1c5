package ovncentral

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// scriptFiles are the scripts the central's pods run; docs/design/ovn.md is
// their contract.
//
//go:embed scripts/*.sh
var scriptFiles embed.FS

// Script names inside the ConfigMap.
const (
	ovsdbServerScript = "ovsdb-server.sh"
	northdScript      = "ovn-northd.sh"
	backupScript      = "backup.sh"
	scriptsMountPath  = "/scripts"
)

// BuildScripts returns the ConfigMap of the central's scripts.
func BuildScripts(c *ovnv1alpha1.OVNCentral) *corev1.ConfigMap {
	data := map[string]string{}
	for _, name := range []string{ovsdbServerScript, northdScript, backupScript} {
		b, err := scriptFiles.ReadFile("scripts/" + name)
		if err != nil {
			// The files are embedded at build time; a missing one is a
			// broken build, not a runtime condition.
			panic(err)
		}
		data[name] = string(b)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ScriptsName(c), Namespace: c.Namespace, Labels: labels(c, "scripts")},
		Data:       data,
	}
}

// scriptsHash is a short hash of the ConfigMap's content, put on pod
// templates so that a new script rolls the pods that run it.
func scriptsHash(cm *corev1.ConfigMap) string {
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(cm.Data[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
