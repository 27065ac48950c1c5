package neutronmetadataagent

import (
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
)

// Labels of the agent's children.
const (
	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = "app.kubernetes.io/component"
	managedByLabel = "app.kubernetes.io/managed-by"
	nameValue      = "neutronmetadataagent"
	managedByValue = "neutronmetadataagent-operator"
)

// Components of the agent's children; the selector of the DaemonSet uses
// AgentComponent, so it never changes.
const (
	// AgentComponent labels the DaemonSet, its pods and its container.
	AgentComponent = "metadata-agent"
	// configComponent labels the rendered configuration ConfigMaps; the
	// pruning of old ones lists them by it.
	configComponent  = "config"
	scriptsComponent = "scripts"
)

// ConfigHashAnnotation on the pod template carries the hash of the
// configuration and the scripts the pods run, so that a change to either
// rolls the pods even where the ConfigMap name alone would not (the
// scripts ConfigMap keeps its name).
const ConfigHashAnnotation = "neutron.c5c3.io/config-hash"

// DaemonSetName is the agent's DaemonSet: {agent}-metadata-agent.
func DaemonSetName(a *neutronv1alpha1.NeutronMetadataAgent) string { return a.Name + "-metadata-agent" }

// ScriptsName is the ConfigMap of the scripts the pods run:
// {agent}-scripts.
func ScriptsName(a *neutronv1alpha1.NeutronMetadataAgent) string { return a.Name + "-scripts" }

// ConfigMapName is the immutable ConfigMap of one rendered configuration:
// {agent}-config-<hash8>, so a new configuration is a new object and the
// pods roll onto it.
func ConfigMapName(a *neutronv1alpha1.NeutronMetadataAgent, hash8 string) string {
	return a.Name + "-config-" + hash8
}

// childLabels are every child's labels.
func childLabels(a *neutronv1alpha1.NeutronMetadataAgent, component string) map[string]string {
	return map[string]string{
		nameLabel: nameValue, instanceLabel: a.Name, componentLabel: component, managedByLabel: managedByValue,
	}
}

// selector selects the agent's pods; it is immutable on the DaemonSet, so
// it carries nothing that may change.
func selector(a *neutronv1alpha1.NeutronMetadataAgent) map[string]string {
	return map[string]string{nameLabel: nameValue, instanceLabel: a.Name, componentLabel: AgentComponent}
}
