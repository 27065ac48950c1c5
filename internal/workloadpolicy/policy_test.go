package workloadpolicy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestCheck(t *testing.T) {
	pool := func(mut func(*novav1alpha1.NovaCompute)) *novav1alpha1.NovaCompute {
		p := &novav1alpha1.NovaCompute{}
		if mut != nil {
			mut(p)
		}
		return p
	}
	image := func(repo string) func(*novav1alpha1.NovaCompute) {
		return func(p *novav1alpha1.NovaCompute) {
			p.Spec.Image = &anvilmeta.ImageSpec{Repository: repo, Tag: "2026.1"}
		}
	}
	tolerate := func(t corev1.Toleration) func(*novav1alpha1.NovaCompute) {
		return func(p *novav1alpha1.NovaCompute) { p.Spec.Tolerations = []corev1.Toleration{t} }
	}
	tests := []struct {
		name     string
		policy   Policy
		pool     *novav1alpha1.NovaCompute
		wantPath string // "" means allowed
		// wantDetail is a substring of the refusal; "" matches any.
		wantDetail string
	}{
		{name: "the default image", pool: pool(nil)},
		{name: "an image below the default prefix", pool: pool(image("ghcr.io/c5c3/nova-compute"))},
		{name: "an image elsewhere", pool: pool(image("evil.example.com/nova-compute")), wantPath: "spec.image.repository"},
		{name: "a look-alike host", pool: pool(image("ghcr.io/c5c3.evil.example.com/nova")), wantPath: "spec.image.repository"},
		{name: "the prefix itself is no repository", pool: pool(image("ghcr.io/c5c3/")), wantPath: "spec.image.repository"},
		{name: "an exact entry", policy: Policy{ImageRepositories: []string{"registry.local/nova-compute"}}, pool: pool(image("registry.local/nova-compute"))},
		{name: "an exact entry is no prefix", policy: Policy{ImageRepositories: []string{"registry.local/nova"}}, pool: pool(image("registry.local/nova-compute")), wantPath: "spec.image.repository"},
		{name: "the default image outside a custom list", policy: Policy{ImageRepositories: []string{"registry.local/"}}, pool: pool(nil), wantPath: "spec.image"},
		{name: "a hypervisor taint", pool: pool(tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "kvm", Effect: corev1.TaintEffectNoSchedule}))},
		{name: "the control-plane taint", pool: pool(tolerate(corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists})),
			wantPath: "spec.tolerations[0]", wantDetail: "control-plane taint node-role.kubernetes.io/control-plane"},
		{name: "the legacy master taint", pool: pool(tolerate(corev1.Toleration{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})),
			wantPath: "spec.tolerations[0]", wantDetail: "control-plane taint node-role.kubernetes.io/master"},
		{name: "everything (Exists without a key)", pool: pool(tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists})),
			wantPath: "spec.tolerations[0]", wantDetail: "tolerates every taint (operator Exists without a key)"},
		// The control-plane taints are NoSchedule, so these wildcards miss
		// them; they are refused for having no key.
		{name: "every NoExecute taint", pool: pool(tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})),
			wantPath: "spec.tolerations[0]", wantDetail: "tolerates every NoExecute taint (operator Exists without a key)"},
		{name: "every PreferNoSchedule taint", pool: pool(tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule})),
			wantPath: "spec.tolerations[0]", wantDetail: "set key to the taint"},
		{name: "a keyless wildcard that ends", pool: pool(tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)})),
			wantPath: "spec.tolerations[0]", wantDetail: "without a key"},
		{name: "every value of a named NoExecute taint", pool: pool(tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}))},
		{name: "each bad toleration once, by index", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.Tolerations = []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpExists},
				{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			}
		}), wantPath: "spec.tolerations[1]", wantDetail: "without a key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.policy.CheckNovaCompute(tt.pool)
			if tt.wantPath == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tt.wantPath || errs[0].Type != field.ErrorTypeForbidden ||
				!strings.Contains(errs[0].Detail, "privileged") || !strings.Contains(errs[0].Detail, tt.wantDetail) {
				t.Errorf("errs = %v, want one refusal of %s saying %q", errs, tt.wantPath, tt.wantDetail)
			}
		})
	}
}

func TestCheckNamespace(t *testing.T) {
	for _, tt := range []struct {
		name   string
		labels map[string]string
		ok     bool
	}{
		{name: "opted in", labels: map[string]string{novav1alpha1.PrivilegedPoolsLabel: "true"}, ok: true},
		{name: "no labels"},
		{name: "another value", labels: map[string]string{novav1alpha1.PrivilegedPoolsLabel: "yes"}},
		{name: "Pod Security's privileged level is no opt-in", labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-x", Labels: tt.labels}}
			err := CheckNamespace(ns)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Field != "metadata.namespace" || !strings.Contains(err.Detail, "team-x") || !strings.Contains(err.Detail, novav1alpha1.PrivilegedPoolsLabel) {
				t.Errorf("err = %v, want a refusal naming the namespace and the label", err)
			}
		})
	}
}
