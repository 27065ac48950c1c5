package ovncentral

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/workload"
)

// Components of the central besides the databases.
const (
	northdComponent = "northd"
	relayComponent  = "sb-relay"
	backupComponent = "backup"
)

// BuildNorthd returns northd's Deployment: the contract of
// docs/design/ovn.md, "northd". Replicas share the work through a lock in
// the Southbound database, so more than one only adds standbys.
func BuildNorthd(c *ovnv1alpha1.OVNCentral, hash string) *appsv1.Deployment {
	container := corev1.Container{
		Name:    "ovn-northd",
		Image:   c.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/" + northdScript},
		Env: []corev1.EnvVar{
			{Name: "OVN_NB_DB", Value: Northbound.MemberAddresses(c)},
			{Name: "OVN_SB_DB", Value: Southbound.InternalMemberAddresses(c)},
			{Name: "OVN_NORTHD_THREADS", Value: strconv.Itoa(int(c.Spec.Northd.ResolvedThreads()))},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tls", MountPath: tlsMountPath, ReadOnly: true},
			workload.ScriptsMount(scriptsMountPath),
			{Name: "run", MountPath: runMountPath},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
		}},
		SecurityContext: restrictedContainer(),
	}
	return buildDeployment(c, NorthdName(c), northdComponent, c.Spec.Northd.ResolvedReplicas(), hash, container,
		tlsVolume(ClientSecretName(c)))
}

// BuildRelay returns the Southbound relay's Deployment: ovsdb-server in
// relay mode, which serves the Southbound to chassis from memory and keeps
// their connections off the Raft members. It takes its listener from the
// Southbound's own connection table, the one with the ovn-controller
// role, so it checks each chassis's writes against its certificate as the
// members do; it dials the members at their listener without a role,
// since it forwards writes it has already checked.
func BuildRelay(c *ovnv1alpha1.OVNCentral, hash string) *appsv1.Deployment {
	relay := c.Spec.Relay
	container := corev1.Container{
		Name:  "ovsdb-relay",
		Image: c.ResolvedImage(),
		Command: []string{
			"ovsdb-server",
			"--remote=db:" + Southbound.Schema + ",SB_Global,connections",
			"--private-key=" + tlsMountPath + "/tls.key",
			"--certificate=" + tlsMountPath + "/tls.crt",
			"--ca-cert=" + tlsMountPath + "/ca.crt",
			"--unixctl=" + runMountPath + "/ovsdb-relay.ctl",
			"--log-file=/dev/stdout",
			"relay:" + Southbound.Schema + ":" + Southbound.InternalMemberAddresses(c),
		},
		Ports: []corev1.ContainerPort{{Name: "ovsdb", ContainerPort: relayPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tls", MountPath: tlsMountPath, ReadOnly: true},
			{Name: "run", MountPath: runMountPath},
		},
		SecurityContext: restrictedContainer(),
	}
	if relay.Resources != nil {
		container.Resources = *relay.Resources
	}
	d := buildDeployment(c, RelayName(c), relayComponent, relay.ResolvedReplicas(), hash, container,
		tlsVolume(RelayName(c)))
	d.Spec.Template.Spec.NodeSelector = relay.NodeSelector
	d.Spec.Template.Spec.Tolerations = relay.Tolerations
	return d
}

// BuildRelayService returns the relay's Service, a NodePort while the relay
// is externally reachable.
func BuildRelayService(c *ovnv1alpha1.OVNCentral) *corev1.Service {
	port := corev1.ServicePort{Name: "ovsdb", Port: relayPort, TargetPort: intstr.FromInt32(relayPort), Protocol: corev1.ProtocolTCP}
	svcType := corev1.ServiceTypeClusterIP
	if c.Spec.Relay.ExternallyReachable {
		svcType = corev1.ServiceTypeNodePort
		port.NodePort = c.Spec.Relay.ResolvedNodePort()
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: RelayName(c), Namespace: c.Namespace, Labels: labels(c, relayComponent)},
		Spec: corev1.ServiceSpec{
			Type:     svcType,
			Selector: selector(c, relayComponent),
			Ports:    []corev1.ServicePort{port},
		},
	}
}

// buildDeployment wraps one container into a Deployment of the central
// that surges one pod at a time and never drops below its replicas.
func buildDeployment(c *ovnv1alpha1.OVNCentral, name, component string, replicas int32, hash string,
	container corev1.Container, tls corev1.Volume) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c, component)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector(c, component)},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: workload.WithPullPolicy(pullPolicy(c), corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector(c, component), Annotations: map[string]string{ScriptsHashAnnotation: hash}},
				Spec: corev1.PodSpec{
					Containers:      []corev1.Container{container},
					Affinity:        spreadAcrossNodes(selector(c, component)),
					SecurityContext: restrictedPod(),
					Volumes: []corev1.Volume{
						tls,
						workload.ScriptsVolume(ScriptsName(c)),
						{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			}),
		},
	}
}

// DeploymentRolledOut reports whether every replica runs the current
// template and is available.
func DeploymentRolledOut(d *appsv1.Deployment) (bool, string) {
	want := ptr.Deref(d.Spec.Replicas, 1)
	st := d.Status
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas < want || st.AvailableReplicas < want || st.Replicas > want {
		return false, strconv.Itoa(int(st.AvailableReplicas)) + " of " + strconv.Itoa(int(want)) + " replicas available"
	}
	return true, ""
}

// BuildBackupClaim returns the claim the backups are written to.
func BuildBackupClaim(c *ovnv1alpha1.OVNCentral) *corev1.PersistentVolumeClaim {
	b := c.Spec.ResolvedBackup()
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: BackupName(c), Namespace: c.Namespace, Labels: labels(c, backupComponent)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(b.Storage.Size),
			}},
		},
	}
	if b.Storage.StorageClassName != "" {
		pvc.Spec.StorageClassName = ptr.To(b.Storage.StorageClassName)
	}
	return pvc
}

// BuildBackupCronJob returns the CronJob that backs both databases up with
// ovsdb-client. A run never overlaps the one before, and a failed run is
// not retried: the next schedule is the retry, and the failure is
// reported.
func BuildBackupCronJob(c *ovnv1alpha1.OVNCentral, hash string) *batchv1.CronJob {
	b := c.Spec.ResolvedBackup()
	container := corev1.Container{
		Name:    "backup",
		Image:   c.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/" + backupScript},
		Env: []corev1.EnvVar{
			{Name: "OVN_NB_DB", Value: Northbound.MemberAddresses(c)},
			{Name: "OVN_SB_DB", Value: Southbound.MemberAddresses(c)},
			{Name: "BACKUP_RETENTION_DAYS", Value: strconv.Itoa(int(*b.RetentionDays))},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tls", MountPath: tlsMountPath, ReadOnly: true},
			workload.ScriptsMount(scriptsMountPath),
			{Name: "backup", MountPath: "/backup"},
		},
		SecurityContext: restrictedContainer(),
	}
	return &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: BackupName(c), Namespace: c.Namespace, Labels: labels(c, backupComponent)},
		Spec: batchv1.CronJobSpec{
			Schedule:                   b.Schedule,
			Suspend:                    ptr.To(b.Suspend),
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			SuccessfulJobsHistoryLimit: ptr.To[int32](3),
			FailedJobsHistoryLimit:     ptr.To[int32](3),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(c, backupComponent)},
				Spec: batchv1.JobSpec{
					BackoffLimit:          ptr.To[int32](0),
					ActiveDeadlineSeconds: ptr.To[int64](1800),
					Template: workload.WithPullPolicy(pullPolicy(c), corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: selector(c, backupComponent), Annotations: map[string]string{ScriptsHashAnnotation: hash}},
						Spec: corev1.PodSpec{
							RestartPolicy:   corev1.RestartPolicyNever,
							Containers:      []corev1.Container{container},
							SecurityContext: restrictedPod(),
							Volumes: []corev1.Volume{
								tlsVolume(ClientSecretName(c)),
								workload.ScriptsVolume(ScriptsName(c)),
								{Name: "backup", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: BackupName(c)}}},
							},
						},
					}),
				},
			},
		},
	}
}
