package ovnchassis

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// No chassis container runs privileged or mounts a ServiceAccount token,
// and each holds exactly the capabilities docs/design/security.md gives
// it: a change here is a change of that table.
func TestChassisPodsHoldTheLeastPrivilege(t *testing.T) {
	c := &ovnv1alpha1.OVNChassis{}
	c.Name, c.Namespace = "chassis", "openstack"
	c.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/chassis": "true"}
	entry := NodeEntry{Name: "node-1", SystemID: "3f6c2a1e-0000-4000-8000-000000000001"}
	pods := map[string]corev1.PodSpec{
		"ovs":            BuildOVSDaemonSet(c, "h").Spec.Template.Spec,
		"ovn-controller": BuildControllerDaemonSet(c, "ssl:192.0.2.1:6642", "h").Spec.Template.Spec,
		"apply":          BuildMaintenanceJob(c, NodeAction{Kind: ApplyJob, Entry: entry}, CentralAddresses{}).Spec.Template.Spec,
		"evacuate":       BuildMaintenanceJob(c, NodeAction{Kind: EvacuateJob, Entry: entry}, CentralAddresses{}).Spec.Template.Spec,
		"chassis-del":    BuildMaintenanceJob(c, NodeAction{Kind: ChassisDelJob, Entry: entry}, CentralAddresses{}).Spec.Template.Spec,
		"identity":       BuildMaintenanceJob(c, NodeAction{Kind: IdentityJob, Entry: entry}, CentralAddresses{}).Spec.Template.Spec,
	}
	want := map[string][]corev1.Capability{
		"host-prepare":     {"SYS_MODULE", "CHOWN", "FOWNER", "DAC_OVERRIDE"},
		"ovsdb-server":     {"DAC_OVERRIDE"},
		"ovs-vswitchd":     {"NET_ADMIN", "NET_RAW", "SYS_NICE", "IPC_LOCK", "DAC_OVERRIDE"},
		"apply-node":       nil,
		"ovn-controller":   {"NET_ADMIN", "DAC_OVERRIDE"},
		"evacuate":         nil,
		"chassis-del":      nil,
		"install-identity": nil,
	}
	for name, pod := range pods {
		if m := pod.AutomountServiceAccountToken; m == nil || *m {
			t.Errorf("%s: automountServiceAccountToken = %v, want false", name, m)
		}
		for _, ctr := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			caps, ok := want[ctr.Name]
			if !ok {
				t.Errorf("%s: container %s is not in the table", name, ctr.Name)
				continue
			}
			sc := ctr.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
				!slices.Equal(sc.Capabilities.Add, caps) {
				t.Errorf("%s/%s: security context %+v, want unprivileged, no escalation, drop ALL, add %v", name, ctr.Name, sc, caps)
			}
		}
	}
}

// ovn-controller mounts no Secret, only the node's identity directory; the
// identity Job alone mounts the node's identity Secret, and runs on that
// node.
func TestOnlyTheNodesJobMountsItsIdentity(t *testing.T) {
	c := &ovnv1alpha1.OVNChassis{}
	c.Name, c.Namespace = "chassis", "openstack"
	ctl := BuildControllerDaemonSet(c, "ssl:192.0.2.1:6642", "h").Spec.Template.Spec
	for _, v := range ctl.Volumes {
		if v.Secret != nil || v.Projected != nil {
			t.Errorf("ovn-controller mounts %s from a Secret", v.Name)
		}
		if v.Name == "tls" && (v.HostPath == nil || v.HostPath.Path != hostTLSPath) {
			t.Errorf("ovn-controller's tls volume = %+v, want the node's identity directory", v.VolumeSource)
		}
	}
	entry := NodeEntry{Name: "node-1", SystemID: "3f6c2a1e-0000-4000-8000-000000000001", IdentityHash: "abcd0123"}
	job := BuildMaintenanceJob(c, NodeAction{Kind: IdentityJob, Entry: entry}, CentralAddresses{})
	spec := job.Spec.Template.Spec
	var secrets []string
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secrets = append(secrets, v.Secret.SecretName)
		}
	}
	if spec.NodeName != "node-1" || !slices.Equal(secrets, []string{IdentityName(c, "node-1")}) {
		t.Errorf("identity Job on %q mounts %v, want node-1 and its own identity only", spec.NodeName, secrets)
	}
	if job.Annotations[configHashAnnotation] != "abcd0123" {
		t.Errorf("identity Job annotation = %v, want the certificate's hash", job.Annotations)
	}
}
