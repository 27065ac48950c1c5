package neutronmetadataagent

import (
	"crypto/sha256"
	"encoding/hex"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// SharedSecretEnv is the variable the agent reads the metadata shared
// secret from: oslo.config maps OS_<GROUP>__<OPTION> onto [DEFAULT]
// metadata_proxy_shared_secret, so the value never enters a ConfigMap.
const SharedSecretEnv = "OS_DEFAULT__METADATA_PROXY_SHARED_SECRET"

// SBConnectionEnv hands the Southbound address to wait-for-chassis.
const SBConnectionEnv = "OVN_SB_CONNECTION"

// Volume names of the agent's pods.
const (
	volOVSRun  = "run-openvswitch"
	volNetns   = "run-netns"
	volState   = "state"
	volConfig  = "config"
	volScripts = "scripts"
	volOVNTLS  = "ovn-tls"
	volCA      = "nova-metadata-ca"
)

// DaemonSetInput is what a pass resolved for the DaemonSet.
type DaemonSetInput struct {
	// Chassis is where the pods run and what they connect to.
	Chassis ResolvedChassis
	// ConfigMapName is the rendered configuration's ConfigMap.
	ConfigMapName string
	// ConfigHash covers the configuration and the scripts.
	ConfigHash string
	// SecretHash is SharedSecretHash of the shared secret's value, "" when
	// the agent references none.
	SecretHash string
}

// SharedSecretHash is the hex SHA-256 of the shared secret's value: it
// goes onto the pod template so that a rotation rolls the pods, which read
// the value from their environment only at start. The value itself never
// leaves its Secret.
func SharedSecretHash(value []byte) string {
	sum := sha256.Sum256(value)
	return hex.EncodeToString(sum[:])
}

// BuildDaemonSet returns the agent on every node of its chassis. The pods
// share the host's network, Open vSwitch socket and network namespaces,
// because the agent creates a namespace per network with an haproxy in it
// that the instances' 169.254.169.254 traffic reaches. They mount no Secret
// but the chassis's client identity and, with https, the CA bundle.
func BuildDaemonSet(a *neutronv1alpha1.NeutronMetadataAgent, in DaemonSetInput) *appsv1.DaemonSet {
	annotations := map[string]string{ConfigHashAnnotation: in.ConfigHash}
	if in.SecretHash != "" {
		annotations[neutronv1alpha1.MetadataSecretHashAnnotation] = in.SecretHash
	}
	policy := corev1.PullPolicy(a.Spec.Image.PullPolicy)
	init := waitForChassisContainer(a, in.Chassis.SBAddress)
	init.ImagePullPolicy = policy
	agent := agentContainer(a)
	agent.ImagePullPolicy = policy
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(a), Namespace: a.Namespace, Labels: childLabels(a, AgentComponent)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector(a)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector(a), Annotations: annotations},
				Spec: corev1.PodSpec{
					// Nothing in the pods talks to an apiserver.
					AutomountServiceAccountToken: ptr.To(false),
					HostNetwork:                  true,
					DNSPolicy:                    corev1.DNSClusterFirstWithHostNet,
					NodeSelector:                 in.Chassis.NodeSelector,
					Tolerations:                  in.Chassis.Tolerations,
					// The agent container is privileged, which lifts seccomp
					// for it anyway; the profile still confines the init.
					SecurityContext: &corev1.PodSecurityContext{
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: []corev1.Container{init},
					Containers:     []corev1.Container{agent},
					Volumes:        volumes(a, in),
				},
			},
		},
	}
}

// waitForChassisContainer holds the agent until the node's chassis is in
// the Southbound. It runs as root only because the OVS socket is root's;
// it gets no capability and cannot escalate.
func waitForChassisContainer(a *neutronv1alpha1.NeutronMetadataAgent, sb string) corev1.Container {
	return corev1.Container{
		Name: "wait-for-chassis", Image: a.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/wait-for-chassis.sh"},
		Env:     []corev1.EnvVar{{Name: SBConnectionEnv, Value: sb}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volOVSRun, MountPath: ovsRunPath},
			{Name: volOVNTLS, MountPath: tlsPath, ReadOnly: true},
			{Name: volScripts, MountPath: scriptsMountPath, ReadOnly: true},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(false),
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// agentContainer runs neutron-ovn-metadata-agent. It is privileged and
// root: privsep refuses to start otherwise, and the agent creates network
// namespaces and veths on the host, mounted back to the host through
// /run/netns.
func agentContainer(a *neutronv1alpha1.NeutronMetadataAgent) corev1.Container {
	c := corev1.Container{
		Name: AgentComponent, Image: a.ResolvedImage(),
		Command: []string{"neutron-ovn-metadata-agent", "--config-file", ConfigPath},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volConfig, MountPath: configDir, ReadOnly: true},
			{Name: volState, MountPath: statePath},
			{Name: volOVSRun, MountPath: ovsRunPath},
			{Name: volNetns, MountPath: netnsPath, MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
			{Name: volOVNTLS, MountPath: tlsPath, ReadOnly: true},
		},
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0)},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-S", metadataProxySocket}}},
			PeriodSeconds: 5,
		},
	}
	if ref := a.Spec.NovaMetadata.SharedSecretRef; ref != nil {
		c.Env = append(c.Env, corev1.EnvVar{Name: SharedSecretEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: a.Spec.NovaMetadata.ResolvedSharedSecretKey(),
		}}})
	}
	if mountsCA(a) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volCA, MountPath: caDir, ReadOnly: true})
	}
	if a.Spec.Resources != nil {
		c.Resources = *a.Spec.Resources
	}
	return c
}

// volumes are the pods' volumes: host paths the agent shares with OVS
// and the host, the node's chassis identity, the configuration and
// scripts, and the CA bundle's Secret.
func volumes(a *neutronv1alpha1.NeutronMetadataAgent, in DaemonSetInput) []corev1.Volume {
	v := []corev1.Volume{
		hostPath(volOVSRun, ovsRunPath),
		hostPath(volNetns, netnsPath),
		// The agent's state (the proxy socket, haproxy's files, locks)
		// belongs to this pod; a new pod starts clean.
		{Name: volState, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volConfig, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: in.ConfigMapName}, DefaultMode: ptr.To[int32](0o444),
		}}},
		{Name: volScripts, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ScriptsName(a)}, DefaultMode: ptr.To[int32](0o555),
		}}},
		// The node's own chassis identity, which the chassis installs
		// there: the Southbound lets it write only this node's
		// Chassis_Private row.
		hostPath(volOVNTLS, ovnv1alpha1.ChassisIdentityHostPath),
	}
	if mountsCA(a) {
		// Only the bundle's key, projected as ca.crt whatever it is called
		// in the Secret, so auth_ca_cert is one fixed path; no subPath, so
		// a renewed bundle reaches the running pods.
		ref := a.Spec.NovaMetadata
		v = append(v, corev1.Volume{Name: volCA, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: ref.CABundleSecretRef.Name, DefaultMode: ptr.To[int32](0o444),
			Items: []corev1.KeyToPath{{Key: ref.ResolvedCABundleKey(), Path: caFile}},
		}}})
	}
	return v
}

// hostPath is a hostPath volume created on the node if it is missing.
func hostPath(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate),
	}}}
}
