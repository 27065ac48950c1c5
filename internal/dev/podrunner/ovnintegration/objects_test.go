package ovnintegration

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// The objects below are what docs/design/ovn.md says the OVNCentral and
// OVNChassis controllers create, built by hand for a central and a chassis.
const ns = testenv.WorkloadNamespace

// Names and ports of one run, set by pickNamesAndPorts. The members'
// loopback addresses derive from their pod names, so each run names its
// central afresh: two runs on one host, a developer's and CI's, then
// bind different addresses, and neither meets the devstack's.
var (
	central = "ovnit"
	chassis = "ovnit-ch"
	// nbNodePorts are the northbound members' NodePorts, sbNodePort the
	// southbound member's; see nodePortRange.
	nbNodePorts [3]int32
	sbNodePort  int32
)

// nodePortRange is where the test takes its NodePorts from: 32700-32759,
// away from the devstack's 30641 (northbound) and 30651 (southbound) and
// below the kernel's ephemeral ports. A port something on this host holds
// is skipped, so two runs at once take different ones.
const nodePortRange, nodePortRangeSize = 32700, 60

var grace = int64(2)

// dbPorts are the contract's client and Raft ports of a database.
func dbPorts(db string) (client, raft int32) {
	if db == "nb" {
		return 6641, 6643
	}
	return 6642, 6644
}

// memberDNS is member i's DNS name, as the contract writes it.
func memberDNS(db string, i int) string {
	svc := central + "-" + db
	return fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local", svc, i, svc, ns)
}

// dbAddresses is the contract's list of a database's members.
func dbAddresses(db string, replicas int) string {
	port, _ := dbPorts(db)
	return memberAddresses(db, replicas, port)
}

// internalPort is the contract's listener without an RBAC role: the
// Southbound has one, the Northbound none.
func internalPort(db string) string {
	if db == "sb" {
		return "16642"
	}
	return ""
}

// memberAddresses lists the members of db at port.
func memberAddresses(db string, replicas int, port int32) string {
	var out []string
	for i := range replicas {
		out = append(out, "ssl:"+memberDNS(db, i)+":"+strconv.Itoa(int(port)))
	}
	return strings.Join(out, ",")
}

func centralLabels(component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name": "ovncentral", "app.kubernetes.io/instance": central, "app.kubernetes.io/component": component,
	}
}

func plainEnv(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}
}

func configMapVolume(name, cm string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
}

func hostPathVolume(name, path string) corev1.Volume {
	t := corev1.HostPathDirectoryOrCreate
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
}

// memberStatefulSet is a database's StatefulSet. The pods name their node,
// since no provisioner binds the claims for a scheduler; the runner keeps
// each claim in a directory of its node.
func memberStatefulSet(db string, replicas int32, node string) *appsv1.StatefulSet {
	name := central + "-" + db
	client, raft := dbPorts(db)
	labels := centralLabels(db)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, ServiceName: name, PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName: node, TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "ovsdb-server", Image: "ghcr.io/c5c3/ovn:26.03.2", Command: []string{"/bin/bash", "/scripts/ovsdb-server.sh"},
						Env: []corev1.EnvVar{
							plainEnv("OVN_DB", db), plainEnv("OVN_DB_PORT", strconv.Itoa(int(client))), plainEnv("OVN_RAFT_PORT", strconv.Itoa(int(raft))),
							plainEnv("OVN_PEER_SERVICE", name), plainEnv("OVN_REPLICAS", strconv.Itoa(int(replicas))),
							plainEnv("OVN_ELECTION_TIMER_MS", "1000"), plainEnv("OVN_INACTIVITY_PROBE_MS", "60000"),
							fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"),
							plainEnv("OVN_DB_INTERNAL_PORT", internalPort(db)),
						},
						Ports: []corev1.ContainerPort{{Name: "ovsdb", ContainerPort: client}, {Name: "raft", ContainerPort: raft}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "db", MountPath: "/var/lib/ovn"},
							{Name: "tls", MountPath: "/etc/ovn/tls", ReadOnly: true},
							{Name: "scripts", MountPath: "/scripts", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{secretVolume("tls", name+"-server"), configMapVolume("scripts", central+"-central-scripts")},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

// headlessService is a database's peer Service.
func headlessService(db string) *corev1.Service {
	client, raft := dbPorts(db)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: central + "-" + db, Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: centralLabels(db), PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "ovsdb", Port: client}, {Name: "raft", Port: raft}},
		},
	}
}

// memberService is member i's Service: ClusterIP, or NodePort at
// nodePort when it is not zero, as externallyReachable makes it.
func memberService(db string, i int, nodePort int32) *corev1.Service {
	client, _ := dbPorts(db)
	pod := fmt.Sprintf("%s-%s-%d", central, db, i)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"statefulset.kubernetes.io/pod-name": pod},
			Ports:    []corev1.ServicePort{{Name: "ovsdb", Port: client, TargetPort: intstr.FromInt32(client)}},
		},
	}
	if nodePort != 0 {
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = nodePort
	}
	return svc
}

// northdDeployment runs ovn-northd against both databases' members.
func northdDeployment(node string) *appsv1.Deployment {
	labels := centralLabels("northd")
	replicas := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: central + "-northd", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName: node, TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "ovn-northd", Image: "ghcr.io/c5c3/ovn:26.03.2", Command: []string{"/bin/bash", "/scripts/ovn-northd.sh"},
						Env: []corev1.EnvVar{plainEnv("OVN_NB_DB", dbAddresses("nb", 3)), plainEnv("OVN_SB_DB", memberAddresses("sb", 1, 16642)), plainEnv("OVN_NORTHD_THREADS", "1")},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "tls", MountPath: "/etc/ovn/tls", ReadOnly: true},
							{Name: "scripts", MountPath: "/scripts", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{secretVolume("tls", central+"-client"), configMapVolume("scripts", central+"-central-scripts")},
				},
			},
		},
	}
}

// chassisDaemonSet is one of the chassis's DaemonSets on the host network,
// on the chassis node only.
func chassisDaemonSet(name, node string, init corev1.Container, containers []corev1.Container, volumes ...corev1.Volume) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "ovnchassis", "app.kubernetes.io/instance": chassis, "app.kubernetes.io/component": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: chassis + "-" + name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork: true, TerminationGracePeriodSeconds: &grace,
					NodeSelector:   map[string]string{corev1.LabelHostname: node},
					InitContainers: []corev1.Container{init},
					Containers:     containers,
					Volumes: append([]corev1.Volume{
						hostPathVolume("run-openvswitch", "/run/openvswitch"), hostPathVolume("run-ovn", "/run/ovn"),
						hostPathVolume("etc-openvswitch", "/etc/openvswitch"),
					}, volumes...),
				},
			},
		},
	}
}

// hostMounts are the chassis containers' hostPath mounts.
var hostMounts = []corev1.VolumeMount{
	{Name: "run-openvswitch", MountPath: "/run/openvswitch"},
	{Name: "run-ovn", MountPath: "/run/ovn"},
	{Name: "etc-openvswitch", MountPath: "/etc/openvswitch"},
}

// ovsDaemonSet is the chassis's OVS DaemonSet.
func ovsDaemonSet(node string) *appsv1.DaemonSet {
	c := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "ghcr.io/c5c3/ovn:26.03.2", Command: []string{"/bin/bash", "/scripts/" + name + ".sh"}, VolumeMounts: hostMounts}
	}
	return chassisDaemonSet("ovs", node, c("host-prepare"), []corev1.Container{c("ovsdb-server"), c("ovs-vswitchd")})
}

// controllerDaemonSet is the chassis's ovn-controller DaemonSet, with the
// southbound address it is given.
func controllerDaemonSet(node, remote string) *appsv1.DaemonSet {
	mounts := append([]corev1.VolumeMount{
		{Name: "nodes", MountPath: "/etc/ovn/nodes", ReadOnly: true},
		{Name: "tls", MountPath: "/etc/ovn/tls", ReadOnly: true},
	}, hostMounts...)
	apply := corev1.Container{
		Name: "apply-node", Image: "ghcr.io/c5c3/ovn:26.03.2", Command: []string{"/bin/bash", "/scripts/apply-node.sh"},
		Env: []corev1.EnvVar{
			fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("NODE_IP", "status.hostIP"),
			plainEnv("OVN_REMOTE", remote), plainEnv("OVN_REMOTE_PROBE_INTERVAL_MS", "60000"),
		},
		VolumeMounts: mounts,
	}
	ctl := corev1.Container{
		Name: "ovn-controller", Image: "ghcr.io/c5c3/ovn:26.03.2", Command: []string{"/bin/bash", "/scripts/ovn-controller.sh"},
		Env: []corev1.EnvVar{plainEnv("OVN_REMOTE", remote)}, VolumeMounts: mounts,
	}
	return chassisDaemonSet("ovn-controller", node, apply, []corev1.Container{ctl},
		configMapVolume("nodes", chassis+"-nodes"), hostPathVolume("tls", ovnv1alpha1.ChassisIdentityHostPath))
}
