package novacompute

import (
	_ "embed" // the preflight script ships inside the operator
	"fmt"
	"maps"
	"regexp"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// preflightScript checks the bus, Keystone and Placement with the
// contract's credentials and exits with the code of the first failure.
//
//go:embed preflight/check.py
var preflightScript string

const (
	// PreflightHashAnnotation on the preflight Job is the PreflightHash of
	// the contract it checked: a Job of another hash checked endpoints the
	// pool no longer uses and is replaced.
	PreflightHashAnnotation = "nova.openstack.c5c3.io/preflight-hash"
	// preflightComponent is the component label of the preflight Job.
	preflightComponent = "preflight"
	// preflightContainer is the Job's one container.
	preflightContainer = "preflight"
	// preflightDeadline bounds one check: each endpoint has 10 s to answer.
	preflightDeadline = 120
)

// PreflightJobName is the pool's preflight Job: {pool}-preflight.
func PreflightJobName(pool string) string { return pool + "-preflight" }

// preflightKeys are the contract keys the check reads that name or secure
// an endpoint. The password is left out on purpose: a rotation alone
// changes no endpoint, and rerunning the check on every rotation would
// hold each roll back by a Job.
var preflightKeys = []string{"nova-compute.conf", "transport_url", "ca.crt"}

// PreflightHash identifies what one check proves: the contract's endpoint
// keys and the script that checks them. It is pure.
func PreflightHash(contract map[string][]byte) string {
	data := map[string][]byte{"check.py": []byte(preflightScript)}
	for _, k := range preflightKeys {
		if v, ok := contract[k]; ok {
			data[k] = v
		}
	}
	return novaconfig.Hash(data)[:16]
}

// PreflightInput is what the preflight Job is rendered from.
type PreflightInput struct {
	// Image is the pool's resolved nova-compute image and PullPolicy its
	// policy: the check runs what nova-compute will run.
	Image      string
	PullPolicy corev1.PullPolicy
	// ContractSecret names the contract on the pool's cluster.
	ContractSecret string
	// Hash is the PreflightHash of that contract.
	Hash string
	// Nodes are the pool's entries; the check runs on one that needs a pod.
	Nodes []novav1alpha1.NovaComputeNode
}

// BuildPreflightJob renders the pool's preflight Job: one pod on a node of
// the pool, on the host network as nova-compute is, that mounts only the
// contract and runs the check once, unprivileged. It is pure.
func BuildPreflightJob(pool *novav1alpha1.NovaCompute, in PreflightInput) *batchv1.Job {
	labels := map[string]string{nameLabel: poolNameValue, instanceLabel: pool.Name, componentLabel: preflightComponent}
	affinity := buildAffinity(pool, DaemonSetInput{Nodes: in.Nodes})
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: PreflightJobName(pool.Name), Namespace: pool.Namespace, Labels: maps.Clone(labels),
			Annotations: map[string]string{PreflightHashAnnotation: in.Hash}},
		Spec: batchv1.JobSpec{
			// One try: the pool decides when to check again, so a failure
			// is reported at once instead of after the Job's backoff.
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](preflightDeadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					// The check must take nova-compute's network path.
					HostNetwork: true,
					DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
					Affinity:    affinity,
					Tolerations: append([]corev1.Toleration(nil), pool.Spec.Tolerations...),
					Containers: []corev1.Container{{
						Name:            preflightContainer,
						Image:           in.Image,
						ImagePullPolicy: in.PullPolicy,
						Command:         []string{"python3", "-c", preflightScript, computeConfigMountPath},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](42424), AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities:           &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:         &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "compute-config", MountPath: computeConfigMountPath, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "compute-config", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: in.ContractSecret}}}},
				},
			},
		},
	}
}

// preflightFailures maps the check's exit codes to PreflightReady's
// reasons and what failed, in the words of the message.
var preflightFailures = map[int32]struct{ reason, what string }{
	10: {novav1alpha1.BusUnreachableReason, "no TCP connection to the message bus at %s"},
	11: {novav1alpha1.BusTLSFailedReason, "the message bus at %s failed TLS: its certificate does not verify against the contract's ca.crt"},
	12: {novav1alpha1.BusAuthenticationFailedReason, "the message bus at %s refused the contract's user, password or virtual host"},
	20: {novav1alpha1.KeystoneUnreachableReason, "no TCP connection to Keystone at %s"},
	21: {novav1alpha1.KeystoneTLSFailedReason, "Keystone at %s failed TLS: its certificate does not verify"},
	22: {novav1alpha1.KeystoneAuthenticationFailedReason, "Keystone at %s refused the nova service user's password"},
	30: {novav1alpha1.PlacementUnreachableReason, "Placement, as Keystone's catalog names it, did not answer"},
	31: {novav1alpha1.PlacementTLSFailedReason, "Placement, as Keystone's catalog names it, failed TLS: its certificate does not verify"},
}

// PreflightEndpoints are the endpoints a message names, with no user or
// password: the bus's hosts and Keystone's auth_url.
type PreflightEndpoints struct {
	Bus, Keystone string
}

// DecidePreflightFailure turns the exit code of a failed check into
// PreflightReady's reason and message; a code the check does not document
// is PreflightError. The message names the endpoint and the layer that
// failed, from what the operator read itself, never what the pod printed.
// It is pure.
func DecidePreflightFailure(exitCode int32, ep PreflightEndpoints, where string) (reason, message string) {
	f, ok := preflightFailures[exitCode]
	if !ok {
		return novav1alpha1.PreflightErrorReason, fmt.Sprintf("the check on %s ended with exit code %d; its Job's log says why", where, exitCode)
	}
	target := ep.Bus
	if strings.HasPrefix(f.reason, "Keystone") {
		target = ep.Keystone
	}
	if strings.Contains(f.what, "%s") {
		return f.reason, fmt.Sprintf("from %s, ", where) + fmt.Sprintf(f.what, target)
	}
	return f.reason, fmt.Sprintf("from %s, ", where) + f.what
}

// BusHosts returns the host:port list of a transport_url without the user
// and password each host carries. It is pure and never fails: the path is
// taken to start after the last "@", so a "/" in a password stays out, and
// a host that does not look like one is shown as "?", so that nothing but
// host names and ports can reach a message.
func BusHosts(transportURL string) string {
	rest := transportURL
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.Index(rest[strings.LastIndex(rest, "@")+1:], "/"); i >= 0 {
		rest = rest[:strings.LastIndex(rest, "@")+1+i]
	}
	var hosts []string
	for _, h := range strings.Split(rest, ",") {
		if i := strings.LastIndex(h, "@"); i >= 0 {
			h = h[i+1:]
		}
		switch {
		case h == "":
		case hostPort.MatchString(h):
			hosts = append(hosts, h)
		default:
			hosts = append(hosts, "?")
		}
	}
	return strings.Join(hosts, ",")
}

// hostPort matches a host name or address with an optional port.
var hostPort = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// KeystoneURL returns the auth_url of the [placement] section of a
// contract's nova-compute.conf, the one the check authenticates against,
// or "" when it has none. It is pure.
func KeystoneURL(conf []byte) string {
	section := ""
	for _, line := range strings.Split(string(conf), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if ok && section == "placement" && strings.TrimSpace(key) == "auth_url" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}
