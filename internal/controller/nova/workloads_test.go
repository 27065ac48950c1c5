package nova

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func testNova() *novav1alpha1.Nova {
	return &novav1alpha1.Nova{
		ObjectMeta: metav1.ObjectMeta{Name: "cp-nova", Namespace: "openstack"},
		Spec: novav1alpha1.NovaSpec{
			OpenStackRelease: "2026.1",
			Image:            anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
		},
	}
}

func TestRolloutGroupsOrder(t *testing.T) {
	var names []string
	for _, g := range rolloutGroups {
		var group []string
		for _, c := range g {
			group = append(group, c.Name)
		}
		names = append(names, strings.Join(group, "+"))
	}
	want := []string{"conductor", "scheduler", "api+metadata+novncproxy"}
	if !slices.Equal(names, want) {
		t.Fatalf("rollout order = %v, want %v", names, want)
	}
}

func TestBuildDeployment(t *testing.T) {
	nova := testNova()
	for _, g := range rolloutGroups {
		for _, c := range g {
			d := BuildDeployment(nova, c, "hash1")
			if d.Name != "cp-nova-"+c.Name {
				t.Errorf("name = %s", d.Name)
			}
			pod := d.Spec.Template.Spec
			if !*pod.SecurityContext.RunAsNonRoot || *pod.AutomountServiceAccountToken {
				t.Errorf("%s: pod must run as non-root without a token", c.Name)
			}
			ct := pod.Containers[0]
			if ct.Image != "ghcr.io/c5c3/nova:2026.1" || ct.Name != "nova-"+c.Name {
				t.Errorf("%s: container %s image %s", c.Name, ct.Name, ct.Image)
			}
			if d.Spec.Template.Annotations[ConfigHashAnnotation] != "hash1" {
				t.Errorf("%s: config hash not on the template", c.Name)
			}
			if ct.Resources.Limits.Memory().IsZero() || ct.Resources.Requests.Cpu().IsZero() {
				t.Errorf("%s: resources missing", c.Name)
			}
			if (c.Port != 0) != (ct.ReadinessProbe != nil && ct.LivenessProbe != nil) {
				t.Errorf("%s: a listening service has probes, a bus-only one none", c.Name)
			}
			if BuildPDB(nova, c).Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("%s: PDB must allow one eviction", c.Name)
			}
		}
	}
	if got := *BuildDeployment(nova, rolloutGroups[0][0], "h").Spec.Replicas; got != 2 {
		t.Errorf("default replicas = %d, want 2", got)
	}
	nova.Spec.Replicas = ptr.To[int32](1)
	if got := *BuildDeployment(nova, rolloutGroups[2][0], "h").Spec.Replicas; got != 1 {
		t.Errorf("replicas = %d, want spec.replicas 1", got)
	}
	api := BuildDeployment(nova, rolloutGroups[2][0], "h").Spec.Template.Spec.Containers[0]
	if api.Command[0] != "uwsgi" || !slices.Contains(api.Command, "/usr/bin/nova-api-wsgi") || !slices.Contains(api.Command, ":8774") {
		t.Errorf("api command = %v", api.Command)
	}
	if BuildService(nova, rolloutGroups[0][0]) != nil {
		t.Error("the conductor listens on nothing and gets no Service")
	}
	if svc := BuildService(nova, metadataComponent); svc.Spec.Ports[0].Port != 8775 || svc.Name != "cp-nova-metadata" {
		t.Errorf("metadata Service = %s port %d", svc.Name, svc.Spec.Ports[0].Port)
	}
}

func TestWanted(t *testing.T) {
	nova := testNova()
	proxy := rolloutGroups[2][2]
	if wanted(nova, proxy) {
		t.Error("the console proxy runs only while enabled")
	}
	nova.Spec.ConsoleProxy = &novav1alpha1.ConsoleProxySpec{Enabled: true}
	if !wanted(nova, proxy) || replicasOf(nova, proxy) != 1 {
		t.Error("an enabled console proxy runs one pod")
	}
}

func TestRolledOut(t *testing.T) {
	dep := func(gen, observed int64, want, replicas, updated, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(want)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas,
				UpdatedReplicas: updated, AvailableReplicas: available},
		}
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"settled", dep(2, 2, 2, 2, 2, 2), true},
		{"template not observed", dep(3, 2, 2, 2, 2, 2), false},
		{"half updated", dep(2, 2, 2, 3, 1, 2), false},
		{"old pod left", dep(2, 2, 2, 3, 2, 2), false},
		{"not available", dep(2, 2, 2, 2, 2, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := RolledOut(tc.d)
			if got != tc.want || (!got && why == "") {
				t.Errorf("RolledOut = %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}

func TestDatabaseHash(t *testing.T) {
	base := DatabaseHash([]byte("[database]\nconnection = a\n"), "rabbit://u:p@bus:5672/")
	for _, tc := range []struct {
		name      string
		conf, url string
		same      bool
	}{
		{name: "same settings", conf: "[database]\nconnection = a\n", url: "rabbit://u:p@bus:5672/", same: true},
		{name: "rotated database password", conf: "[database]\nconnection = b\n", url: "rabbit://u:p@bus:5672/"},
		{name: "rotated bus password", conf: "[database]\nconnection = a\n", url: "rabbit://u:q@bus:5672/"},
		{name: "bytes moved between the two", conf: "[database]\nconnection = a\nr", url: "abbit://u:p@bus:5672/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DatabaseHash([]byte(tc.conf), tc.url) == base; got != tc.same {
				t.Errorf("equal to the base = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestDatabaseJobs(t *testing.T) {
	nova := testNova()
	nova.Name = strings.Repeat("n", 41)
	rollout := RolloutHash(nova, "c1")
	var steps []string
	for _, s := range databaseSteps {
		j := BuildDatabaseJob(nova, s, rollout)
		if len(j.Name) > 63 {
			t.Errorf("Job name %s is longer than 63", j.Name)
		}
		if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || *j.Spec.BackoffLimit != 2 {
			t.Errorf("%s: restart policy or backoff", j.Name)
		}
		steps = append(steps, s.Name)
	}
	if want := []string{"api", "cell0", "cell1", "sync", "migrate"}; !slices.Equal(steps, want) {
		t.Errorf("steps = %v, want %v", steps, want)
	}
	other := testNova()
	other.Spec.Image.Tag = "2026.2"
	if RolloutHash(other, "c1") == RolloutHash(testNova(), "c1") {
		t.Error("a new image must be a new rollout")
	}
	if RolloutHash(testNova(), "c2") == RolloutHash(testNova(), "c1") {
		t.Error("new database settings must be a new rollout")
	}
	if same := testNova(); RolloutHash(same, "c1") != RolloutHash(testNova(), "c1") {
		t.Error("the same inputs must be the same rollout")
	}
}

func TestStateOf(t *testing.T) {
	job := func(t batchv1.JobConditionType, s corev1.ConditionStatus) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: t, Status: s}}}}
	}
	for _, tc := range []struct {
		job  *batchv1.Job
		want JobState
	}{
		{&batchv1.Job{}, JobRunning},
		{job(batchv1.JobComplete, corev1.ConditionTrue), JobSucceeded},
		{job(batchv1.JobFailed, corev1.ConditionTrue), JobFailed},
		{job(batchv1.JobFailed, corev1.ConditionFalse), JobRunning},
	} {
		if got := StateOf(tc.job); got != tc.want {
			t.Errorf("StateOf(%v) = %v, want %v", tc.job.Status.Conditions, got, tc.want)
		}
	}
}

func TestRecordCell(t *testing.T) {
	nova := testNova()
	for _, s := range databaseSteps {
		recordCell(nova, s)
	}
	want := []novav1alpha1.CellStatus{{Name: "cell0", Mapped: true, SyncedRelease: "2026.1"}, {Name: "cell1", Mapped: true, SyncedRelease: "2026.1"}}
	if !slices.Equal(nova.Status.Cells, want) {
		t.Errorf("cells = %+v, want %+v", nova.Status.Cells, want)
	}
}

func TestDecideRoute(t *testing.T) {
	nova := testNova()
	nova.Spec.Metadata.Gateway = &novav1alpha1.GatewaySpec{ParentRef: novav1alpha1.GatewayParentRef{Name: "gw"}, Hostname: "md.example.com"}
	parent := func(name string, status metav1.ConditionStatus, gen int64) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{
			ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: status, Reason: "NoMatchingListenerHostname",
				Message: "no listener", ObservedGeneration: gen}},
		}
	}
	route := func(parents ...gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
		r := BuildMetadataRoute(nova)
		r.Generation = 2
		r.Status.Parents = parents
		return r
	}
	for _, tc := range []struct {
		name     string
		route    *gatewayv1.HTTPRoute
		accepted bool
		message  string
	}{
		{"no answer yet", route(), false, "waiting for Gateway gw"},
		{"accepted", route(parent("gw", metav1.ConditionTrue, 2)), true, ""},
		{"refused", route(parent("gw", metav1.ConditionFalse, 2)), false, "NoMatchingListenerHostname"},
		{"answer to an older spec", route(parent("gw", metav1.ConditionTrue, 1)), false, "waiting"},
		{"another parent", route(parent("other", metav1.ConditionTrue, 2)), false, "waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := DecideRoute(tc.route, nova)
			if v.Accepted != tc.accepted || !strings.Contains(v.Message, tc.message) {
				t.Errorf("DecideRoute = %+v, want accepted %v and a message with %q", v, tc.accepted, tc.message)
			}
		})
	}
	r := BuildMetadataRoute(nova)
	if r.Name != "cp-nova-metadata" || string(r.Spec.Rules[0].BackendRefs[0].Name) != "cp-nova-metadata" ||
		*r.Spec.Rules[0].BackendRefs[0].Port != 8775 || string(r.Spec.Hostnames[0]) != "md.example.com" {
		t.Errorf("route = %+v", r.Spec)
	}
}
