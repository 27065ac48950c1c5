package novacompute

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// Timing of the discovery Job: it must finish within 5 minutes, and a
// finished one stays 30 s for its status to be read before it is replaced.
const (
	discoveryDeadlineSeconds = 300
	discoveryTTLSeconds      = 300
	discoveryKeep            = 30 // seconds a finished Job is kept
	manageConfigMountPath    = "/etc/nova/nova.conf.d"
	// openstackUID is the uid the OpenStack images run as.
	openstackUID = 42424
)

// DiscoverJobName is {nova}-discover-hosts, shortened with a hash of the
// Nova's name when it would pass 63 characters.
func DiscoverJobName(nova string) string {
	name := nova + novav1alpha1.DiscoverHostsSuffix
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(nova))
	keep := 63 - len(novav1alpha1.DiscoverHostsSuffix) - 9
	return nova[:keep] + "-" + hex.EncodeToString(sum[:])[:8] + novav1alpha1.DiscoverHostsSuffix
}

// BuildDiscoverJob renders the Job that maps new compute hosts into their
// cell: nova-manage cell_v2 discover_hosts with the Nova's image and its
// database configuration. Every pool of the Nova shares it. It is pure.
func BuildDiscoverJob(nova *novav1alpha1.Nova, manageConfig string) *batchv1.Job {
	image := nova.Spec.Image.Reference()
	labels := map[string]string{nameLabel: "nova", instanceLabel: nova.Name, componentLabel: "discover-hosts"}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: DiscoverJobName(nova.Name), Namespace: nova.Namespace, Labels: maps.Clone(labels)},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To[int64](discoveryDeadlineSeconds),
			TTLSecondsAfterFinished: ptr.To[int32](discoveryTTLSeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					// nova-manage talks to the databases, never to Kubernetes.
					AutomountServiceAccountToken: ptr.To(false),
					RestartPolicy:                corev1.RestartPolicyNever,
					SecurityContext:              &corev1.PodSecurityContext{FSGroup: ptr.To[int64](openstackUID)},
					Containers: []corev1.Container{{
						Name:            "discover-hosts",
						Image:           image,
						ImagePullPolicy: corev1.PullPolicy(nova.Spec.Image.PullPolicy),
						Command: []string{"nova-manage", "--config-dir", manageConfigMountPath,
							"cell_v2", "discover_hosts", "--verbose"},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](openstackUID), AllowPrivilegeEscalation: ptr.To(false),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: manageConfigMountPath, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: manageConfig}}}},
				},
			},
		},
	}
}

// JobPredates tells whether a discovery Job started before the newest
// nova-compute start among the hosts still unmapped, so that it cannot have
// seen them: a host registers only after its process starts. Such a Job is
// replaced as soon as it finishes instead of being kept for discoveryKeep,
// which would only delay the host. Both times are whole seconds, so an
// equal second is not before. It is pure.
func JobPredates(job *batchv1.Job, newestStart time.Time) bool {
	return job.Status.StartTime != nil && !newestStart.IsZero() && job.Status.StartTime.Time.Before(newestStart)
}
