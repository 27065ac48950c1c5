package neutronmetadataagent

import (
	"embed"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/controller/scriptfiles"
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
	data := scriptfiles.Load(scriptFiles, "scripts")
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: ScriptsName(a), Namespace: a.Namespace, Labels: childLabels(a, scriptsComponent)},
		Data:       data,
	}
}
