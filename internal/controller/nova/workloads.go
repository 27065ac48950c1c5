package nova

import (
	"cmp"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/novaconfig"
)

// Labels of the control plane's objects; the pods of one service are
// selected by instance and component.
const (
	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = novav1alpha1.ComponentLabel
	novaNameValue  = "nova"
	// ConfigHashAnnotation on a pod template carries the hash of
	// {nova}-config, so a changed nova.conf rolls the pods, in order.
	ConfigHashAnnotation = "nova.openstack.c5c3.io/config-hash"
)

// Ports of the services that listen.
const (
	apiPort      = 8774
	metadataPort = 8775
)

// nonRootUID is the user the Nova images run as; nothing in the control
// plane needs root.
const nonRootUID int64 = 42436

// Component is one of the control plane's long-running services.
type Component struct {
	// Name is the suffix of the Deployment, Service and PDB, and the
	// container's name with a "nova-" prefix.
	Name string
	// Port is the port it serves on; zero for services that only talk to
	// the bus.
	Port int32
	// WSGI is the application uWSGI serves, for the HTTP services.
	WSGI string
	// CPU and Memory are the requests; Memory is also the limit.
	CPU, Memory string
}

// Components in rollout order: each group starts rolling only when the one
// before runs its new template everywhere. The conductor goes first because
// it is what reads and writes the database for everyone else; the
// scheduler next; the API services last, so that a new API never talks to
// an old conductor.
var rolloutGroups = [][]Component{
	{{Name: "conductor", CPU: "100m", Memory: "512Mi"}},
	{{Name: "scheduler", CPU: "100m", Memory: "512Mi"}},
	{
		{Name: "api", Port: apiPort, WSGI: "/usr/bin/nova-api-wsgi", CPU: "200m", Memory: "1Gi"},
		{Name: "metadata", Port: metadataPort, WSGI: "/usr/bin/nova-metadata-wsgi", CPU: "100m", Memory: "512Mi"},
		{Name: "novncproxy", Port: inputs.NoVNCProxyPort, CPU: "50m", Memory: "256Mi"},
	},
}

// ComponentName is the name of a component's Deployment, Service and
// PodDisruptionBudget: {nova}-{component}.
func ComponentName(nova *novav1alpha1.Nova, c Component) string { return nova.Name + "-" + c.Name }

// componentLabels select one component's pods.
func componentLabels(nova *novav1alpha1.Nova, c Component) map[string]string {
	return map[string]string{nameLabel: novaNameValue, instanceLabel: nova.Name, componentLabel: c.Name}
}

// wanted reports whether the Nova runs c: the console proxy only while it
// is enabled.
func wanted(nova *novav1alpha1.Nova, c Component) bool {
	return c.Name != "novncproxy" || nova.Spec.Console().Enabled
}

// replicasOf is how many pods c runs: the console proxy holds only
// websocket sessions and runs one, the rest follow spec.replicas.
func replicasOf(nova *novav1alpha1.Nova, c Component) int32 {
	if c.Name == "novncproxy" {
		return 1
	}
	return ptr.Deref(nova.Spec.Replicas, 2)
}

// BuildDeployment renders {nova}-{component}. configHash is the hash of
// {nova}-config, stamped on the pod template. It is pure.
func BuildDeployment(nova *novav1alpha1.Nova, c Component, configHash string) *appsv1.Deployment {
	labels := componentLabels(nova, c)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: ComponentName(nova, c), Namespace: nova.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicasOf(nova, c)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				// One new pod at a time beside the old ones: the service
				// never drops below its replicas during a roll.
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{ConfigHashAnnotation: configHash}},
				Spec:       podSpec(nova, []corev1.Container{container(nova, c)}, corev1.RestartPolicyAlways),
			},
		},
	}
}

// container is a component's one container.
func container(nova *novav1alpha1.Nova, c Component) corev1.Container {
	ct := corev1.Container{
		Name:            "nova-" + c.Name,
		Image:           nova.Spec.Image.Reference(),
		ImagePullPolicy: corev1.PullPolicy(nova.Spec.Image.PullPolicy),
		Command:         []string{"nova-" + c.Name, "--config-file", configFile},
		Resources:       resources(c.CPU, c.Memory),
		SecurityContext: containerSecurity(),
		VolumeMounts:    configMounts(),
	}
	if c.Port != 0 {
		ct.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: c.Port, Protocol: corev1.ProtocolTCP}}
		// A listening service is ready when it answers; it is restarted
		// when it stops accepting connections for half a minute.
		ct.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
			PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3,
		}
		ct.LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			InitialDelaySeconds: 30, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 3,
		}
	}
	if c.WSGI != "" {
		ct.Command = uwsgiCommand(c)
		// The WSGI applications find nova.conf through these variables,
		// not through --config-file.
		ct.Env = []corev1.EnvVar{
			{Name: "OS_NOVA_CONFIG_DIR", Value: novaconfig.ControlPlaneMountPath},
			{Name: "OS_NOVA_CONFIG_FILES", Value: novaconfig.KeyControlPlaneConfig},
		}
	}
	return ct
}

// uwsgiCommand serves a component's WSGI application: two single-threaded
// workers, because eventlet is patched into Nova's API code. uWSGI's plain
// HTTP socket closes every connection after its response without saying
// so, and a client that then reuses the connection sees it reset; the
// header makes clients open a new one. The buffer takes a Keystone token.
func uwsgiCommand(c Component) []string {
	return []string{"uwsgi", "--http-socket", ":" + strconv.Itoa(int(c.Port)), "--wsgi-file", c.WSGI,
		"--master", "--die-on-term", "--need-app", "--lazy-apps", "--enable-threads", "--processes", "2", "--threads", "1",
		"--buffer-size", "65535", "--add-header", "Connection: close"}
}

// configFile is nova.conf where every container mounts it.
const configFile = novaconfig.ControlPlaneMountPath + "/" + novaconfig.KeyControlPlaneConfig

// stateMount is Nova's writable directory (lock_path lives below it); the
// root filesystem stays read-only.
const stateMount = "/var/lib/nova"

// podSpec is the pod every component and Job runs in: {nova}-config
// mounted read-only, an emptyDir for state, no service account token
// (nothing in Nova talks to the Kubernetes API), and a non-root user.
func podSpec(nova *novav1alpha1.Nova, containers []corev1.Container, restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                 restart,
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(nonRootUID), RunAsGroup: ptr.To(nonRootUID), FSGroup: ptr.To(nonRootUID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: containers,
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: ServiceConfigName(nova), DefaultMode: ptr.To[int32](0o440),
			}}},
			{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}

// configMounts mounts {nova}-config and the state directory.
func configMounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{
		{Name: "config", MountPath: novaconfig.ControlPlaneMountPath, ReadOnly: true},
		{Name: "state", MountPath: stateMount},
	}
}

// containerSecurity drops every capability and forbids escalation.
func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// resources requests cpu and memory and limits memory to the request: a
// leaking worker is restarted instead of starving its node.
func resources(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)},
	}
}

// BuildService renders the Service of a component that listens, or nil.
func BuildService(nova *novav1alpha1.Nova, c Component) *corev1.Service {
	if c.Port == 0 {
		return nil
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ComponentName(nova, c), Namespace: nova.Namespace, Labels: componentLabels(nova, c)},
		Spec: corev1.ServiceSpec{
			Selector: componentLabels(nova, c),
			Ports: []corev1.ServicePort{{
				Name: "http", Port: c.Port, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// BuildPDB renders a component's PodDisruptionBudget: a voluntary
// eviction may take one pod at a time, so a node drain never empties a
// service, and never blocks on a single-replica one either.
func BuildPDB(nova *novav1alpha1.Nova, c Component) *policyv1.PodDisruptionBudget {
	labels := componentLabels(nova, c)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: ComponentName(nova, c), Namespace: nova.Namespace, Labels: labels},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
}

// RolledOut reports whether a Deployment runs its current template on all
// its replicas, with no old pod left; the message says what it waits for.
func RolledOut(d *appsv1.Deployment) (bool, string) {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, "its controller has not seen the new template yet"
	case s.UpdatedReplicas < want:
		return false, strconv.Itoa(int(s.UpdatedReplicas)) + " of " + strconv.Itoa(int(want)) + " pods run the new template"
	case s.Replicas > s.UpdatedReplicas:
		return false, strconv.Itoa(int(s.Replicas-s.UpdatedReplicas)) + " old pods are still running"
	case s.AvailableReplicas < want:
		return false, cmp.Or(strconv.Itoa(int(s.AvailableReplicas)), "0") + " of " + strconv.Itoa(int(want)) + " pods are available"
	}
	return true, ""
}
