package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ScriptsVolumeName is the name of the volume ScriptsVolume returns; the
// containers mount it by this name.
const ScriptsVolumeName = "scripts"

// scriptsMode lets every container run the scripts and nobody change them.
const scriptsMode int32 = 0o555

// FieldEnv is an environment variable whose value the downward API takes
// from the pod's field at fieldPath, such as spec.nodeName or
// status.hostIP.
func FieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

// ScriptsVolume mounts the ConfigMap configMap, which holds a workload's
// scripts, as ScriptsVolumeName, every file executable and read-only.
func ScriptsVolume(configMap string) corev1.Volume {
	return corev1.Volume{Name: ScriptsVolumeName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, DefaultMode: ptr.To(scriptsMode),
	}}}
}

// ScriptsMount mounts ScriptsVolume read-only at mountPath.
func ScriptsMount(mountPath string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: ScriptsVolumeName, MountPath: mountPath, ReadOnly: true}
}

// WithPullPolicy returns t with policy set on every init and regular
// container, so that one image's containers are pulled alike. An empty
// policy clears the field, which leaves the choice to the apiserver's
// default for the image's tag.
func WithPullPolicy(policy corev1.PullPolicy, t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	for i := range t.Spec.InitContainers {
		t.Spec.InitContainers[i].ImagePullPolicy = policy
	}
	for i := range t.Spec.Containers {
		t.Spec.Containers[i].ImagePullPolicy = policy
	}
	return t
}
