package ovnchassis

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/workload"
)

// BuildMaintenanceJob returns the Job of one node action. The apply and
// identity Jobs run on the node itself; chassis-del runs anywhere on the
// chassis's cluster with the departed node's identity; evacuate runs on
// the management cluster with the central's client identity. None is retried:
// a failure is reported, and deleting the Job runs it again.
func BuildMaintenanceJob(c *ovnv1alpha1.OVNChassis, a NodeAction, addrs CentralAddresses) *batchv1.Job {
	// Nothing in the Jobs talks to an apiserver.
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Tolerations: c.Spec.Tolerations, AutomountServiceAccountToken: ptr.To(false)}
	script := func(name string) []string { return []string{"/bin/bash", scriptsMountPath + "/" + name} }
	tls := corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: c.Status.ClientSecretName, DefaultMode: ptr.To[int32](0o440),
	}}}
	tlsMount := corev1.VolumeMount{Name: "tls", MountPath: tlsPath, ReadOnly: true}
	scriptsMount := workload.ScriptsMount(scriptsMountPath)
	switch a.Kind {
	case ApplyJob:
		spec.NodeName = a.Entry.Name
		spec.HostNetwork = true
		spec.Containers = []corev1.Container{applyNodeContainer(c, addrs.Remote)}
		spec.Volumes = []corev1.Volume{
			hostPath("run-openvswitch", ovsRunPath, corev1.HostPathDirectory),
			{Name: "nodes", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: NodesName(c)},
			}}},
			workload.ScriptsVolume(ScriptsName(c)),
		}
	case IdentityJob:
		spec.NodeName = a.Entry.Name
		spec.Containers = []corev1.Container{identityContainer(c)}
		spec.Volumes = []corev1.Volume{
			{Name: "identity", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: IdentityName(c, a.Entry.Name), DefaultMode: ptr.To[int32](0o400),
			}}},
			hostPath("chassis-tls", hostTLSPath, corev1.HostPathDirectoryOrCreate),
			workload.ScriptsVolume(ScriptsName(c)),
		}
	case EvacuateJob:
		// On the management cluster, beside the central whose client
		// identity it presents: that key opens the Northbound, so it never
		// leaves that cluster. Nothing of a hypervisor's applies there.
		spec.Tolerations = nil
		spec.SecurityContext = restrictedPod()
		central := tls
		central.Secret = &corev1.SecretVolumeSource{SecretName: addrs.ClientSecret, DefaultMode: ptr.To[int32](0o440)}
		spec.Containers = []corev1.Container{{
			Name: "evacuate", Image: c.ResolvedImage(), Command: script("evacuate.sh"),
			Env:             []corev1.EnvVar{{Name: "OVN_NB_DB", Value: addrs.NB}, {Name: "SYSTEM_ID", Value: a.Entry.SystemID}},
			VolumeMounts:    []corev1.VolumeMount{tlsMount, scriptsMount},
			SecurityContext: withCapabilities(),
		}}
		spec.Volumes = []corev1.Volume{central, workload.ScriptsVolume(ScriptsName(c))}
	case ChassisDelJob:
		// The departed node's own identity: the Southbound lets it delete
		// that node's rows and no other.
		identity := tls
		identity.Secret = &corev1.SecretVolumeSource{SecretName: IdentityName(c, a.Entry.Name), DefaultMode: ptr.To[int32](0o400)}
		spec.Containers = []corev1.Container{{
			Name: "chassis-del", Image: c.ResolvedImage(), Command: script("chassis-del.sh"),
			Env:             []corev1.EnvVar{{Name: "OVN_SB_DB", Value: addrs.SB}, {Name: "SYSTEM_ID", Value: a.Entry.SystemID}},
			VolumeMounts:    []corev1.VolumeMount{tlsMount, scriptsMount},
			SecurityContext: withCapabilities(),
		}}
		spec.Volumes = []corev1.Volume{identity, workload.ScriptsVolume(ScriptsName(c))}
	}
	// An identity Job is made for one issued certificate, any other Job
	// for one rendered entry.
	hash := a.Entry.Hash()
	if a.Kind == IdentityJob {
		hash = a.Entry.IdentityHash
	}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: JobName(c, a.Kind, a.Entry.Name), Namespace: c.Namespace, Labels: childLabels(c, a.Kind),
			Annotations: map[string]string{nodeAnnotation: a.Entry.Name, configHashAnnotation: hash},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To[int64](300),
			TTLSecondsAfterFinished: ptr.To[int32](86400),
			Template:                workload.WithPullPolicy(pullPolicy(c), corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector(c, a.Kind)}, Spec: spec}),
		},
	}
}

// restrictedPod runs a Job of the management cluster as the OVN image's
// unprivileged user; the group reads the mounted key.
func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(ovnUID), RunAsGroup: ptr.To(ovnUID), FSGroup: ptr.To(ovnUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// ovnUID is the OVN image's unprivileged user and group.
const ovnUID int64 = 42424

// identityContainer installs the node's identity from its Secret into the
// node's identity directory. It needs no capability: root owns both.
func identityContainer(c *ovnv1alpha1.OVNChassis) corev1.Container {
	return corev1.Container{
		Name: "install-identity", Image: c.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/install-identity.sh"},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "identity", MountPath: identityMountPath, ReadOnly: true},
			{Name: "chassis-tls", MountPath: tlsPath},
			workload.ScriptsMount(scriptsMountPath),
		},
		SecurityContext: withCapabilities(),
	}
}

// BuildClientSecret returns what the chassis publishes of the central's
// client identity on its cluster: the CA alone, the trust anchor of the
// central's listeners, under the name the guide looks for. The key stays
// on the management cluster: it opens the Northbound, which no chassis
// needs, since evacuation runs there.
func BuildClientSecret(c *ovnv1alpha1.OVNChassis, source *corev1.Secret) *corev1.Secret {
	data := map[string][]byte{"ca.crt": source.Data["ca.crt"]}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: ClientSecretName(c), Namespace: c.Namespace, Labels: childLabels(c, ClientSecretComponent)},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// clientKeys are the keys of a client identity, in the order they are
// checked.
var clientKeys = []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"}

// MissingClientKey returns the first key of the identity s lacks or holds
// empty.
func MissingClientKey(s *corev1.Secret) string {
	for _, k := range clientKeys {
		if len(s.Data[k]) == 0 {
			return k
		}
	}
	return ""
}
