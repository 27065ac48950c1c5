package webhook_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
)

// novaComputeWebhook is the name the apiserver quotes when the webhook, not
// the schema, refuses a NovaCompute.
const novaComputeWebhook = `admission webhook "vnovacompute.openstack.c5c3.io" denied the request`

// newPool returns the pool of the guide: it joins controlplane-nova with the
// nodes labelled for pool a on compute-a, under kvm.
func newPool(name string) *novav1alpha1.NovaCompute {
	nc := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace}}
	nc.Spec.NovaRef.Name = "controlplane-nova"
	nc.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/nova-compute-pool": "a"}
	nc.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	nc.Spec.Libvirt.VirtType = "kvm"
	return nc
}

// refusal is how an invalid NovaCompute must be refused: by which layer,
// naming which field with which text.
type refusal struct {
	byWebhook bool // false: the CRD schema answers before the webhook is called
	field     string
	detail    string
}

// Every admission rule of a NovaCompute refuses an invalid pool through a
// real apiserver, naming the field: the webhook's own rules, and the schema
// rules that answer first and hold without the webhook. The guide's pool is
// admitted.
func TestIntegrationNovaComputeAdmission(t *testing.T) {
	e := startWebhooks(t)
	ctx := context.Background()
	c := e.Management.Client

	extra := func(section, key, value string) func(*novav1alpha1.NovaCompute) {
		return func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.ExtraConfig = map[string]map[string]string{section: {key: value}}
		}
	}
	maxUnavailable := func(typ string, v intstr.IntOrString) func(*novav1alpha1.NovaCompute) {
		return func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.UpdateStrategy = novav1alpha1.UpdateStrategySpec{Type: typ, MaxUnavailable: &v}
		}
	}
	offboarding := "tolerates kvm.cloud.sap/offboarding:NoExecute; openstack-hypervisor-operator deletes the compute service only after every agent pod on the node is gone, and a nova-compute that stays re-registers it"
	customTrait := "must be a custom trait: CUSTOM_ followed by upper-case letters, digits and underscores"
	keyless := func(taints string) string {
		return "tolerates every " + taints + " (operator Exists without a key): a pool runs privileged on the host network and must never run on a node whose taints keep workloads out"
	}

	creates := []struct {
		name   string
		mutate func(*novav1alpha1.NovaCompute)
		want   []refusal
	}{
		// The webhook's own rules.
		{name: "name over 63 characters", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Name = strings.Repeat("p", 64) },
			want: []refusal{{true, "metadata.name", "name must be at most 63 characters: it is the app.kubernetes.io/instance label value of every child"}}},
		{name: "selector key not a label key", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector = map[string]string{"pool a": "a"} },
			want: []refusal{{true, "spec.nodeSelector", "name part must consist of alphanumeric characters"}}},
		{name: "selector value not a label value", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector = map[string]string{"pool": "a/b"} },
			want: []refusal{{true, "spec.nodeSelector[pool]", "a valid label must be an empty string or consist of alphanumeric characters"}}},
		{name: "offboarding toleration by key", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Tolerations = []corev1.Toleration{{Key: anvilwebhook.OffboardingTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}, want: []refusal{{true, "spec.tolerations[0]", offboarding}}},
		// A wildcard trips the offboarding rule by Kubernetes' matching, and
		// the operator's policy refuses it for having no key; one answer
		// carries both.
		{name: "offboarding toleration by wildcard", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Tolerations = []corev1.Toleration{
				{Key: anvilwebhook.OffboardingTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)},
				{Operator: corev1.TolerationOpExists},
			}
		}, want: []refusal{{true, "spec.tolerations[1]", offboarding}, {true, "spec.tolerations[1]", "Forbidden: " + keyless("taint")}}},
		// The control-plane taints are NoSchedule, so a NoExecute wildcard
		// misses them, and with tolerationSeconds it passes the offboarding
		// rule too: only the policy's keyless rule is left to refuse it.
		{name: "keyless NoExecute wildcard that ends", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}}
		}, want: []refusal{{true, "spec.tolerations[0]", "Forbidden: " + keyless("NoExecute taint")}}},
		{name: "control-plane toleration", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, want: []refusal{{true, "spec.tolerations[0]", "Forbidden: tolerates the control-plane taint node-role.kubernetes.io/control-plane"}}},
		{name: "maxUnavailable with OnDelete", mutate: maxUnavailable(novav1alpha1.OnDeleteStrategy, intstr.FromInt32(1)),
			want: []refusal{{true, "spec.updateStrategy.maxUnavailable", "maxUnavailable applies to RollingUpdate only"}}},
		{name: "maxUnavailable malformed", mutate: maxUnavailable(novav1alpha1.RollingUpdateStrategy, intstr.FromString("half")),
			want: []refusal{{true, "spec.updateStrategy.maxUnavailable", `maxUnavailable must be an integer or a percentage such as "25%"`}}},
		{name: "maxUnavailable zero", mutate: maxUnavailable("", intstr.FromString("0%")),
			want: []refusal{{true, "spec.updateStrategy.maxUnavailable", "maxUnavailable must resolve to at least 1 for RollingUpdate"}}},
		{name: "owned key in extraConfig", mutate: extra("DEFAULT", "host", "node-9"),
			want: []refusal{{true, "spec.extraConfig[DEFAULT][host]", "DEFAULT.host is managed via the Kubernetes node name and must not be set in extraConfig ("}}},
		{name: "owned password in extraConfig", mutate: extra("keystone_authtoken", "password", password),
			want: []refusal{{true, "spec.extraConfig[keystone_authtoken][password]", "keystone_authtoken.password is managed via the Nova's compute contract Secret"}}},
		{name: "newline in an extraConfig value", mutate: extra("DEFAULT", "debug", "true\n[DEFAULT]\nhost = "+password),
			want: []refusal{{true, "spec.extraConfig[DEFAULT][debug]", "value must not contain a newline or carriage return"}}},
		{name: "carriage return in an extraConfig key", mutate: extra("DEFAULT", "debug\r", "true"),
			want: []refusal{{true, `spec.extraConfig[DEFAULT][debug\r]`, "key must not contain a newline or carriage return"}}},
		{name: "control character in an extraConfig section", mutate: extra("DEFAULT\x7f", "debug", "true"),
			want: []refusal{{true, `spec.extraConfig[DEFAULT\x7f]`, "section name must not contain a control character"}}},
		{name: "extraConfig key the INI reader would split", mutate: extra("DEFAULT", "host=evil", "x"),
			want: []refusal{{true, "spec.extraConfig[DEFAULT][host=evil]", "key must not be empty or contain whitespace or any of = : [ ] # ;"}}},
		{name: "trait not custom", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"HW_CPU_X86_AVX2"} },
			want: []refusal{{true, "spec.traits[0]", customTrait}}},
		{name: "host trait not custom", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.HostTraits = []novav1alpha1.HostTraitsSpec{{NodeName: "node-1", Traits: []string{"CUSTOM_ok"}}}
		}, want: []refusal{{true, "spec.hostTraits[0].traits[0]", customTrait}}},
		{name: "host trait node not a DNS subdomain", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.HostTraits = []novav1alpha1.HostTraitsSpec{{NodeName: "Node_1", Traits: []string{"CUSTOM_FAST"}}}
		}, want: []refusal{{true, "spec.hostTraits[0].nodeName", "a lowercase RFC 1123 subdomain"}}},
		{name: "every webhook error in one answer", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.NodeSelector = map[string]string{"pool": "a b"}
			nc.Spec.Traits = []string{"POOL_A"}
			nc.Spec.ExtraConfig = map[string]map[string]string{"libvirt": {"connection_uri": "qemu:///session"}}
		}, want: []refusal{
			{true, "spec.nodeSelector[pool]", "a valid label"},
			{true, "spec.traits[0]", customTrait},
			{true, "spec.extraConfig[libvirt][connection_uri]", "libvirt.connection_uri is managed via "},
		}},

		// Rules of the webhook the schema answers first, and the schema's
		// own rules: they hold without the webhook.
		{name: "empty novaRef", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NovaRef.Name = "" },
			want: []refusal{{false, "spec.novaRef.name", "should be at least 1 chars long"}}},
		{name: "empty selector", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector = map[string]string{} },
			want: []refusal{{false, "spec.nodeSelector", "should have at least 1 properties"}}},
		{name: "cpuModels without custom", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.CPUModels = []string{"Haswell"} },
			want: []refusal{{false, "spec.libvirt", "cpuModels is required when cpuMode is custom and must be empty otherwise"}}},
		{name: "custom without cpuModels", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.CPUMode = "custom" },
			want: []refusal{{false, "spec.libvirt", "cpuModels is required when cpuMode is custom and must be empty otherwise"}}},
		{name: "virtType xen", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.VirtType = "xen" },
			want: []refusal{{false, "spec.libvirt.virtType", `Unsupported value: "xen"`}}},
		{name: "imagesType rbd", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.ImagesType = "rbd" },
			want: []refusal{{false, "spec.libvirt.imagesType", `Unsupported value: "rbd"`}}},
		{name: "image with tag and digest", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova-compute", Tag: "2026.1", Digest: "sha256:" + strings.Repeat("0", 64)}
		}, want: []refusal{{false, "spec.image", "image: set exactly one of tag or digest"}}},
		{name: "image without repository", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Image = &anvilmeta.ImageSpec{Tag: "2026.1"}
		}, want: []refusal{{false, "spec.image.repository", "should be at least 1 chars long"}}},
		{name: "empty target cluster name", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef.Name = "" },
			want: []refusal{{false, "spec.targetClusterRef.name", "should be at least 1 chars long"}}},
		{name: "duplicate trait", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"CUSTOM_A", "CUSTOM_A"} },
			want: []refusal{{false, "spec.traits[1]", "Duplicate value"}}},
		{name: "duplicate host trait node", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.HostTraits = []novav1alpha1.HostTraitsSpec{{NodeName: "node-1", Traits: []string{"CUSTOM_A"}}, {NodeName: "node-1", Traits: []string{"CUSTOM_B"}}}
		}, want: []refusal{{false, "spec.hostTraits[1]", "Duplicate value"}}},
	}
	for _, tt := range creates {
		t.Run(tt.name, func(t *testing.T) {
			nc := newPool("pool-invalid")
			tt.mutate(nc)
			err := c.Create(ctx, nc)
			if err == nil {
				_ = c.Delete(ctx, nc)
			}
			assertRefused(t, err, tt.want)
		})
	}

	// The guide's pool is admitted, and the update rules are checked
	// against it.
	pool := newPool("controlplane-compute-a")
	if err := c.Create(ctx, pool); err != nil {
		t.Fatalf("the guide's pool was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, pool) })
	local := newPool("controlplane-compute-local")
	local.Spec.TargetClusterRef = nil
	if err := c.Create(ctx, local); err != nil {
		t.Fatalf("a pool on the management cluster was refused: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, local) })

	updates := []struct {
		name   string
		pool   *novav1alpha1.NovaCompute
		mutate func(*novav1alpha1.NovaCompute)
		want   []refusal // nil: admitted
	}{
		{name: "novaRef renamed", pool: pool, mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NovaRef.Name = "other-nova" },
			want: []refusal{{false, "spec", "novaRef is immutable"}}},
		{name: "targetClusterRef changed", pool: pool, mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef.Name = "compute-b" },
			want: []refusal{{false, "spec.targetClusterRef.name", "targetClusterRef is immutable"}}},
		{name: "targetClusterRef removed", pool: pool, mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef = nil },
			want: []refusal{{false, "spec", "targetClusterRef is immutable"}}},
		{name: "targetClusterRef added", pool: local, mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
		}, want: []refusal{{false, "spec", "targetClusterRef is immutable"}}},
		{name: "an owned key added later", pool: pool, mutate: extra("vnc", "server_proxyclient_address", "10.0.0.1"),
			want: []refusal{{true, "spec.extraConfig[vnc][server_proxyclient_address]", "vnc.server_proxyclient_address is managed via "}}},
		{name: "selector, strategy and overlay may change", pool: pool, mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/nova-compute-pool": "a", "zone": "az1"}
			nc.Spec.UpdateStrategy = novav1alpha1.UpdateStrategySpec{Type: novav1alpha1.OnDeleteStrategy}
			nc.Spec.ExtraConfig = map[string]map[string]string{"libvirt": {"virt_type": "qemu"}}
		}},
	}
	for _, tt := range updates {
		t.Run("update: "+tt.name, func(t *testing.T) {
			nc := &novav1alpha1.NovaCompute{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(tt.pool), nc); err != nil {
				t.Fatal(err)
			}
			tt.mutate(nc)
			err := c.Update(ctx, nc)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("a valid update was refused: %v", err)
				}
				return
			}
			assertRefused(t, err, tt.want)
		})
	}

	// The teardown removes the last finalizer by update; it passes.
	t.Run("finalizer removal of a deleting pool", func(t *testing.T) {
		nc := newPool("controlplane-compute-gone")
		nc.Finalizers = []string{"anvil.c5c3.io/test"}
		if err := c.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			t.Fatal(err)
		}
		nc.Finalizers = nil
		if err := c.Update(ctx, nc); err != nil {
			t.Fatalf("removing the finalizer of a deleting pool was refused: %v", err)
		}
	})
}

// assertRefused fails unless err refuses the pool through the wanted layer,
// naming every wanted field with its text, without repeating the test
// password.
func assertRefused(t *testing.T, err error, want []refusal) {
	t.Helper()
	if err == nil {
		t.Fatal("admitted")
	}
	msg := err.Error()
	for _, w := range want {
		if byWebhook := strings.Contains(msg, novaComputeWebhook); byWebhook != w.byWebhook {
			t.Errorf("refused by the webhook: %v, want %v: %s", byWebhook, w.byWebhook, msg)
		}
		if !strings.Contains(msg, w.field+":") || !strings.Contains(msg, w.detail) {
			t.Errorf("error %q does not name %s with %q", msg, w.field, w.detail)
		}
	}
	if strings.Contains(msg, password) {
		t.Error("the admission error repeats a value from extraConfig")
	}
}
