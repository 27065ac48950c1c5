package ovncentral

import (
	"embed"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/scriptfiles"
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
	data := scriptfiles.Load(scriptFiles, "scripts")
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ScriptsName(c), Namespace: c.Namespace, Labels: labels(c, "scripts")},
		Data:       data,
	}
}
