package novacompute

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestBusHosts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"rabbit://nova:s3cr$$et@bus.example:5671/nova", "bus.example:5671"},
		{"rabbit://a:p1@h1:5671,b:p@2@h2:5672/", "h1:5671,h2:5672"},
		{"rabbit://h3:5672", "h3:5672"},
		{"rabbit://user:pa/ss@h4:5672/v", "h4:5672"},
		{"rabbit://u:a,b@h5:5672/", "?,h5:5672"},
		{"rabbit://u:p@[::1]:5671/", "[::1]:5671"},
		{"", ""},
	}
	for _, tt := range tests {
		got := BusHosts(tt.in)
		if got != tt.want {
			t.Errorf("BusHosts(%q) = %q, want %q", tt.in, got, tt.want)
		}
		for _, secret := range []string{"s3cr", "p1", "p@2", "pa/ss", "pa", "a,b"} {
			if strings.Contains(got, secret) {
				t.Errorf("BusHosts(%q) = %q carries a password", tt.in, got)
			}
		}
	}
}

func TestKeystoneURL(t *testing.T) {
	tests := []struct{ name, conf, want string }{
		{"the placement section's", "[keystone_authtoken]\nauth_url = http://a/v3\n[placement]\nusername = nova\nauth_url = https://ks.example/v3\n", "https://ks.example/v3"},
		{"none", "[DEFAULT]\ndebug = true\n", ""},
		{"another section only", "[neutron]\nauth_url = http://n/v3\n", ""},
	}
	for _, tt := range tests {
		if got := KeystoneURL([]byte(tt.conf)); got != tt.want {
			t.Errorf("%s: KeystoneURL = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDecidePreflightFailure(t *testing.T) {
	ep := PreflightEndpoints{Bus: "bus.example:5671", Keystone: "https://ks.example/v3"}
	tests := []struct {
		code       int32
		wantReason string
		wantPart   string
	}{
		{10, novav1alpha1.BusUnreachableReason, "no TCP connection to the message bus at bus.example:5671"},
		{11, novav1alpha1.BusTLSFailedReason, "bus.example:5671 failed TLS"},
		{12, novav1alpha1.BusAuthenticationFailedReason, "bus.example:5671 refused"},
		{20, novav1alpha1.KeystoneUnreachableReason, "Keystone at https://ks.example/v3"},
		{21, novav1alpha1.KeystoneTLSFailedReason, "Keystone at https://ks.example/v3 failed TLS"},
		{22, novav1alpha1.KeystoneAuthenticationFailedReason, "refused the nova service user's password"},
		{30, novav1alpha1.PlacementUnreachableReason, "Placement"},
		{31, novav1alpha1.PlacementTLSFailedReason, "Placement"},
		{1, novav1alpha1.PreflightErrorReason, "exit code 1"},
		{40, novav1alpha1.PreflightErrorReason, "exit code 40"},
	}
	for _, tt := range tests {
		reason, msg := DecidePreflightFailure(tt.code, ep, "compute cluster a")
		if reason != tt.wantReason || !strings.Contains(msg, tt.wantPart) || !strings.Contains(msg, "compute cluster a") {
			t.Errorf("code %d: %s %q, want %s containing %q", tt.code, reason, msg, tt.wantReason, tt.wantPart)
		}
	}
}

func TestPreflightHashFollowsEndpointsNotThePassword(t *testing.T) {
	base := map[string][]byte{"nova-compute.conf": []byte("[placement]\nauth_url = http://ks/v3\n"), "transport_url": []byte("rabbit://u:p@h:5671/"),
		"password": []byte("one"), "ca.crt": []byte("CA")}
	with := func(k, v string) map[string][]byte {
		m := map[string][]byte{}
		for key, val := range base {
			m[key] = val
		}
		m[k] = []byte(v)
		return m
	}
	h := PreflightHash(base)
	if PreflightHash(with("password", "two")) != h {
		t.Error("a rotated password alone changed the preflight hash")
	}
	for _, k := range []string{"nova-compute.conf", "transport_url", "ca.crt"} {
		if PreflightHash(with(k, "other")) == h {
			t.Errorf("a changed %s kept the preflight hash", k)
		}
	}
}

func TestBuildPreflightJob(t *testing.T) {
	pool := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "openstack"}}
	pool.Spec.NodeSelector = map[string]string{"pool": "a"}
	pool.Spec.Tolerations = []corev1.Toleration{{Key: "hv", Operator: corev1.TolerationOpExists}}
	job := BuildPreflightJob(pool, PreflightInput{Image: "ghcr.io/c5c3/nova:2026.1", ContractSecret: "nova-compute-config", Hash: "h1",
		Nodes: []novav1alpha1.NovaComputeNode{{Name: "n1", Phase: novav1alpha1.NodeConflict}}})
	spec := job.Spec.Template.Spec
	c := spec.Containers[0]
	switch {
	case job.Name != "a-preflight" || job.Annotations[PreflightHashAnnotation] != "h1":
		t.Errorf("job %s annotations %v", job.Name, job.Annotations)
	case *job.Spec.BackoffLimit != 0 || spec.RestartPolicy != corev1.RestartPolicyNever:
		t.Error("the check must run once")
	case !spec.HostNetwork || *spec.AutomountServiceAccountToken:
		t.Error("the check must take nova-compute's network path and carry no token")
	case c.SecurityContext.Privileged != nil || !*c.SecurityContext.RunAsNonRoot || *c.SecurityContext.AllowPrivilegeEscalation:
		t.Error("the check must run unprivileged")
	case len(c.Env) != 0:
		t.Errorf("the check must read credentials from its mount, not env: %v", c.Env)
	case len(c.Command) != 4 || c.Command[3] != computeConfigMountPath || spec.Volumes[0].Secret.SecretName != "nova-compute-config":
		t.Errorf("command %v volumes %v", c.Command[3:], spec.Volumes)
	case len(spec.Tolerations) != 1:
		t.Error("the check must tolerate what the pool tolerates")
	}
	term := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	if term.MatchExpressions[0].Key != "pool" || term.MatchFields[0].Values[0] != "n1" {
		t.Errorf("the check must run on a node of the pool, not a conflicting one: %+v", term)
	}
}

func TestHasNodeToCheckFrom(t *testing.T) {
	n := func(phase string) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: "n", Phase: phase}
	}
	tests := []struct {
		nodes []novav1alpha1.NovaComputeNode
		want  bool
	}{
		{nil, false},
		{[]novav1alpha1.NovaComputeNode{n(novav1alpha1.NodeDraining), n(novav1alpha1.NodeConflict)}, false},
		{[]novav1alpha1.NovaComputeNode{n(novav1alpha1.NodeConflict), n(novav1alpha1.NodePending)}, true},
		{[]novav1alpha1.NovaComputeNode{n(novav1alpha1.NodeActive)}, true},
	}
	for i, tt := range tests {
		if got := hasNodeToCheckFrom(tt.nodes); got != tt.want {
			t.Errorf("case %d: %v, want %v", i, got, tt.want)
		}
	}
}

func TestHoldsExistingDaemonSet(t *testing.T) {
	n := func(phase string) novav1alpha1.NovaComputeNode {
		return novav1alpha1.NovaComputeNode{Name: phase, Phase: phase}
	}
	tests := []struct {
		name  string
		nodes []novav1alpha1.NovaComputeNode
		want  bool
	}{
		{"active nodes keep the old template", []novav1alpha1.NovaComputeNode{n(novav1alpha1.NodeActive), n(novav1alpha1.NodePending)}, true},
		{"a drain needs the new rendering", []novav1alpha1.NovaComputeNode{n(novav1alpha1.NodeActive), n(novav1alpha1.NodeDraining)}, false},
		{"no node to check from", []novav1alpha1.NovaComputeNode{n(novav1alpha1.NodeConflict)}, false},
		{"no node at all", nil, false},
	}
	for _, tt := range tests {
		if got := HoldsExistingDaemonSet(tt.nodes); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The script travels in the container's command, where the kubelet turns
// "$$" into "$" and expands $(NAME): a dollar sign in it would not run as
// written (an undoubling of the contract's passwords did not).
func TestPreflightScriptHasNoDollarSign(t *testing.T) {
	if i := strings.Index(preflightScript, "$"); i >= 0 {
		t.Errorf("the preflight script holds a dollar sign at byte %d", i)
	}
}
