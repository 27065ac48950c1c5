package novacompute

import (
	"maps"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/workload"
)

// Labels of every object of a pool; the pool's pods are selected by them.
const (
	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = "app.kubernetes.io/component"
	poolNameValue  = "novacompute"
	computeValue   = "nova-compute"
)

// DaemonSetName is the pool's DaemonSet: {pool}-nova-compute.
func DaemonSetName(pool string) string { return pool + "-nova-compute" }

// PodLabels select the pool's nova-compute pods.
func PodLabels(pool string) map[string]string {
	return map[string]string{nameLabel: poolNameValue, instanceLabel: pool, componentLabel: computeValue}
}

// DaemonSetInput is what the DaemonSet is rendered from.
type DaemonSetInput struct {
	// Image is the resolved nova-compute image and PullPolicy its policy.
	Image      string
	PullPolicy corev1.PullPolicy
	// ContractSecret names the contract on the pool's cluster.
	ContractSecret string
	// PoolConfigMap names the current configuration ConfigMap.
	PoolConfigMap string
	// ContractHash is the contract's hash for the pod annotation.
	ContractHash string
	// Nodes are the pool's entries after the Nodes step.
	Nodes []novav1alpha1.NovaComputeNode
	// Deleting pools run pods only on nodes that still drain.
	Deleting bool
}

// BuildDaemonSet renders {pool}-nova-compute, or nil when no node needs a
// pod, in which case the step deletes the owned DaemonSet. It is pure.
func BuildDaemonSet(pool *novav1alpha1.NovaCompute, in DaemonSetInput) *appsv1.DaemonSet {
	affinity := buildAffinity(pool, in)
	if affinity == nil {
		return nil
	}
	labels := PodLabels(pool.Name)
	resources := ResolveResources(pool.Spec.Resources)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(pool.Name), Namespace: pool.Namespace, Labels: maps.Clone(labels)},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			UpdateStrategy: buildUpdateStrategy(pool.Spec.UpdateStrategy),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      maps.Clone(labels),
					Annotations: map[string]string{novav1alpha1.ComputeConfigHashAnnotation: in.ContractHash},
				},
				Spec: corev1.PodSpec{
					// nova-compute never calls the Kubernetes API: a token in a
					// privileged pod would only be something to steal.
					AutomountServiceAccountToken: ptr.To(false),
					HostNetwork:                  true,
					DNSPolicy:                    corev1.DNSClusterFirstWithHostNet,
					Affinity:                     affinity,
					Tolerations:                  append([]corev1.Toleration(nil), pool.Spec.Tolerations...),
					SecurityContext:              &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					InitContainers:               buildInitContainers(in, resources),
					Containers:                   []corev1.Container{buildComputeContainer(in, resources)},
					Volumes:                      buildVolumes(in),
				},
			},
		},
	}
}

// buildAffinity places the pool's pods by required node affinity, or
// returns nil when no node needs a pod.
//
// The terms are OR'ed: one term for the selector (minus the nodes in
// Conflict) unless the pool is being deleted, and one term per Draining
// node, so that a node that left the selector keeps its pod until its
// servers are gone.
func buildAffinity(pool *novav1alpha1.NovaCompute, in DaemonSetInput) *corev1.Affinity {
	var terms []corev1.NodeSelectorTerm
	if !in.Deleting {
		if term, ok := selectorTerm(pool.Spec.NodeSelector, nodesInPhase(in.Nodes, novav1alpha1.NodeConflict)); ok {
			terms = append(terms, term)
		}
	}
	for _, n := range nodesInPhase(in.Nodes, novav1alpha1.NodeDraining) {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n},
		}}})
	}
	if len(terms) == 0 {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

// selectorTerm matches the pool's node selector minus the conflicting
// nodes; it is not ok for an empty selector, whose term would select every
// node outside the conflicts.
func selectorTerm(selector map[string]string, conflicts []string) (corev1.NodeSelectorTerm, bool) {
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var term corev1.NodeSelectorTerm
	for _, k := range keys {
		term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{
			Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{selector[k]},
		})
	}
	for _, n := range conflicts {
		term.MatchFields = append(term.MatchFields, corev1.NodeSelectorRequirement{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{n},
		})
	}
	return term, len(term.MatchExpressions) > 0
}

// nodesInPhase lists the names of the nodes in phase, sorted so that the
// rendered terms do not change with the order of the pool's entries.
func nodesInPhase(nodes []novav1alpha1.NovaComputeNode, phase string) []string {
	var names []string
	for _, n := range nodes {
		if n.Phase == phase {
			names = append(names, n.Name)
		}
	}
	sort.Strings(names)
	return names
}

// buildUpdateStrategy maps the pool's strategy to the DaemonSet's,
// replacing one pod at a time unless the pool says otherwise.
func buildUpdateStrategy(spec novav1alpha1.UpdateStrategySpec) appsv1.DaemonSetUpdateStrategy {
	if spec.Type == novav1alpha1.OnDeleteStrategy {
		return appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}
	maxUnavailable := intstr.FromInt32(1)
	if spec.MaxUnavailable != nil {
		maxUnavailable = *spec.MaxUnavailable
	}
	// No maxSurge: two nova-compute processes of one host must never
	// run at once.
	return appsv1.DaemonSetUpdateStrategy{
		Type:          appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
	}
}

// buildInitContainers prepare the host before nova-compute starts: the
// instances directory must exist, and the node's OVN chassis must be up.
func buildInitContainers(in DaemonSetInput, resources corev1.ResourceRequirements) []corev1.Container {
	return []corev1.Container{
		{
			Name:            "create-instances-dir",
			Image:           in.Image,
			ImagePullPolicy: in.PullPolicy,
			Command:         []string{"mkdir", "-p", "-m", "0755", novaStatePath + "/instances"},
			Resources:       resources,
			SecurityContext: &corev1.SecurityContext{
				RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0), Privileged: ptr.To(false),
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"DAC_OVERRIDE"}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "var-lib-nova", MountPath: novaStatePath}},
		},
		{
			Name:            "wait-for-chassis",
			Image:           in.Image,
			ImagePullPolicy: in.PullPolicy,
			Command:         []string{"python3", "-c", waitForChassisScript},
			Env:             []corev1.EnvVar{{Name: "OVSDB_SOCKET", Value: ovsdbSocket}},
			Resources:       resources,
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](42424), AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "run-openvswitch", MountPath: ovsRunPath, ReadOnly: true}},
		},
	}
}

// buildComputeContainer runs nova-compute privileged, since it drives
// libvirt, devices and mounts of the host.
func buildComputeContainer(in DaemonSetInput, resources corev1.ResourceRequirements) corev1.Container {
	bidirectional := corev1.MountPropagationBidirectional
	return corev1.Container{
		Name:            computeValue,
		Image:           in.Image,
		ImagePullPolicy: in.PullPolicy,
		Command: []string{"nova-compute",
			"--config-file", computeConfigMountPath + "/nova-compute.conf",
			"--config-dir", poolConfigMountPath},
		Env:       computeEnv(in.ContractSecret),
		Resources: resources,
		SecurityContext: &corev1.SecurityContext{
			Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(false),
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "compute-config", MountPath: computeConfigMountPath, ReadOnly: true},
			{Name: "pool-config", MountPath: poolConfigMountPath, ReadOnly: true},
			{Name: "run-libvirt", MountPath: "/run/libvirt"},
			{Name: "var-lib-nova", MountPath: novaStatePath, MountPropagation: &bidirectional},
			{Name: "run-openvswitch", MountPath: ovsRunPath},
			{Name: "dev", MountPath: "/dev"},
			{Name: "sys-fs-cgroup", MountPath: "/sys/fs/cgroup", ReadOnly: true},
			{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
			{Name: "etc-iscsi", MountPath: "/etc/iscsi"},
			{Name: "etc-nvme", MountPath: "/etc/nvme"},
			{Name: "etc-multipath", MountPath: "/etc/multipath"},
			{Name: "etc-multipath-conf", MountPath: "/etc/multipath.conf"},
			{Name: "tmp", MountPath: "/tmp"},
		},
	}
}

// computeEnv gives nova-compute what only the pod knows (its node and host
// IP) and the contract's secrets, which stay out of the configuration files.
func computeEnv(contractSecret string) []corev1.EnvVar {
	env := []corev1.EnvVar{
		workload.FieldEnv("OS_DEFAULT__HOST", "spec.nodeName"),
		workload.FieldEnv("OS_DEFAULT__MY_IP", "status.hostIP"),
		workload.FieldEnv("OS_VNC__SERVER_PROXYCLIENT_ADDRESS", "status.hostIP"),
		workload.FieldEnv("OS_LIBVIRT__LIVE_MIGRATION_INBOUND_ADDR", "status.hostIP"),
		secretEnv("OS_DEFAULT__TRANSPORT_URL", contractSecret, "transport_url"),
	}
	// Every client section authenticates as the service user; the
	// contract's fragment carries no password, so it comes from the env.
	for _, section := range []string{"KEYSTONE_AUTHTOKEN", "SERVICE_USER", "PLACEMENT", "NEUTRON", "CINDER"} {
		env = append(env, secretEnv("OS_"+section+"__PASSWORD", contractSecret, "password"))
	}
	return env
}

// buildVolumes are the contract, the pool's configuration and the host
// paths nova-compute shares with libvirt, OVS and the storage initiators.
func buildVolumes(in DaemonSetInput) []corev1.Volume {
	hostDir := corev1.HostPathDirectoryOrCreate
	fileOrCreate := corev1.HostPathFileOrCreate
	hostPath := func(name, path string, typ *corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: typ}}}
	}
	return []corev1.Volume{
		{Name: "compute-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: in.ContractSecret}}},
		{Name: "pool-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: in.PoolConfigMap}}}},
		hostPath("run-libvirt", "/run/libvirt", &hostDir),
		hostPath("var-lib-nova", novaStatePath, &hostDir),
		hostPath("run-openvswitch", ovsRunPath, &hostDir),
		hostPath("dev", "/dev", nil),
		hostPath("sys-fs-cgroup", "/sys/fs/cgroup", nil),
		hostPath("lib-modules", "/lib/modules", nil),
		hostPath("etc-iscsi", "/etc/iscsi", &hostDir),
		hostPath("etc-nvme", "/etc/nvme", &hostDir),
		hostPath("etc-multipath", "/etc/multipath", &hostDir),
		hostPath("etc-multipath-conf", "/etc/multipath.conf", &fileOrCreate),
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
}

// ResolveResources fills each resource the pool leaves out with its
// default: a CPU request of 150m without a limit, and 768Mi of memory as
// request and limit. Named resources are kept verbatim, extras too. A
// default never crosses a value the pool sets, because a request above its
// limit is refused: a default request is capped at the pool's limit, and a
// default memory limit is raised to the pool's request.
func ResolveResources(spec *corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	if spec != nil {
		for k, v := range spec.Requests {
			out.Requests[k] = v
		}
		for k, v := range spec.Limits {
			out.Limits[k] = v
		}
	}
	defaultRequest := func(name corev1.ResourceName, def resource.Quantity) {
		if _, ok := out.Requests[name]; ok {
			return
		}
		if limit, ok := out.Limits[name]; ok && limit.Cmp(def) < 0 {
			def = limit
		}
		out.Requests[name] = def
	}
	defaultRequest(corev1.ResourceCPU, resource.MustParse("150m"))
	defaultRequest(corev1.ResourceMemory, resource.MustParse("768Mi"))
	if _, ok := out.Limits[corev1.ResourceMemory]; !ok {
		limit := resource.MustParse("768Mi")
		if req := out.Requests[corev1.ResourceMemory]; req.Cmp(limit) > 0 {
			limit = req
		}
		out.Limits[corev1.ResourceMemory] = limit
	}
	return out
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

// waitForChassisScript polls the node's OVSDB every 2 s until
// Open_vSwitch.external_ids carries system-id, which the node's OVN chassis
// writes. Until then nova-compute could not plug a port. Any error means
// "not yet".
const waitForChassisScript = `import json, os, socket, time
path = os.environ.get("OVSDB_SOCKET", "/run/openvswitch/db.sock")
query = {"method": "transact", "id": 1, "params": ["Open_vSwitch",
         {"op": "select", "table": "Open_vSwitch", "where": [], "columns": ["external_ids"]}]}
while True:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(path)
        s.sendall(json.dumps(query).encode())
        buf = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            try:
                reply = json.loads(buf)
                break
            except ValueError:
                continue
        s.close()
        for row in reply["result"][0]["rows"]:
            if any(k == "system-id" for k, _ in row["external_ids"][1]):
                raise SystemExit(0)
    except SystemExit:
        raise
    except Exception:
        pass
    print("waiting for the OVN chassis to set system-id in " + path, flush=True)
    time.sleep(2)
`
