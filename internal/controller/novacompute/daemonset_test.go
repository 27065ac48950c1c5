package novacompute

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// dsPool is a pool selecting rack=r1,role=compute; mut adjusts it.
func dsPool(mut func(*novav1alpha1.NovaCompute)) *novav1alpha1.NovaCompute {
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: "pool-a", Namespace: "openstack"}}
	p.Spec.NovaRef.Name = "cp-nova"
	p.Spec.NodeSelector = map[string]string{"role": "compute", "rack": "r1"}
	if mut != nil {
		mut(p)
	}
	return p
}

func dsNode(name, phase string) novav1alpha1.NovaComputeNode {
	return novav1alpha1.NovaComputeNode{Name: name, Phase: phase}
}

// dsInput is a complete DaemonSetInput holding nodes.
func dsInput(deleting bool, nodes ...novav1alpha1.NovaComputeNode) DaemonSetInput {
	return DaemonSetInput{
		Image:          "ghcr.io/c5c3/nova-compute:2026.1",
		PullPolicy:     corev1.PullIfNotPresent,
		ContractSecret: "cp-nova-compute-config",
		PoolConfigMap:  "pool-a-config-0123456789",
		ContractHash:   "hash-1",
		Nodes:          nodes,
		Deleting:       deleting,
	}
}

// dsBuild renders the default pool with one Active node, failing when the
// result is nil.
func dsBuild(t *testing.T, p *novav1alpha1.NovaCompute) *appsv1.DaemonSet {
	t.Helper()
	ds := BuildDaemonSet(p, dsInput(false, dsNode("n1", novav1alpha1.NodeActive)))
	if ds == nil {
		t.Fatal("BuildDaemonSet returned nil for a live pool with a selector, want a DaemonSet")
	}
	return ds
}

func nameIn(name string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{name},
	}}}
}

func nameNotIn(name string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{name}}
}

func labelIn(key, value string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}
}

func TestBuildDaemonSetAffinity(t *testing.T) {
	selectorTerm := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		labelIn("rack", "r1"), labelIn("role", "compute"),
	}}
	withConflicts := func(names ...string) corev1.NodeSelectorTerm {
		term := *selectorTerm.DeepCopy()
		for _, n := range names {
			term.MatchFields = append(term.MatchFields, nameNotIn(n))
		}
		return term
	}
	tests := []struct {
		name     string
		pool     *novav1alpha1.NovaCompute
		in       DaemonSetInput
		wantNil  bool
		wantTerm []corev1.NodeSelectorTerm
	}{
		{name: "a live pool without nodes still gets the selector term",
			pool: dsPool(nil), in: dsInput(false),
			wantTerm: []corev1.NodeSelectorTerm{selectorTerm}},
		{name: "one In expression per selector pair, keys sorted",
			pool: dsPool(func(p *novav1alpha1.NovaCompute) {
				p.Spec.NodeSelector = map[string]string{"zeta": "z", "alpha": "a", "mid": "m"}
			}), in: dsInput(false, dsNode("n1", novav1alpha1.NodeActive)),
			wantTerm: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				labelIn("alpha", "a"), labelIn("mid", "m"), labelIn("zeta", "z"),
			}}}},
		{name: "Pending, Active and Releasing nodes add no term",
			pool: dsPool(nil), in: dsInput(false, dsNode("n1", novav1alpha1.NodePending),
				dsNode("n2", novav1alpha1.NodeActive), dsNode("n3", novav1alpha1.NodeReleasing)),
			wantTerm: []corev1.NodeSelectorTerm{selectorTerm}},
		{name: "each Conflict node is excluded from the selector term by name, sorted",
			pool: dsPool(nil), in: dsInput(false, dsNode("n3", novav1alpha1.NodeConflict),
				dsNode("n1", novav1alpha1.NodeActive), dsNode("n2", novav1alpha1.NodeConflict)),
			wantTerm: []corev1.NodeSelectorTerm{withConflicts("n2", "n3")}},
		{name: "each Draining node gets a term of its own, sorted",
			pool: dsPool(nil), in: dsInput(false, dsNode("n9", novav1alpha1.NodeDraining),
				dsNode("n1", novav1alpha1.NodeActive), dsNode("n5", novav1alpha1.NodeDraining)),
			wantTerm: []corev1.NodeSelectorTerm{selectorTerm, nameIn("n5"), nameIn("n9")}},
		{name: "conflicts and drains together",
			pool: dsPool(nil), in: dsInput(false, dsNode("c1", novav1alpha1.NodeConflict), dsNode("d1", novav1alpha1.NodeDraining)),
			wantTerm: []corev1.NodeSelectorTerm{withConflicts("c1"), nameIn("d1")}},
		{name: "a deleting pool with a Draining node runs a pod only there",
			pool: dsPool(nil), in: dsInput(true, dsNode("n1", novav1alpha1.NodeActive),
				dsNode("n2", novav1alpha1.NodeDraining), dsNode("n3", novav1alpha1.NodeConflict)),
			wantTerm: []corev1.NodeSelectorTerm{nameIn("n2")}},
		{name: "a deleting pool without a Draining node needs no DaemonSet",
			pool: dsPool(nil), in: dsInput(true, dsNode("n1", novav1alpha1.NodeActive),
				dsNode("n2", novav1alpha1.NodeReleasing), dsNode("n3", novav1alpha1.NodeConflict), dsNode("n4", novav1alpha1.NodePending)),
			wantNil: true},
		{name: "a deleting pool without nodes needs no DaemonSet",
			pool: dsPool(nil), in: dsInput(true), wantNil: true},
		{name: "an empty selector yields no term, not one that matches every node",
			pool: dsPool(func(p *novav1alpha1.NovaCompute) { p.Spec.NodeSelector = nil }),
			in:   dsInput(false, dsNode("c1", novav1alpha1.NodeConflict)), wantNil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := BuildDaemonSet(tt.pool, tt.in)
			if tt.wantNil {
				if ds != nil {
					t.Fatalf("BuildDaemonSet = %+v, want nil", ds.Spec.Template.Spec.Affinity)
				}
				return
			}
			if ds == nil {
				t.Fatal("BuildDaemonSet = nil, want a DaemonSet")
			}
			aff := ds.Spec.Template.Spec.Affinity
			if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				t.Fatalf("affinity = %+v, want required node affinity", aff)
			}
			if aff.PodAffinity != nil || aff.PodAntiAffinity != nil || aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
				t.Errorf("affinity = %+v, want only required node affinity", aff)
			}
			got := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if !reflect.DeepEqual(got, tt.wantTerm) {
				t.Errorf("node selector terms =\n%+v\nwant\n%+v", got, tt.wantTerm)
			}
			if ds.Spec.Template.Spec.NodeSelector != nil || ds.Spec.Template.Spec.NodeName != "" {
				t.Errorf("nodeSelector = %v, nodeName = %q, want placement by affinity only",
					ds.Spec.Template.Spec.NodeSelector, ds.Spec.Template.Spec.NodeName)
			}
		})
	}
}

func TestBuildDaemonSetMetadata(t *testing.T) {
	want := map[string]string{
		"app.kubernetes.io/name":      "novacompute",
		"app.kubernetes.io/instance":  "pool-a",
		"app.kubernetes.io/component": "nova-compute",
	}
	ds := dsBuild(t, dsPool(nil))
	tests := []struct {
		name string
		got  any
		want any
	}{
		{name: "name", got: ds.Name, want: "pool-a-nova-compute"},
		{name: "namespace", got: ds.Namespace, want: "openstack"},
		{name: "DaemonSet labels", got: ds.Labels, want: want},
		{name: "selector", got: ds.Spec.Selector, want: &metav1.LabelSelector{MatchLabels: want}},
		{name: "pod labels", got: ds.Spec.Template.Labels, want: want},
		{name: "contract hash annotation", got: ds.Spec.Template.Annotations,
			want: map[string]string{"nova.openstack.c5c3.io/compute-config-hash": "hash-1"}},
		{name: "PodLabels", got: PodLabels("pool-a"), want: want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	t.Run("label maps are not shared", func(t *testing.T) {
		ds.Labels["extra"] = "x"
		if _, ok := ds.Spec.Selector.MatchLabels["extra"]; ok {
			t.Error("a label added to the DaemonSet appeared in its selector, want separate maps")
		}
		if _, ok := ds.Spec.Template.Labels["extra"]; ok {
			t.Error("a label added to the DaemonSet appeared on its pods, want separate maps")
		}
	})
	t.Run("a new contract hash changes only the annotation", func(t *testing.T) {
		in := dsInput(false, dsNode("n1", novav1alpha1.NodeActive))
		in.ContractHash = "hash-2"
		other := BuildDaemonSet(dsPool(nil), in)
		if got := other.Spec.Template.Annotations[novav1alpha1.ComputeConfigHashAnnotation]; got != "hash-2" {
			t.Errorf("annotation = %q, want hash-2", got)
		}
		fresh := dsBuild(t, dsPool(nil))
		other.Spec.Template.Annotations = fresh.Spec.Template.Annotations
		if !reflect.DeepEqual(other, fresh) {
			t.Error("the hash changed more than the pod annotation")
		}
	})
}

func TestBuildDaemonSetUpdateStrategy(t *testing.T) {
	pct := intstr.FromString("25%")
	three := intstr.FromInt32(3)
	one := intstr.FromInt32(1)
	tests := []struct {
		name     string
		strategy novav1alpha1.UpdateStrategySpec
		want     appsv1.DaemonSetUpdateStrategy
	}{
		{name: "default is RollingUpdate with maxUnavailable 1",
			want: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}}},
		{name: "RollingUpdate without maxUnavailable defaults to 1",
			strategy: novav1alpha1.UpdateStrategySpec{Type: novav1alpha1.RollingUpdateStrategy},
			want: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one}}},
		{name: "maxUnavailable as a number",
			strategy: novav1alpha1.UpdateStrategySpec{Type: novav1alpha1.RollingUpdateStrategy, MaxUnavailable: ptr.To(three)},
			want: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &three}}},
		{name: "maxUnavailable as a percentage, type left out",
			strategy: novav1alpha1.UpdateStrategySpec{MaxUnavailable: ptr.To(pct)},
			want: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &pct}}},
		{name: "OnDelete has no rolling parameters",
			strategy: novav1alpha1.UpdateStrategySpec{Type: novav1alpha1.OnDeleteStrategy},
			want:     appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := dsPool(func(p *novav1alpha1.NovaCompute) { p.Spec.UpdateStrategy = tt.strategy })
			got := dsBuild(t, p).Spec.UpdateStrategy
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("update strategy = %+v, want %+v", got, tt.want)
			}
			if got.RollingUpdate != nil {
				if got.RollingUpdate.MaxSurge != nil {
					t.Errorf("maxSurge = %v, want none: two nova-compute of one host must never run at once", got.RollingUpdate.MaxSurge)
				}
				if got.RollingUpdate.MaxUnavailable == p.Spec.UpdateStrategy.MaxUnavailable {
					t.Error("maxUnavailable aliases the pool's spec, want a copy")
				}
			}
		})
	}
}

func TestBuildDaemonSetPodSpec(t *testing.T) {
	tolerations := []corev1.Toleration{
		{Key: "node-role.kubernetes.io/compute", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "nova", Effect: corev1.TaintEffectNoExecute},
	}
	p := dsPool(func(p *novav1alpha1.NovaCompute) { p.Spec.Tolerations = tolerations })
	ds := dsBuild(t, p)
	spec := ds.Spec.Template.Spec
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "no service account token", check: func(t *testing.T) {
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Error("the pod mounts a service account token, which nova-compute never uses")
			}
		}},
		{name: "host network with cluster DNS", check: func(t *testing.T) {
			if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
				t.Errorf("hostNetwork = %v, dnsPolicy = %s, want true and ClusterFirstWithHostNet", spec.HostNetwork, spec.DNSPolicy)
			}
		}},
		{name: "pod security context is seccomp RuntimeDefault only", check: func(t *testing.T) {
			want := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			if !reflect.DeepEqual(spec.SecurityContext, want) {
				t.Errorf("pod security context = %+v, want only seccomp RuntimeDefault", spec.SecurityContext)
			}
		}},
		{name: "tolerations are copied", check: func(t *testing.T) {
			if !reflect.DeepEqual(spec.Tolerations, tolerations) {
				t.Errorf("tolerations = %+v, want %+v", spec.Tolerations, tolerations)
			}
			p.Spec.Tolerations[0].Key = "changed"
			defer func() { p.Spec.Tolerations[0].Key = "node-role.kubernetes.io/compute" }()
			if spec.Tolerations[0].Key == "changed" {
				t.Error("the pod's tolerations alias the pool's, want a copy")
			}
		}},
		{name: "no tolerations stay none", check: func(t *testing.T) {
			if got := dsBuild(t, dsPool(nil)).Spec.Template.Spec.Tolerations; len(got) != 0 {
				t.Errorf("tolerations = %+v, want none", got)
			}
		}},
		{name: "containers in order", check: func(t *testing.T) {
			var init, main []string
			for _, c := range spec.InitContainers {
				init = append(init, c.Name)
			}
			for _, c := range spec.Containers {
				main = append(main, c.Name)
			}
			if !slices.Equal(init, []string{"create-instances-dir", "wait-for-chassis"}) || !slices.Equal(main, []string{"nova-compute"}) {
				t.Errorf("init containers = %v, containers = %v, want [create-instances-dir wait-for-chassis] and [nova-compute]", init, main)
			}
		}},
		{name: "every container runs the input image with its pull policy", check: func(t *testing.T) {
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				if c.Image != "ghcr.io/c5c3/nova-compute:2026.1" || c.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("%s: image = %q (%s), want the input image with IfNotPresent", c.Name, c.Image, c.ImagePullPolicy)
				}
			}
		}},
		{name: "every mount names a volume", check: func(t *testing.T) {
			vols := map[string]bool{}
			for _, v := range spec.Volumes {
				if vols[v.Name] {
					t.Errorf("volume %s is declared twice", v.Name)
				}
				vols[v.Name] = true
			}
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				for _, m := range c.VolumeMounts {
					if !vols[m.Name] {
						t.Errorf("%s mounts %s, which is no volume of the pod", c.Name, m.Name)
					}
				}
			}
		}},
		{name: "compute-config is the contract Secret, pool-config the ConfigMap", check: func(t *testing.T) {
			for _, v := range spec.Volumes {
				switch v.Name {
				case "compute-config":
					if v.Secret == nil || v.Secret.SecretName != "cp-nova-compute-config" {
						t.Errorf("compute-config = %+v, want Secret cp-nova-compute-config", v.VolumeSource)
					}
				case "pool-config":
					if v.ConfigMap == nil || v.ConfigMap.Name != "pool-a-config-0123456789" {
						t.Errorf("pool-config = %+v, want ConfigMap pool-a-config-0123456789", v.VolumeSource)
					}
				case "var-lib-nova":
					if v.HostPath == nil || v.HostPath.Path != "/var/lib/nova" {
						t.Errorf("var-lib-nova = %+v, want host path /var/lib/nova", v.VolumeSource)
					}
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// dsContainer returns the named container, init or not.
func dsContainer(t *testing.T, ds *appsv1.DaemonSet, name string) corev1.Container {
	t.Helper()
	for _, c := range append(slices.Clone(ds.Spec.Template.Spec.InitContainers), ds.Spec.Template.Spec.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

func TestBuildDaemonSetInitContainers(t *testing.T) {
	ds := dsBuild(t, dsPool(nil))
	mkdir := dsContainer(t, ds, "create-instances-dir")
	wait := dsContainer(t, ds, "wait-for-chassis")
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "create-instances-dir creates the instances directory", check: func(t *testing.T) {
			want := []string{"mkdir", "-p", "-m", "0755", "/var/lib/nova/instances"}
			if !slices.Equal(mkdir.Command, want) {
				t.Errorf("command = %q, want %q", mkdir.Command, want)
			}
			wantMounts := []corev1.VolumeMount{{Name: "var-lib-nova", MountPath: "/var/lib/nova"}}
			if !reflect.DeepEqual(mkdir.VolumeMounts, wantMounts) {
				t.Errorf("mounts = %+v, want %+v", mkdir.VolumeMounts, wantMounts)
			}
		}},
		{name: "create-instances-dir runs as root with only DAC_OVERRIDE", check: func(t *testing.T) {
			sc := mkdir.SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Fatalf("security context = %+v, want runAsUser 0", sc)
			}
			if sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("privileged = %v, allowPrivilegeEscalation = %v, want both false", sc.Privileged, sc.AllowPrivilegeEscalation)
			}
			want := &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"DAC_OVERRIDE"}}
			if !reflect.DeepEqual(sc.Capabilities, want) {
				t.Errorf("capabilities = %+v, want drop ALL, add DAC_OVERRIDE", sc.Capabilities)
			}
		}},
		{name: "wait-for-chassis runs a python script", check: func(t *testing.T) {
			if len(wait.Command) != 3 || wait.Command[0] != "python3" || wait.Command[1] != "-c" || wait.Command[2] == "" {
				t.Fatalf("command = %q, want python3 -c <script>", wait.Command)
			}
			if !strings.Contains(wait.Command[2], `os.environ.get("OVSDB_SOCKET"`) || !strings.Contains(wait.Command[2], "system-id") {
				t.Errorf("the script does not read OVSDB_SOCKET or wait for system-id:\n%s", wait.Command[2])
			}
		}},
		{name: "wait-for-chassis is told the OVSDB socket", check: func(t *testing.T) {
			want := []corev1.EnvVar{{Name: "OVSDB_SOCKET", Value: "/run/openvswitch/db.sock"}}
			if !reflect.DeepEqual(wait.Env, want) {
				t.Errorf("env = %+v, want %+v", wait.Env, want)
			}
			wantMounts := []corev1.VolumeMount{{Name: "run-openvswitch", MountPath: "/run/openvswitch", ReadOnly: true}}
			if !reflect.DeepEqual(wait.VolumeMounts, wantMounts) {
				t.Errorf("mounts = %+v, want %+v", wait.VolumeMounts, wantMounts)
			}
		}},
		{name: "wait-for-chassis runs unprivileged", check: func(t *testing.T) {
			sc := wait.SecurityContext
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Fatalf("security context = %+v, want non-root without privilege escalation", sc)
			}
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
				t.Errorf("capabilities = %+v, want drop ALL only", sc.Capabilities)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestBuildDaemonSetComputeContainer(t *testing.T) {
	ds := dsBuild(t, dsPool(nil))
	c := dsContainer(t, ds, "nova-compute")
	const contract = "cp-nova-compute-config"
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "command", check: func(t *testing.T) {
			want := []string{"nova-compute", "--config-file", "/etc/nova/compute-config/nova-compute.conf", "--config-dir", "/etc/nova/compute-pool.conf.d"}
			if !slices.Equal(c.Command, want) {
				t.Errorf("command = %q, want %q", c.Command, want)
			}
		}},
		{name: "privileged as root", check: func(t *testing.T) {
			sc := c.SecurityContext
			if sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Errorf("security context = %+v, want privileged with runAsUser 0", sc)
			}
			if sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot {
				t.Error("runAsNonRoot = true contradicts runAsUser 0")
			}
		}},
		{name: "env names in their fixed order", check: func(t *testing.T) {
			var names []string
			for _, e := range c.Env {
				names = append(names, e.Name)
			}
			want := []string{
				"OS_DEFAULT__HOST", "OS_DEFAULT__MY_IP", "OS_VNC__SERVER_PROXYCLIENT_ADDRESS",
				"OS_LIBVIRT__LIVE_MIGRATION_INBOUND_ADDR", "OS_DEFAULT__TRANSPORT_URL",
				"OS_KEYSTONE_AUTHTOKEN__PASSWORD", "OS_SERVICE_USER__PASSWORD", "OS_PLACEMENT__PASSWORD",
				"OS_NEUTRON__PASSWORD", "OS_CINDER__PASSWORD",
			}
			if !slices.Equal(names, want) {
				t.Errorf("env names = %v, want %v", names, want)
			}
		}},
		{name: "no env value is a literal", check: func(t *testing.T) {
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom == nil {
					t.Errorf("%s = %q (valueFrom %v), want valueFrom only: credentials never enter the pod spec", e.Name, e.Value, e.ValueFrom)
				}
			}
		}},
		{name: "node name and host IP come from the downward API", check: func(t *testing.T) {
			want := map[string]string{
				"OS_DEFAULT__HOST":                        "spec.nodeName",
				"OS_DEFAULT__MY_IP":                       "status.hostIP",
				"OS_VNC__SERVER_PROXYCLIENT_ADDRESS":      "status.hostIP",
				"OS_LIBVIRT__LIVE_MIGRATION_INBOUND_ADDR": "status.hostIP",
			}
			for _, e := range c.Env {
				path, ok := want[e.Name]
				if !ok {
					continue
				}
				if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path || e.ValueFrom.SecretKeyRef != nil {
					t.Errorf("%s = %+v, want fieldRef %s", e.Name, e.ValueFrom, path)
				}
				delete(want, e.Name)
			}
			if len(want) > 0 {
				t.Errorf("missing downward API env %v", want)
			}
		}},
		{name: "transport URL and passwords come from the contract Secret", check: func(t *testing.T) {
			want := map[string]string{
				"OS_DEFAULT__TRANSPORT_URL":       "transport_url",
				"OS_KEYSTONE_AUTHTOKEN__PASSWORD": "password",
				"OS_SERVICE_USER__PASSWORD":       "password",
				"OS_PLACEMENT__PASSWORD":          "password",
				"OS_NEUTRON__PASSWORD":            "password",
				"OS_CINDER__PASSWORD":             "password",
			}
			for _, e := range c.Env {
				key, ok := want[e.Name]
				if !ok {
					continue
				}
				ref := (*corev1.SecretKeySelector)(nil)
				if e.ValueFrom != nil {
					ref = e.ValueFrom.SecretKeyRef
				}
				if ref == nil || ref.Name != contract || ref.Key != key || e.ValueFrom.FieldRef != nil {
					t.Errorf("%s = %+v, want key %s of Secret %s", e.Name, e.ValueFrom, key, contract)
				} else if ref.Optional != nil && *ref.Optional {
					t.Errorf("%s is optional, want a required key", e.Name)
				}
				delete(want, e.Name)
			}
			if len(want) > 0 {
				t.Errorf("missing Secret env %v", want)
			}
		}},
		{name: "configuration and state mounts", check: func(t *testing.T) {
			bidirectional := corev1.MountPropagationBidirectional
			want := map[string]corev1.VolumeMount{
				"compute-config": {Name: "compute-config", MountPath: "/etc/nova/compute-config", ReadOnly: true},
				"pool-config":    {Name: "pool-config", MountPath: "/etc/nova/compute-pool.conf.d", ReadOnly: true},
				"var-lib-nova":   {Name: "var-lib-nova", MountPath: "/var/lib/nova", MountPropagation: &bidirectional},
			}
			for _, m := range c.VolumeMounts {
				w, ok := want[m.Name]
				if !ok {
					continue
				}
				if !reflect.DeepEqual(m, w) {
					t.Errorf("mount %s = %+v, want %+v", m.Name, m, w)
				}
				delete(want, m.Name)
			}
			if len(want) > 0 {
				t.Errorf("missing mounts %v", want)
			}
		}},
		{name: "only nova-compute mounts with Bidirectional propagation", check: func(t *testing.T) {
			for _, ic := range ds.Spec.Template.Spec.InitContainers {
				for _, m := range ic.VolumeMounts {
					if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
						t.Errorf("%s mounts %s Bidirectional, which only a privileged container may", ic.Name, m.Name)
					}
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestBuildDaemonSetResources(t *testing.T) {
	tests := []struct {
		name string
		spec *corev1.ResourceRequirements
	}{
		{name: "defaults"},
		{name: "the pool's resources", spec: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := dsBuild(t, dsPool(func(p *novav1alpha1.NovaCompute) { p.Spec.Resources = tt.spec }))
			want := ResolveResources(tt.spec)
			for _, c := range append(slices.Clone(ds.Spec.Template.Spec.InitContainers), ds.Spec.Template.Spec.Containers...) {
				if !reflect.DeepEqual(c.Resources, want) {
					t.Errorf("%s resources = %+v, want the resolved %+v", c.Name, c.Resources, want)
				}
			}
		})
	}
}

func TestResolveResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name         string
		spec         *corev1.ResourceRequirements
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		{name: "nil gets every default",
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("150m"), corev1.ResourceMemory: q("768Mi")},
			wantLimits:   corev1.ResourceList{corev1.ResourceMemory: q("768Mi")}},
		{name: "empty gets every default",
			spec:         &corev1.ResourceRequirements{},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("150m"), corev1.ResourceMemory: q("768Mi")},
			wantLimits:   corev1.ResourceList{corev1.ResourceMemory: q("768Mi")}},
		{name: "a CPU request is kept",
			spec:         &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("768Mi")},
			wantLimits:   corev1.ResourceList{corev1.ResourceMemory: q("768Mi")}},
		{name: "a CPU limit is kept and no CPU limit is added otherwise",
			spec:         &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("4")}},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("150m"), corev1.ResourceMemory: q("768Mi")},
			wantLimits:   corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("768Mi")}},
		{name: "memory request and limit are kept",
			spec: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("4Gi")},
			},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("150m"), corev1.ResourceMemory: q("1Gi")},
			wantLimits:   corev1.ResourceList{corev1.ResourceMemory: q("4Gi")}},
		{name: "everything named is kept verbatim",
			spec: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("1Gi")},
			wantLimits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}},
		{name: "extra resources are kept",
			spec: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("1Gi"), "hugepages-1Gi": q("2Gi")},
				Limits:   corev1.ResourceList{"hugepages-1Gi": q("2Gi")},
			},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("150m"), corev1.ResourceMemory: q("768Mi"),
				corev1.ResourceEphemeralStorage: q("1Gi"), "hugepages-1Gi": q("2Gi")},
			wantLimits: corev1.ResourceList{corev1.ResourceMemory: q("768Mi"), "hugepages-1Gi": q("2Gi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *corev1.ResourceRequirements
			if tt.spec != nil {
				before = tt.spec.DeepCopy()
			}
			got := ResolveResources(tt.spec)
			if !resourceListsEqual(got.Requests, tt.wantRequests) {
				t.Errorf("requests = %v, want %v", got.Requests, tt.wantRequests)
			}
			if !resourceListsEqual(got.Limits, tt.wantLimits) {
				t.Errorf("limits = %v, want %v", got.Limits, tt.wantLimits)
			}
			if tt.spec != nil {
				got.Requests["probe"] = q("1")
				got.Limits["probe"] = q("1")
				if !reflect.DeepEqual(tt.spec, before) {
					t.Errorf("the pool's resources changed to %+v, want them untouched", tt.spec)
				}
			}
		})
	}
}

// TestResolveResourcesWithinLimits checks that a default never produces a
// request above a limit the pool names, which the apiserver refuses.
func TestResolveResourcesWithinLimits(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name string
		spec *corev1.ResourceRequirements
	}{
		{name: "defaults"},
		{name: "a large memory limit",
			spec: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("8Gi")}}},
		{name: "a memory limit below the default request",
			spec: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}}},
		{name: "a memory request above the default limit",
			spec: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}}},
		{name: "a CPU limit below the default request",
			spec: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("100m")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveResources(tt.spec)
			for name, limit := range got.Limits {
				if req, ok := got.Requests[name]; ok && req.Cmp(limit) > 0 {
					t.Errorf("%s request %s exceeds its limit %s", name, req.String(), limit.String())
				}
			}
		})
	}
}

func resourceListsEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
