package ovncentral

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/workload"
)

// ovnUID is the user the OVN images run as; the central needs no root.
const ovnUID int64 = 42424

// Mount paths inside the central's pods.
const (
	dataMountPath = "/var/lib/ovn"
	tlsMountPath  = "/etc/ovn/tls"
	runMountPath  = "/var/run/ovn"
	dataVolume    = "db"
)

// BuildHeadlessService returns the database's headless Service, which gives
// each member the DNS name the others dial. Members must find each other
// before any is ready, so not-ready addresses are published.
func BuildHeadlessService(c *ovnv1alpha1.OVNCentral, d Database) *corev1.Service {
	ports := []corev1.ServicePort{
		{Name: "ovsdb", Port: d.Port, TargetPort: intstr.FromInt32(d.Port), Protocol: corev1.ProtocolTCP},
		{Name: "raft", Port: d.RaftPort, TargetPort: intstr.FromInt32(d.RaftPort), Protocol: corev1.ProtocolTCP},
	}
	if d.InternalPort != 0 {
		// Only here, never on a member's own Service, which may be a
		// NodePort: the listener without a role stays in this cluster.
		ports = append(ports, corev1.ServicePort{Name: "ovsdb-internal", Port: d.InternalPort, TargetPort: intstr.FromInt32(d.InternalPort), Protocol: corev1.ProtocolTCP})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name(c), Namespace: c.Namespace, Labels: labels(c, d.Short)},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 selector(c, d.Short),
			PublishNotReadyAddresses: true,
			Ports:                    ports,
		},
	}
}

// BuildMemberService returns member i's own Service: a ClusterIP, or a
// NodePort at nodePortBase+i while the database is externally reachable.
// One Service per member, not one for the database, because OVN clients
// take the list of members and find the leader themselves.
func BuildMemberService(c *ovnv1alpha1.OVNCentral, d Database, i int32) *corev1.Service {
	port := corev1.ServicePort{Name: "ovsdb", Port: d.Port, TargetPort: intstr.FromInt32(d.Port), Protocol: corev1.ProtocolTCP}
	svcType := corev1.ServiceTypeClusterIP
	if d.Spec(c).ExternallyReachable {
		svcType = corev1.ServiceTypeNodePort
		port.NodePort = d.NodePortBase(c) + i
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: d.MemberName(c, i), Namespace: c.Namespace, Labels: labels(c, d.Short)},
		Spec: corev1.ServiceSpec{
			Type:                     svcType,
			Selector:                 map[string]string{podNameLabel: d.MemberName(c, i)},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{port},
		},
	}
}

// BuildDatabasePDB keeps a Raft majority through voluntary disruptions.
func BuildDatabasePDB(c *ovnv1alpha1.OVNCentral, d Database) *policyv1.PodDisruptionBudget {
	return buildPDB(c, d.Name(c), d.Short)
}

// buildPDB lets one pod of a component go at a time.
func buildPDB(c *ovnv1alpha1.OVNCentral, name, component string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels(c, component)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: selector(c, component)},
		},
	}
}

// BuildStatefulSet returns the database's Raft cluster. Members start in
// order because each one after the first joins through member 0. Deleting
// the central deletes the claims with it; scaling never happens (replicas
// is immutable), so claims are kept then.
func BuildStatefulSet(c *ovnv1alpha1.OVNCentral, d Database, hash string) *appsv1.StatefulSet {
	spec := d.Spec(c)
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: dataVolume},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(spec.ResolvedStorageSize()),
			}},
		},
	}
	if spec.Storage.StorageClassName != "" {
		claim.Spec.StorageClassName = ptr.To(spec.Storage.StorageClassName)
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Name(c), Namespace: c.Namespace, Labels: labels(c, d.Short)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(spec.ResolvedReplicas()),
			ServiceName:          d.Name(c),
			PodManagementPolicy:  appsv1.OrderedReadyPodManagement,
			Selector:             &metav1.LabelSelector{MatchLabels: selector(c, d.Short)},
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: workload.WithPullPolicy(pullPolicy(c), databasePodTemplate(c, d, hash)),
		},
	}
}

// databasePodTemplate is one member's pod: the contract of
// docs/design/ovn.md, "Central database members".
func databasePodTemplate(c *ovnv1alpha1.OVNCentral, d Database, hash string) corev1.PodTemplateSpec {
	spec := d.Spec(c)
	env := []corev1.EnvVar{
		{Name: "OVN_DB", Value: d.Short},
		{Name: "OVN_DB_PORT", Value: strconv.Itoa(int(d.Port))},
		{Name: "OVN_RAFT_PORT", Value: strconv.Itoa(int(d.RaftPort))},
		{Name: "OVN_PEER_SERVICE", Value: d.Name(c)},
		{Name: "OVN_REPLICAS", Value: strconv.Itoa(int(spec.ResolvedReplicas()))},
		{Name: "OVN_ELECTION_TIMER_MS", Value: strconv.Itoa(int(spec.ResolvedElectionTimerMs()))},
		{Name: "OVN_INACTIVITY_PROBE_MS", Value: strconv.Itoa(int(spec.ResolvedInactivityProbeMs()))},
		workload.FieldEnv("POD_NAME", "metadata.name"),
		workload.FieldEnv("POD_NAMESPACE", "metadata.namespace"),
	}
	ports := []corev1.ContainerPort{
		{Name: "ovsdb", ContainerPort: d.Port, Protocol: corev1.ProtocolTCP},
		{Name: "raft", ContainerPort: d.RaftPort, Protocol: corev1.ProtocolTCP},
	}
	if d.InternalPort != 0 {
		env = append(env, corev1.EnvVar{Name: "OVN_DB_INTERNAL_PORT", Value: strconv.Itoa(int(d.InternalPort))})
		ports = append(ports, corev1.ContainerPort{Name: "ovsdb-internal", ContainerPort: d.InternalPort, Protocol: corev1.ProtocolTCP})
	}
	container := corev1.Container{
		Name:    "ovsdb-server",
		Image:   c.ResolvedImage(),
		Command: []string{"/bin/bash", scriptsMountPath + "/" + ovsdbServerScript},
		Env:     env,
		Ports:   ports,
		VolumeMounts: []corev1.VolumeMount{
			{Name: dataVolume, MountPath: dataMountPath},
			{Name: "tls", MountPath: tlsMountPath, ReadOnly: true},
			workload.ScriptsMount(scriptsMountPath),
			{Name: "run", MountPath: runMountPath},
		},
		// A member is ready once it knows its role in the cluster; one
		// that is still joining has none.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{
				"/bin/sh", "-c", "ovs-appctl -t " + runMountPath + "/ovn" + d.Short + "_db.ctl cluster/status " + d.Schema + " | grep -Eq '^Role: (leader|follower)'",
			}}},
			PeriodSeconds: 5,
		},
		SecurityContext: restrictedContainer(),
	}
	if spec.Resources != nil {
		container.Resources = *spec.Resources
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: selector(c, d.Short), Annotations: map[string]string{ScriptsHashAnnotation: hash}},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{container},
			NodeSelector:    spec.NodeSelector,
			Tolerations:     spec.Tolerations,
			Affinity:        spreadAcrossNodes(selector(c, d.Short)),
			SecurityContext: restrictedPod(),
			Volumes: []corev1.Volume{
				tlsVolume(d.ServerSecretName(c)),
				workload.ScriptsVolume(ScriptsName(c)),
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// tlsVolume mounts a certificate Secret read-only for the OVN user.
func tlsVolume(secret string) corev1.Volume {
	return corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr.To[int32](0o440),
	}}}
}

// spreadAcrossNodes prefers one pod of a component per node, so that a node
// failure costs a Raft cluster one member, not its majority. Preferred, not
// required, so a small cluster still runs.
func spreadAcrossNodes(sel map[string]string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}

// restrictedPod runs the pod as the OVN user, with the claim group-owned.
func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(ovnUID),
		RunAsGroup:     ptr.To(ovnUID),
		FSGroup:        ptr.To(ovnUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// restrictedContainer drops every capability; the central binds ports above
// 1024 and writes only its claim and its run directory.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// StatefulSetRolledOut reports whether every member runs the current
// template and is ready, and says how many are when not.
func StatefulSetRolledOut(sts *appsv1.StatefulSet, d Database) (bool, string) {
	want := ptr.Deref(sts.Spec.Replicas, 1)
	st := sts.Status
	if st.ObservedGeneration < sts.Generation || st.UpdateRevision != st.CurrentRevision && st.UpdateRevision != "" ||
		st.UpdatedReplicas < want || st.ReadyReplicas < want {
		return false, strconv.Itoa(int(st.ReadyReplicas)) + " of " + strconv.Itoa(int(want)) + " " + d.Short + " Raft members are ready"
	}
	return true, ""
}

// pullPolicy is the pull policy spec.image names, or none, for every
// container of the central's pods.
func pullPolicy(c *ovnv1alpha1.OVNCentral) corev1.PullPolicy {
	return corev1.PullPolicy(ovnv1alpha1.ResolveImage(c.Spec.Image).PullPolicy)
}
