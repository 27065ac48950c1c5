package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// validPool is the pool of the guide, with every optional block set to a
// value the rules admit, so that each case breaks exactly one thing.
func validPool() *novav1alpha1.NovaCompute {
	nc := &novav1alpha1.NovaCompute{}
	nc.Name, nc.Namespace = "controlplane-compute-a", "openstack"
	nc.Spec.NovaRef.Name = "controlplane-nova"
	nc.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/nova-compute-pool": "a"}
	nc.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	nc.Spec.Libvirt.VirtType = "kvm"
	nc.Spec.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova-compute", Tag: "2026.1"}
	nc.Spec.Tolerations = []corev1.Toleration{
		{Key: "node-role.kubernetes.io/compute", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: OffboardingTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	nc.Spec.UpdateStrategy = novav1alpha1.UpdateStrategySpec{Type: novav1alpha1.RollingUpdateStrategy, MaxUnavailable: ptr.To(intstr.FromString("25%"))}
	nc.Spec.ExtraConfig = map[string]map[string]string{
		"DEFAULT": {"debug": "true", "cpu_allocation_ratio": "4.0"},
		"libvirt": {"virt_type": "qemu", "hw_machine_type": "x86_64=q35"},
		"vnc":     {"enabled": "true"},
	}
	nc.Spec.Traits = []string{"CUSTOM_POOL_A", "CUSTOM_GPU_1"}
	nc.Spec.HostTraits = []novav1alpha1.HostTraitsSpec{
		{NodeName: "node-1.example.com", Traits: []string{"CUSTOM_FAST_DISK"}, Mode: novav1alpha1.TraitsModeReplace},
		{NodeName: "node-2", Traits: []string{"CUSTOM_POOL_A"}},
	}
	return nc
}

// want is one field error a case must produce.
type want struct {
	field  string
	typ    field.ErrorType
	detail string // a substring of the detail; "" matches any
}

func TestValidateNovaCompute(t *testing.T) {
	offboarding := func(tol corev1.Toleration) func(*novav1alpha1.NovaCompute) {
		return func(nc *novav1alpha1.NovaCompute) { nc.Spec.Tolerations = append(nc.Spec.Tolerations, tol) }
	}
	maxUnavailable := func(v intstr.IntOrString) func(*novav1alpha1.NovaCompute) {
		return func(nc *novav1alpha1.NovaCompute) { nc.Spec.UpdateStrategy.MaxUnavailable = &v }
	}
	extra := func(section, key, value string) func(*novav1alpha1.NovaCompute) {
		return func(nc *novav1alpha1.NovaCompute) {
			if nc.Spec.ExtraConfig[section] == nil {
				nc.Spec.ExtraConfig[section] = map[string]string{}
			}
			nc.Spec.ExtraConfig[section][key] = value
		}
	}
	owned := func(section, key string) want {
		return want{"spec.extraConfig[" + section + "][" + key + "]", field.ErrorTypeForbidden, " is managed via "}
	}

	tests := []struct {
		name   string
		mutate func(*novav1alpha1.NovaCompute)
		want   []want // nil: admitted
	}{
		{name: "the guide's pool with every block", mutate: func(*novav1alpha1.NovaCompute) {}},
		{name: "the bare guide pool", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Image, nc.Spec.Tolerations, nc.Spec.ExtraConfig, nc.Spec.Traits, nc.Spec.HostTraits = nil, nil, nil, nil, nil
			nc.Spec.UpdateStrategy = novav1alpha1.UpdateStrategySpec{}
		}},
		{name: "a local pool", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef = nil }},
		{name: "name of 63 characters", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Name = strings.Repeat("a", 63) }},
		{name: "name of 64 characters", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Name = strings.Repeat("a", 64) },
			want: []want{{"metadata.name", field.ErrorTypeInvalid,
				"name must be at most 63 characters: it is the app.kubernetes.io/instance label value of every child"}}},

		{name: "empty novaRef", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NovaRef.Name = "" },
			want: []want{{"spec.novaRef.name", field.ErrorTypeRequired, "novaRef.name must be set (the Nova this node pool joins)"}}},

		{name: "empty selector", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector = map[string]string{} },
			want: []want{{"spec.nodeSelector", field.ErrorTypeRequired, "nodeSelector must carry at least one label"}}},
		{name: "nil selector", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector = nil },
			want: []want{{"spec.nodeSelector", field.ErrorTypeRequired, "nodeSelector must carry at least one label"}}},
		{name: "selector key not a qualified name", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector["bad key"] = "a" },
			want: []want{{"spec.nodeSelector", field.ErrorTypeInvalid, "name part must consist of alphanumeric characters"}}},
		{name: "selector key with an invalid prefix", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector["Example.COM/pool"] = "a" },
			want: []want{{"spec.nodeSelector", field.ErrorTypeInvalid, "prefix part"}}},
		{name: "selector value not a label value", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector["pool"] = "a b" },
			want: []want{{"spec.nodeSelector[pool]", field.ErrorTypeInvalid, "a valid label must be an empty string or consist of"}}},
		{name: "selector value too long", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector["pool"] = strings.Repeat("a", 64) },
			want: []want{{"spec.nodeSelector[pool]", field.ErrorTypeInvalid, "must be no more than 63"}}},
		{name: "empty selector value", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NodeSelector["pool"] = "" }},

		// The offboarding rule alone. A keyless Exists below is also refused
		// by the operator's policy (internal/workloadpolicy), which the webhook
		// applies next to this function; TestIntegrationNovaComputeAdmission
		// shows both answers together.
		{name: "offboarding tolerated by key", mutate: offboarding(corev1.Toleration{
			Key: OffboardingTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
			want: []want{{"spec.tolerations[2]", field.ErrorTypeInvalid, msgOffboarding}}},
		{name: "offboarding tolerated by wildcard", mutate: offboarding(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			want: []want{{"spec.tolerations[2]", field.ErrorTypeInvalid, msgOffboarding}}},
		{name: "offboarding tolerated by wildcard for NoExecute", mutate: offboarding(corev1.Toleration{
			Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
			want: []want{{"spec.tolerations[2]", field.ErrorTypeInvalid, msgOffboarding}}},
		{name: "offboarding tolerated for every effect", mutate: offboarding(corev1.Toleration{
			Key: OffboardingTaintKey, Operator: corev1.TolerationOpExists}),
			want: []want{{"spec.tolerations[2]", field.ErrorTypeInvalid, msgOffboarding}}},
		{name: "offboarding tolerated by Equal without value", mutate: offboarding(corev1.Toleration{
			Key: OffboardingTaintKey, Effect: corev1.TaintEffectNoExecute}),
			want: []want{{"spec.tolerations[2]", field.ErrorTypeInvalid, msgOffboarding}}},
		{name: "offboarding key for NoSchedule only", mutate: offboarding(corev1.Toleration{
			Key: OffboardingTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})},
		{name: "offboarding key with another value", mutate: offboarding(corev1.Toleration{
			Key: OffboardingTaintKey, Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoExecute})},
		{name: "wildcard with tolerationSeconds", mutate: offboarding(corev1.Toleration{
			Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](0)})},
		{name: "another NoExecute taint", mutate: offboarding(corev1.Toleration{
			Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})},

		{name: "maxUnavailable with OnDelete", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.UpdateStrategy.Type = novav1alpha1.OnDeleteStrategy },
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, "maxUnavailable applies to RollingUpdate only"}}},
		{name: "failed builds threshold of 1", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.FailedBuildsWarningThreshold = ptr.To[int32](1) }},
		{name: "failed builds threshold of 0", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.FailedBuildsWarningThreshold = ptr.To[int32](0) },
			want: []want{{"spec.failedBuildsWarningThreshold", field.ErrorTypeInvalid, msgThresholdMin}}},
		{name: "negative failed builds threshold", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.FailedBuildsWarningThreshold = ptr.To[int32](-3) },
			want: []want{{"spec.failedBuildsWarningThreshold", field.ErrorTypeInvalid, msgThresholdMin}}},
		{name: "OnDelete without maxUnavailable", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.UpdateStrategy = novav1alpha1.UpdateStrategySpec{Type: novav1alpha1.OnDeleteStrategy}
		}},
		{name: "maxUnavailable with the defaulted type", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.UpdateStrategy.Type = "" }},
		{name: "maxUnavailable a word", mutate: maxUnavailable(intstr.FromString("half")),
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, `maxUnavailable must be an integer or a percentage such as "25%"`}}},
		{name: "maxUnavailable a number in a string", mutate: maxUnavailable(intstr.FromString("2")),
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, `maxUnavailable must be an integer or a percentage such as "25%"`}}},
		{name: "maxUnavailable a fractional percentage", mutate: maxUnavailable(intstr.FromString("2.5%")),
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, `maxUnavailable must be an integer or a percentage such as "25%"`}}},
		{name: "maxUnavailable 0", mutate: maxUnavailable(intstr.FromInt32(0)),
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, "maxUnavailable must resolve to at least 1 for RollingUpdate"}}},
		{name: "maxUnavailable negative", mutate: maxUnavailable(intstr.FromInt32(-1)),
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, "maxUnavailable must resolve to at least 1 for RollingUpdate"}}},
		{name: "maxUnavailable 0%", mutate: maxUnavailable(intstr.FromString("0%")),
			want: []want{{"spec.updateStrategy.maxUnavailable", field.ErrorTypeInvalid, "maxUnavailable must resolve to at least 1 for RollingUpdate"}}},
		{name: "maxUnavailable 1% rounds up", mutate: maxUnavailable(intstr.FromString("1%"))},
		{name: "maxUnavailable 3", mutate: maxUnavailable(intstr.FromInt32(3))},

		{name: "cpuModels without custom", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.CPUModels = []string{"Haswell"} },
			want: []want{{"spec.libvirt.cpuModels", field.ErrorTypeInvalid, msgCPUModels}}},
		{name: "cpuModels with host-model", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Libvirt.CPUMode, nc.Spec.Libvirt.CPUModels = "host-model", []string{"Haswell"}
		}, want: []want{{"spec.libvirt.cpuModels", field.ErrorTypeInvalid, msgCPUModels}}},
		{name: "custom without cpuModels", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.CPUMode = "custom" },
			want: []want{{"spec.libvirt.cpuModels", field.ErrorTypeRequired, msgCPUModels}}},
		{name: "custom with cpuModels", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Libvirt.CPUMode, nc.Spec.Libvirt.CPUModels = "custom", []string{"Haswell", "Skylake-Client"}
		}},

		{name: "image without repository", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Image.Repository = "" },
			want: []want{{"spec.image.repository", field.ErrorTypeRequired, "repository must be set"}}},
		{name: "image with tag and digest", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Image.Digest = "sha256:" + strings.Repeat("a", 64) },
			want: []want{{"spec.image", field.ErrorTypeInvalid, "image: set exactly one of tag or digest"}}},
		{name: "image with neither tag nor digest", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Image.Tag = "" },
			want: []want{{"spec.image", field.ErrorTypeInvalid, "image: set exactly one of tag or digest"}}},
		{name: "image by digest", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.Image.Tag, nc.Spec.Image.Digest = "", "sha256:"+strings.Repeat("a", 64)
		}},

		{name: "DEFAULT.host in extraConfig", mutate: extra("DEFAULT", "host", "node-9"), want: []want{owned("DEFAULT", "host")}},
		{name: "DEFAULT.my_ip in extraConfig", mutate: extra("DEFAULT", "my_ip", "10.0.0.1"), want: []want{owned("DEFAULT", "my_ip")}},
		{name: "DEFAULT.transport_url in extraConfig", mutate: extra("DEFAULT", "transport_url", "rabbit://"), want: []want{owned("DEFAULT", "transport_url")}},
		{name: "DEFAULT.state_path in extraConfig", mutate: extra("DEFAULT", "state_path", "/tmp"), want: []want{owned("DEFAULT", "state_path")}},
		{name: "lock_path in extraConfig", mutate: extra("oslo_concurrency", "lock_path", "/tmp"), want: []want{owned("oslo_concurrency", "lock_path")}},
		{name: "connection_uri in extraConfig", mutate: extra("libvirt", "connection_uri", "qemu:///session"), want: []want{owned("libvirt", "connection_uri")}},
		{name: "live_migration_scheme in extraConfig", mutate: extra("libvirt", "live_migration_scheme", "tcp"), want: []want{owned("libvirt", "live_migration_scheme")}},
		{name: "live_migration_with_native_tls in extraConfig", mutate: extra("libvirt", "live_migration_with_native_tls", "false"),
			want: []want{owned("libvirt", "live_migration_with_native_tls")}},
		{name: "live_migration_uri in extraConfig", mutate: extra("libvirt", "live_migration_uri", "qemu+tcp://%s/system"), want: []want{owned("libvirt", "live_migration_uri")}},
		{name: "live_migration_tunnelled in extraConfig", mutate: extra("libvirt", "live_migration_tunnelled", "true"), want: []want{owned("libvirt", "live_migration_tunnelled")}},
		{name: "live_migration_inbound_addr in extraConfig", mutate: extra("libvirt", "live_migration_inbound_addr", "10.0.0.1"),
			want: []want{owned("libvirt", "live_migration_inbound_addr")}},
		{name: "ovsdb_connection in extraConfig", mutate: extra("os_vif_ovs", "ovsdb_connection", "tcp:127.0.0.1:6640"), want: []want{owned("os_vif_ovs", "ovsdb_connection")}},
		{name: "server_proxyclient_address in extraConfig", mutate: extra("vnc", "server_proxyclient_address", "10.0.0.1"),
			want: []want{owned("vnc", "server_proxyclient_address")}},
		{name: "keystone_authtoken password in extraConfig", mutate: extra("keystone_authtoken", "password", "hunter2"), want: []want{owned("keystone_authtoken", "password")}},
		{name: "service_user password in extraConfig", mutate: extra("service_user", "password", "hunter2"), want: []want{owned("service_user", "password")}},
		{name: "placement password in extraConfig", mutate: extra("placement", "password", "hunter2"), want: []want{owned("placement", "password")}},
		{name: "neutron password in extraConfig", mutate: extra("neutron", "password", "hunter2"), want: []want{owned("neutron", "password")}},
		{name: "cinder password in extraConfig", mutate: extra("cinder", "password", "hunter2"), want: []want{owned("cinder", "password")}},
		{name: "owned key in an upper-case section", mutate: extra("LIBVIRT", "connection_uri", "qemu:///session"), want: []want{owned("LIBVIRT", "connection_uri")}},
		{name: "reported keys are admitted", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.ExtraConfig["libvirt"] = map[string]string{"virt_type": "qemu", "cpu_mode": "none", "cpu_models": "x", "images_type": "raw"}
		}},
		{name: "owned message names source and impact", mutate: extra("DEFAULT", "host", "node-9"), want: []want{{"spec.extraConfig[DEFAULT][host]", field.ErrorTypeForbidden,
			"DEFAULT.host is managed via the Kubernetes node name and must not be set in extraConfig (the compute service would register"}}},

		{name: "newline in a value", mutate: extra("DEFAULT", "debug", "true\n[DEFAULT]\nhost = evil"),
			want: []want{{"spec.extraConfig[DEFAULT][debug]", field.ErrorTypeInvalid, "value must not contain a newline or carriage return"}}},
		{name: "carriage return in a value", mutate: extra("DEFAULT", "debug", "true\r"),
			want: []want{{"spec.extraConfig[DEFAULT][debug]", field.ErrorTypeInvalid, "value must not contain a newline or carriage return"}}},
		{name: "newline in a key", mutate: extra("DEFAULT", "debug\nhost", "x"),
			want: []want{{`spec.extraConfig[DEFAULT][debug\nhost]`, field.ErrorTypeInvalid, "key must not contain a newline or carriage return"}}},
		{name: "newline in a section name", mutate: extra("libvirt]\n[DEFAULT", "host", "x"),
			want: []want{{`spec.extraConfig[libvirt]\n[DEFAULT]`, field.ErrorTypeInvalid, "section name must not contain a newline or carriage return"}}},
		{name: "NUL in a value", mutate: extra("DEFAULT", "debug", "a\x00b"),
			want: []want{{"spec.extraConfig[DEFAULT][debug]", field.ErrorTypeInvalid, "value must not contain a control character"}}},
		{name: "tab in a value", mutate: extra("DEFAULT", "debug", "a\tb"),
			want: []want{{"spec.extraConfig[DEFAULT][debug]", field.ErrorTypeInvalid, "value must not contain a control character"}}},
		{name: "NEL in a key", mutate: extra("DEFAULT", "debug\u0085", "x"),
			want: []want{{`spec.extraConfig[DEFAULT][debug\u0085]`, field.ErrorTypeInvalid, "key must not contain a control character"}}},
		{name: "equals sign in a key", mutate: extra("DEFAULT", "host=evil", "x"),
			want: []want{{"spec.extraConfig[DEFAULT][host=evil]", field.ErrorTypeInvalid, "key must not be empty or contain whitespace"}}},
		{name: "space in a key", mutate: extra("DEFAULT", "host ", "x"),
			want: []want{{"spec.extraConfig[DEFAULT][host ]", field.ErrorTypeInvalid, "key must not be empty or contain whitespace"}}},
		{name: "empty key", mutate: extra("DEFAULT", "", "x"),
			want: []want{{"spec.extraConfig[DEFAULT][]", field.ErrorTypeInvalid, "key must not be empty"}}},
		{name: "bracket in a section name", mutate: extra("libvirt][DEFAULT", "x", "y"),
			want: []want{{"spec.extraConfig[libvirt][DEFAULT]", field.ErrorTypeInvalid, "section name must not be empty, contain [ or ]"}}},
		{name: "empty section name", mutate: extra("", "x", "y"),
			want: []want{{"spec.extraConfig[]", field.ErrorTypeInvalid, "section name must not be empty"}}},
		{name: "URL and interpolation in values are fine", mutate: extra("pci", "alias", `{"name": "a1", "product_id": "%08x"}; $my_ip # not a comment`)},
		{name: "an option off the allowlist", mutate: extra("DEFAULT", "log_config_append", "/tmp/evil.conf"),
			want: []want{{"spec.extraConfig[DEFAULT][log_config_append]", field.ErrorTypeForbidden, "DEFAULT.log_config_append is not an option a pool may set in extraConfig"}}},
		{name: "the review's redirect", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.ExtraConfig["placement"] = map[string]string{"auth_type": "http_basic", "endpoint": "https://x"}
		}, want: []want{
			{"spec.extraConfig[placement][auth_type]", field.ErrorTypeForbidden, "placement.auth_type is not"},
			{"spec.extraConfig[placement][endpoint]", field.ErrorTypeForbidden, "placement.endpoint is not"},
		}},

		{name: "empty target cluster name", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef.Name = "" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeRequired, "target cluster name must be set"}}},

		{name: "trait without CUSTOM_", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"HW_CPU_X86_AVX2"} },
			want: []want{{"spec.traits[0]", field.ErrorTypeInvalid, msgCustomTrait}}},
		{name: "lower-case trait", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"CUSTOM_pool"} },
			want: []want{{"spec.traits[0]", field.ErrorTypeInvalid, msgCustomTrait}}},
		{name: "bare CUSTOM_", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"CUSTOM_"} },
			want: []want{{"spec.traits[0]", field.ErrorTypeInvalid, msgCustomTrait}}},
		{name: "trait with a dash", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"CUSTOM_POOL-A"} },
			want: []want{{"spec.traits[0]", field.ErrorTypeInvalid, msgCustomTrait}}},
		{name: "trait of 255 characters", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"CUSTOM_" + strings.Repeat("A", 248)} }},
		{name: "trait of 256 characters", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = []string{"CUSTOM_" + strings.Repeat("A", 249)} },
			want: []want{{"spec.traits[0]", field.ErrorTypeTooLong, ""}}},
		{name: "duplicate trait", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Traits = append(nc.Spec.Traits, "CUSTOM_POOL_A") },
			want: []want{{"spec.traits[2]", field.ErrorTypeDuplicate, ""}}},
		{name: "bad host trait", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.HostTraits[1].Traits = []string{"CUSTOM_OK", "custom_bad"} },
			want: []want{{"spec.hostTraits[1].traits[1]", field.ErrorTypeInvalid, msgCustomTrait}}},
		{name: "duplicate host trait", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.HostTraits[0].Traits = []string{"CUSTOM_X", "CUSTOM_X"} },
			want: []want{{"spec.hostTraits[0].traits[1]", field.ErrorTypeDuplicate, ""}}},
		{name: "host trait node name not a DNS subdomain", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.HostTraits[0].NodeName = "Node_1" },
			want: []want{{"spec.hostTraits[0].nodeName", field.ErrorTypeInvalid, "a lowercase RFC 1123 subdomain"}}},
		{name: "duplicate host trait node", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.HostTraits[1].NodeName = nc.Spec.HostTraits[0].NodeName },
			want: []want{{"spec.hostTraits[1].nodeName", field.ErrorTypeDuplicate, ""}}},

		{name: "every error in one answer", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.NovaRef.Name = ""
			nc.Spec.NodeSelector = nil
			nc.Spec.Libvirt.CPUMode = "custom"
			nc.Spec.ExtraConfig["DEFAULT"]["host"] = "x"
		}, want: []want{
			{"spec.novaRef.name", field.ErrorTypeRequired, ""},
			{"spec.nodeSelector", field.ErrorTypeRequired, ""},
			{"spec.libvirt.cpuModels", field.ErrorTypeRequired, ""},
			{"spec.extraConfig[DEFAULT][host]", field.ErrorTypeForbidden, ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := validPool()
			tt.mutate(nc)
			assertErrors(t, ValidateNovaCompute(nc, nil), tt.want)
		})
	}
}

func TestValidateNovaComputeUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*novav1alpha1.NovaCompute)
		mutate func(*novav1alpha1.NovaCompute)
		want   []want
	}{
		{name: "selector and extraConfig may change", mutate: func(nc *novav1alpha1.NovaCompute) {
			nc.Spec.NodeSelector = map[string]string{"pool": "b"}
			nc.Spec.ExtraConfig = nil
		}},
		{name: "novaRef renamed", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.NovaRef.Name = "other-nova" },
			want: []want{{"spec.novaRef.name", field.ErrorTypeInvalid, "novaRef is immutable"}}},
		{name: "targetClusterRef added", old: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef = nil }, mutate: func(*novav1alpha1.NovaCompute) {},
			want: []want{{"spec.targetClusterRef", field.ErrorTypeForbidden, "targetClusterRef is immutable"}}},
		{name: "targetClusterRef removed", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef = nil },
			want: []want{{"spec.targetClusterRef", field.ErrorTypeForbidden, "targetClusterRef is immutable"}}},
		{name: "targetClusterRef changed", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.TargetClusterRef.Name = "compute-b" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeInvalid, "targetClusterRef is immutable"}}},
		{name: "an over-long name is not refused again", old: func(nc *novav1alpha1.NovaCompute) { nc.Name = strings.Repeat("a", 64) },
			mutate: func(nc *novav1alpha1.NovaCompute) {
				nc.Name = strings.Repeat("a", 64)
				nc.Spec.NodeSelector["pool"] = "b"
			}},
		{name: "other rules still hold on update", mutate: func(nc *novav1alpha1.NovaCompute) { nc.Spec.Libvirt.CPUModels = []string{"Haswell"} },
			want: []want{{"spec.libvirt.cpuModels", field.ErrorTypeInvalid, msgCPUModels}}},
		{name: "a deleting pool with an unchanged invalid spec", old: breakEverything, mutate: func(nc *novav1alpha1.NovaCompute) {
			breakEverything(nc)
			nc.DeletionTimestamp = &metav1.Time{}
			nc.Finalizers = nil
		}},
		{name: "a deleting pool whose spec changes is validated", old: breakEverything, mutate: func(nc *novav1alpha1.NovaCompute) {
			breakEverything(nc)
			nc.DeletionTimestamp = &metav1.Time{}
			nc.Spec.Traits = []string{"CUSTOM_NEW"}
		}, want: brokenEverything},
		// Finalizers and labels of a pool admitted under older rules, or
		// one that bypassed admission, must still change.
		{name: "a live pool with an unchanged invalid spec gets its finalizers", old: breakEverything, mutate: func(nc *novav1alpha1.NovaCompute) {
			breakEverything(nc)
			nc.Finalizers = append(nc.Finalizers, "x.example.com/f")
		}},
		{name: "a live pool whose invalid spec changes is validated", old: breakEverything, mutate: func(nc *novav1alpha1.NovaCompute) {
			breakEverything(nc)
			nc.Spec.Traits = []string{"CUSTOM_NEW"}
		}, want: brokenEverything},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validPool()
			if tt.old != nil {
				tt.old(old)
			}
			nc := validPool()
			tt.mutate(nc)
			assertErrors(t, ValidateNovaCompute(nc, old), tt.want)
		})
	}
}

// breakEverything stands for a pool an earlier release admitted under
// looser rules.
func breakEverything(nc *novav1alpha1.NovaCompute) {
	nc.Name = strings.Repeat("a", 64)
	nc.Spec.Libvirt.CPUMode = "custom"
	nc.Spec.ExtraConfig["DEFAULT"]["host"] = "x"
}

// brokenEverything is what breakEverything is refused with on update: the
// over-long name is not among it.
var brokenEverything = []want{
	{"spec.libvirt.cpuModels", field.ErrorTypeRequired, msgCPUModels},
	{"spec.extraConfig[DEFAULT][host]", field.ErrorTypeForbidden, ""},
}

// No admission error may repeat an extraConfig value: it may be a password.
func TestValidateNovaComputeHidesValues(t *testing.T) {
	nc := validPool()
	nc.Spec.ExtraConfig["neutron"] = map[string]string{"password": "hunter2\n"}
	nc.Spec.ExtraConfig["database"] = map[string]string{"connection": "mysql://nova:hunter2@db\x00"}
	errs := ValidateNovaCompute(nc, nil)
	if len(errs) != 4 {
		t.Errorf("want a line-break, an owned-key, a control-character and an off-the-allowlist error, got %v", errs)
	}
	if err := novaComputeInvalid(nc, errs); strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the admission error repeats a value: %v", err)
	}
}

// assertErrors fails unless errs holds exactly the wanted errors, in any
// order, each with its field, type and detail.
func assertErrors(t *testing.T, errs field.ErrorList, wants []want) {
	t.Helper()
	if len(errs) != len(wants) {
		t.Errorf("got %d errors, want %d: %v", len(errs), len(wants), errs)
	}
	for _, w := range wants {
		found := false
		for _, e := range errs {
			if e.Field == w.field && e.Type == w.typ && strings.Contains(e.Detail, w.detail) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s error on %s with %q in %v", w.typ, w.field, w.detail, errs)
		}
	}
	for _, e := range errs {
		if strings.ContainsAny(e.Error(), "\n\r") {
			t.Errorf("error spans lines: %q", e.Error())
		}
	}
}
