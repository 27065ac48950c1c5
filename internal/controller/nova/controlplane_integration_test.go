package nova_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/nova"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/openstacktest"
	"github.com/anvil/anvil/internal/dev/podrunner"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/novaconfig"
)

// failingImage is a Nova image whose every container exits 1 on the pod
// runner: a database Job that runs it fails.
const failingImage = "ghcr.io/c5c3/nova:broken"

var workloadsOnce sync.Once

// startWorkloads makes the management cluster run pods: the controller
// manager and scheduler, and one pod runner node that runs the Nova's
// Jobs and Deployments as the Debian programs, against the real MariaDB,
// RabbitMQ and Keystone. Only failingImage maps to a program that fails.
func startWorkloads(t *testing.T) {
	t.Helper()
	openstacktest.Require(t, cloud)
	workloadsOnce.Do(func() {
		ctx := context.Background()
		if err := env.Management.StartWorkloads(ctx); err != nil {
			t.Fatal(err)
		}
		dir, err := env.TempDir("anvil-nova-runner-")
		if err != nil {
			t.Fatal(err)
		}
		fail := podrunner.Mapping{
			Name:  "failing image",
			Match: func(c *corev1.Container) bool { return c.Image == failingImage },
			Build: func(podrunner.Container) (podrunner.Command, error) {
				return podrunner.Command{Path: "/bin/false"}, nil
			},
		}
		images := append(append(podrunner.ImageMap{fail}, podrunner.NovaControlPlaneMappings()...), podrunner.DefaultImageMap()...)
		r, err := podrunner.New(podrunner.Options{
			Config: env.Management.Config, Nodes: []podrunner.Node{{Name: "nova-node"}},
			StateDir: filepath.Join(dir, "mgmt"), Images: images, Logger: logr.Discard(),
			Env: map[string]string{"REQUESTS_CA_BUNDLE": cloud.Endpoints[localcloud.KeystoneCA]},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// newControlPlaneNova creates a Nova that runs one replica of each service
// against the local OpenStack services, with their real credentials, which
// join the leak scan.
func newControlPlaneNova(t *testing.T, name string) *novav1alpha1.Nova {
	t.Helper()
	local := cloud.Local()
	bus, err := local.TransportURL(true)
	if err != nil {
		t.Fatal(err)
	}
	password, err := local.ServicePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	dbPassword, err := local.DatabasePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(local.Endpoints[localcloud.RabbitMQCA])
	if err != nil {
		t.Fatal(err)
	}
	credentials = append(credentials, bus, password, dbPassword)
	ep := local.Endpoints
	port, err := strconv.ParseInt(ep[localcloud.MariaDBPort], 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	putSecret(t, name+"-bus", map[string]string{"transport_url": bus})
	putSecret(t, name+"-bus-ca", map[string]string{"ca.crt": string(ca)})
	putSecret(t, name+"-password", map[string]string{"password": password})
	putSecret(t, name+"-metadata", map[string]string{"shared_secret": sharedSecret})
	putSecret(t, name+"-db", map[string]string{"username": "nova", "password": dbPassword})
	n := newNova(name)
	n.Spec.RemoteCompute = nil
	n.Spec.KeystoneEndpoint, n.Spec.KeystonePublicEndpoint, n.Spec.Region = ep[localcloud.KeystoneURL], ep[localcloud.KeystonePublicURL], ep[localcloud.Region]
	n.Spec.Endpoints.Placement.Override = ep[localcloud.PlacementURL]
	n.Spec.Endpoints.Neutron.Override = ep[localcloud.NeutronURL]
	n.Spec.Endpoints.Glance.Override = ep[localcloud.ImageURL]
	ref := novav1alpha1.DatabaseSecretRef{Name: name + "-db"}
	n.Spec.APIDatabase = &novav1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: int32(port), Database: "nova_api", SecretRef: ref}
	n.Spec.Database = &novav1alpha1.DatabaseSpec{Host: "127.0.0.1", Port: int32(port), Database: "nova", SecretRef: ref}
	n.Spec.Replicas = ptr.To[int32](1)
	if err := env.Management.Client.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The control plane comes up Jobs first, as real nova-manage runs against
// the real databases, and the conductor, scheduler and APIs come up as the
// Debian programs. A release change runs the new Jobs before any Deployment
// rolls, then rolls the conductor, the
// scheduler and the API services in that order. A failing Job holds every
// Deployment on its template and is named in DatabaseReady.
func TestIntegrationControlPlaneRollout(t *testing.T) {
	startOperator(t)
	startWorkloads(t)
	const name = "cpl"
	newControlPlaneNova(t, name)
	waitReleaseReady(t, name, "2026.1")

	n := getNova(t, name)
	wantCells := []novav1alpha1.CellStatus{{Name: "cell0", Mapped: true, SyncedRelease: "2026.1"}, {Name: "cell1", Mapped: true, SyncedRelease: "2026.1"}}
	if !slices.Equal(n.Status.Cells, wantCells) {
		t.Errorf("cells = %+v, want %+v", n.Status.Cells, wantCells)
	}
	if c := apimeta.FindStatusCondition(n.Status.Conditions, novav1alpha1.MetadataHTTPRouteReadyCondition); c == nil || c.Reason != novav1alpha1.HTTPRouteNotRequiredReason {
		t.Errorf("MetadataHTTPRouteReady = %+v, want HTTPRouteNotRequired", c)
	}
	checkChildren(t, name)
	if got := len(databaseJobs(t, name)); got != 5 {
		t.Errorf("%d database Jobs, want 5", got)
	}

	t.Run("a nova.conf change outside the databases rolls without Jobs", func(t *testing.T) {
		jobsBefore := jobNames(databaseJobs(t, name))
		hashBefore := deployments(t, name)[0].Spec.Template.Annotations[nova.ConfigHashAnnotation]
		n := getNova(t, name)
		n.Spec.Logging.Debug = !n.Spec.Logging.Debug
		if err := env.Management.Client.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		waitReleaseReady(t, name, "2026.1")
		if got := deployments(t, name)[0].Spec.Template.Annotations[nova.ConfigHashAnnotation]; got == hashBefore {
			t.Error("the Deployments did not roll to the new nova.conf")
		}
		if got := jobNames(databaseJobs(t, name)); !slices.Equal(got, jobsBefore) {
			t.Errorf("database Jobs %v after a logging change, want %v kept: only database settings run them again", got, jobsBefore)
		}
	})

	t.Run("a release change syncs before it rolls, in order", func(t *testing.T) {
		// A long suite: a second round of every database Job and of every
		// Deployment. make test keeps the order's table tests.
		testenv.Long(t, "test-all")
		n := getNova(t, name)
		n.Spec.OpenStackRelease, n.Spec.Image.Tag = "2026.2", "2026.2"
		if err := env.Management.Client.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		waitReleaseReady(t, name, "2026.2")
		checkRolloutOrder(t, name, rolloutOf(t, n), n.Spec.Image.Reference())
	})

	t.Run("a failing Job holds every Deployment", func(t *testing.T) {
		n := getNova(t, name)
		// The release the Nova runs now: 2026.2 after the release change,
		// 2026.1 where the run leaves that long subtest out.
		release := n.Spec.OpenStackRelease
		n.Spec.Image = anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "broken"}
		if err := env.Management.Client.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		job := name + "-db-api-" + rolloutOf(t, n)
		c := waitConditionWithin(t, name, novav1alpha1.DatabaseReadyCondition, novav1alpha1.DatabaseJobFailedReason, 3*time.Minute)
		if !strings.Contains(c.Message, job) {
			t.Errorf("DatabaseReady message %q does not name the Job %s", c.Message, job)
		}
		for _, d := range deployments(t, name) {
			if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/c5c3/nova:"+release {
				t.Errorf("%s moved to %s while its database Job failed", d.Name, img)
			}
		}
		if got := getNova(t, name).Status.InstalledRelease; got != release {
			t.Errorf("installedRelease = %q, want %s kept", got, release)
		}
		if ready := apimeta.FindStatusCondition(getNova(t, name).Status.Conditions, anvilmeta.ReadyCondition); ready == nil || ready.Status == metav1.ConditionTrue {
			t.Errorf("Ready = %+v while a database Job failed", ready)
		}

		// Going back to the last good image needs no Job: its Jobs are
		// kept until a later rollout succeeds.
		n = getNova(t, name)
		n.Spec.Image.Tag = release
		if err := env.Management.Client.Update(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		waitConditionWithin(t, name, novav1alpha1.DatabaseReadyCondition, novav1alpha1.DatabaseSyncedReason, time.Minute)
		for _, j := range databaseJobs(t, name) {
			if j.Labels[nova.RolloutLabel] != rolloutOf(t, n) {
				t.Errorf("Job %s of another rollout was not pruned", j.Name)
			}
		}
	})
	assertNoLeak(t)
}

// rolloutOf is the rollout n's spec and its current database settings
// make: nova-manage.conf, and the bus URL of the compute contract, which
// carries it unescaped since the suite's URLs hold no '$'.
func rolloutOf(t *testing.T, n *novav1alpha1.Nova) string {
	t.Helper()
	manage, err := getSecret(t, n.Name+novav1alpha1.ManageConfigSuffix)
	if err != nil {
		t.Fatal(err)
	}
	contract, err := getSecret(t, n.Name+novav1alpha1.ComputeConfigSuffix)
	if err != nil {
		t.Fatal(err)
	}
	return nova.RolloutHash(n, nova.DatabaseHash(manage.Data[novaconfig.KeyManageConfig], string(contract.Data[novaconfig.KeyTransportURL])))
}

// waitReleaseReady waits until the Nova is Ready on release.
func waitReleaseReady(t *testing.T, name, release string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		n := &novav1alpha1.Nova{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, n); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		ready := apimeta.FindStatusCondition(n.Status.Conditions, anvilmeta.ReadyCondition)
		return n.Status.InstalledRelease == release && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == n.Generation, nil
	})
	if err != nil {
		t.Fatalf("%s never became Ready on %s: %+v", name, release, getNova(t, name).Status)
	}
}

// waitConditionWithin waits up to timeout until the condition of the type
// has the reason for the current generation, and returns it.
func waitConditionWithin(t *testing.T, name, condType, reason string, timeout time.Duration) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n := &novav1alpha1.Nova{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, n); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		got = apimeta.FindStatusCondition(n.Status.Conditions, condType)
		return got != nil && got.Reason == reason && got.ObservedGeneration == n.Generation, nil
	})
	if err != nil {
		t.Fatalf("%s: %s never reached %s (last %+v)", name, condType, reason, got)
	}
	return got
}

// checkChildren checks what a Ready control plane runs: four Deployments,
// no console proxy, Services for the two APIs, a PDB each, and nova.conf.
func checkChildren(t *testing.T, name string) {
	t.Helper()
	var names []string
	for _, d := range deployments(t, name) {
		names = append(names, d.Name)
		pdb := &policyv1.PodDisruptionBudget{}
		if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: d.Name}, pdb); err != nil {
			t.Errorf("PDB %s: %v", d.Name, err)
		}
	}
	slices.Sort(names)
	if want := []string{name + "-api", name + "-conductor", name + "-metadata", name + "-scheduler"}; !slices.Equal(names, want) {
		t.Errorf("Deployments = %v, want %v", names, want)
	}
	for svc, port := range map[string]int32{"-api": 8774, "-metadata": 8775} {
		s := &corev1.Service{}
		if err := env.Management.Client.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name + svc}, s); err != nil {
			t.Errorf("Service %s: %v", name+svc, err)
		} else if s.Spec.Ports[0].Port != port {
			t.Errorf("Service %s port %d, want %d", s.Name, s.Spec.Ports[0].Port, port)
		}
	}
	conf, err := getSecret(t, name+"-config")
	if err != nil {
		t.Fatal(err)
	}
	if len(conf.Data["nova.conf"]) == 0 || len(conf.Data["ca.crt"]) == 0 {
		t.Errorf("%s-config has keys %v, want nova.conf and ca.crt", name, slices.Sorted(func(yield func(string) bool) {
			for k := range conf.Data {
				if !yield(k) {
					return
				}
			}
		}))
	}
}

// checkRolloutOrder compares the apiserver's own timestamps: no ReplicaSet
// of the new image was created before the last new Job completed, and the
// conductor's came no later than the scheduler's, which came no later than
// the API services'. The timestamps have a resolution of a second, so ties
// pass; the failing-Job case proves the hold itself.
func checkRolloutOrder(t *testing.T, name, rollout, image string) {
	t.Helper()
	var lastJob time.Time
	jobs := 0
	for _, j := range databaseJobs(t, name) {
		if j.Labels[nova.RolloutLabel] != rollout {
			t.Errorf("Job %s of an earlier rollout survived the new one", j.Name)
			continue
		}
		jobs++
		if j.Status.CompletionTime == nil {
			t.Fatalf("Job %s has no completion time", j.Name)
		}
		if j.Status.CompletionTime.After(lastJob) {
			lastJob = j.Status.CompletionTime.Time
		}
	}
	if jobs != 5 {
		t.Errorf("%d Jobs of the new rollout, want 5", jobs)
	}
	created := map[string]time.Time{}
	sets := &appsv1.ReplicaSetList{}
	if err := env.Management.Client.List(context.Background(), sets, client.InNamespace(testNamespace), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets.Items {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			created[rs.Labels["app.kubernetes.io/component"]] = rs.CreationTimestamp.Time
		}
	}
	order := []string{"conductor", "scheduler", "api", "metadata"}
	for i, c := range order {
		at, ok := created[c]
		if !ok {
			t.Fatalf("no ReplicaSet of %s runs %s", c, image)
		}
		if at.Before(lastJob) {
			t.Errorf("%s rolled at %s, before the last database Job completed at %s", c, at, lastJob)
		}
		if i > 0 && i < 3 && at.Before(created[order[i-1]]) {
			t.Errorf("%s rolled at %s, before %s at %s", c, at, order[i-1], created[order[i-1]])
		}
	}
}

func deployments(t *testing.T, name string) []appsv1.Deployment {
	t.Helper()
	list := &appsv1.DeploymentList{}
	if err := env.Management.Client.List(context.Background(), list, client.InNamespace(testNamespace), client.MatchingLabels{"app.kubernetes.io/instance": name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// jobNames are the Jobs' names, sorted.
func jobNames(jobs []batchv1.Job) []string {
	names := make([]string, 0, len(jobs))
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

func databaseJobs(t *testing.T, name string) []batchv1.Job {
	t.Helper()
	list := &batchv1.JobList{}
	if err := env.Management.Client.List(context.Background(), list, client.InNamespace(testNamespace),
		client.MatchingLabels{"app.kubernetes.io/instance": name, "app.kubernetes.io/component": "database"}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
