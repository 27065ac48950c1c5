package targetcluster_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
	anvilwebhook "github.com/anvil/anvil/internal/webhook"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

var (
	env *testenv.Environment
	op  *operatorUnderTest
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{ComputeClusters: 2}, &env))
}

// operatorUnderTest is a manager on the management cluster with the
// registry and a test reconciler, shared by the package's tests.
type operatorUnderTest struct {
	registry *targetcluster.Registry
	writer   *childWriter
	clock    *clocktesting.FakePassiveClock
	log      *testenv.LogBuffer
}

// startOperator starts the shared manager on first use.
func startOperator(t *testing.T) *operatorUnderTest {
	t.Helper()
	e := testenv.Require(t, env)
	if op != nil {
		return op
	}
	logs := &testenv.LogBuffer{}
	// The harness installs Anvil's webhook configurations, and the owner
	// kind of these tests has one, so the manager must serve it.
	mgr, err := e.NewManager(logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := anvilwebhook.SetupOVNChassisWebhook(mgr, workloadpolicy.Policy{}); err != nil {
		t.Fatal(err)
	}
	reg := targetcluster.New(mgr, targetcluster.Options{
		Namespace:     e.ClustersNamespace,
		ProbeInterval: time.Second,
		ProbeTimeout:  time.Second,
		// An acknowledgement on the Namespace is seen within a second.
		AcknowledgementPoll: time.Second,
		// testenv registers its compute clusters without a namespaces key.
		AllowClusterWide: true,
	})
	if err := reg.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	w := &childWriter{
		mgmt: mgr.GetClient(), registry: reg,
		teardown: &placement.Teardown{Registry: reg, Scheme: e.Scheme, Recorder: mgr.GetEventRecorder("test-writer"), Clock: clk},
		passes:   map[string]int{}, written: map[string]chan struct{}{},
	}
	if err := w.setup(mgr); err != nil {
		t.Fatal(err)
	}
	if err := setupRemoteInputWatcher(mgr, reg); err != nil {
		t.Fatal(err)
	}
	if err := testenv.StartManager(mgr, nil); err != nil {
		t.Fatal(err)
	}
	op = &operatorUnderTest{registry: reg, writer: w, clock: clk, log: logs}
	// Both compute clusters are registered by the harness; wait for them.
	for _, c := range e.Compute {
		waitResolves(t, c.Name)
	}
	return op
}

// childWriter is a minimal placed-object reconciler, written the way real
// ones will be: resolve first, finalizer only after a successful resolve,
// one child written through the registry, teardown through Teardown.
type childWriter struct {
	mgmt     client.Client
	registry *targetcluster.Registry
	teardown *placement.Teardown

	mu      sync.Mutex
	passes  map[string]int
	written map[string]chan struct{}
}

var childKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
}

// unavailableRequeue is short in tests; real reconcilers use
// placement.UnavailableRequeue.
const unavailableRequeue = time.Second

func childName(owner string) string { return owner + "-child" }

func (w *childWriter) setup(mgr ctrl.Manager) error {
	if err := targetcluster.IndexTargetCluster(context.Background(), mgr.GetFieldIndexer(), &ovnv1alpha1.OVNChassis{}); err != nil {
		return err
	}
	children, err := w.registry.RemoteChildren(&corev1.ConfigMap{}, &ovnv1alpha1.OVNChassis{})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("test-child-writer").
		For(&ovnv1alpha1.OVNChassis{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(children).
		WatchesRawSource(w.registry.ClusterChanges(func() client.ObjectList { return &ovnv1alpha1.OVNChassisList{} })).
		Complete(w)
}

func (w *childWriter) pass(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.passes[name]++
}

func (w *childWriter) passCount(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.passes[name]
}

// writtenSignal returns a channel that gets a value each time the child of
// name is confirmed on its cluster.
func (w *childWriter) writtenSignal(name string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.written[name]
	if !ok {
		ch = make(chan struct{}, 100)
		w.written[name] = ch
	}
	return ch
}

func (w *childWriter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &ovnv1alpha1.OVNChassis{}
	if err := w.mgmt.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	w.pass(obj.Name)

	if !obj.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(obj, placement.RemoteChildrenFinalizer) {
			return ctrl.Result{}, nil
		}
		res, err := w.teardown.Run(ctx, obj, childKinds)
		if err != nil {
			return ctrl.Result{}, err
		}
		if res.Release {
			controllerutil.RemoveFinalizer(obj, placement.RemoteChildrenFinalizer)
			return ctrl.Result{}, w.mgmt.Update(ctx, obj)
		}
		return ctrl.Result{RequeueAfter: unavailableRequeue}, w.setReady(ctx, obj, metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, res.Unavailable.Error())
	}

	remote, err := w.registry.Resolve(obj.TargetClusterName())
	if err != nil {
		return ctrl.Result{RequeueAfter: unavailableRequeue}, w.setReady(ctx, obj, metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, err.Error())
	}
	if controllerutil.AddFinalizer(obj, placement.RemoteChildrenFinalizer) {
		if err := w.mgmt.Update(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: childName(obj.Name), Namespace: obj.Namespace},
		Data: map[string]string{"owner": obj.Name}}
	err = remote.Writer().Apply(ctx, obj, cm)
	var notOwned *childwriter.NotOwnedError
	switch {
	case asNotOwned(err, &notOwned):
		return ctrl.Result{}, w.setReady(ctx, obj, metav1.ConditionFalse, "ChildNotOwned", err.Error())
	case err != nil:
		return ctrl.Result{}, err
	}
	if err := w.setReady(ctx, obj, metav1.ConditionTrue, "ChildWritten", "the child is on "+remote.Name); err != nil {
		return ctrl.Result{}, err
	}
	select {
	case w.writtenSignal(obj.Name) <- struct{}{}:
	default:
	}
	return ctrl.Result{}, nil
}

func asNotOwned(err error, target **childwriter.NotOwnedError) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*childwriter.NotOwnedError) //nolint:errorlint // Apply returns it unwrapped
	if ok {
		*target = e
	}
	return ok
}

func (w *childWriter) setReady(ctx context.Context, obj *ovnv1alpha1.OVNChassis, status metav1.ConditionStatus, reason, msg string) error {
	patch := client.MergeFrom(obj.DeepCopy())
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
		Type: anvilmeta.ReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: obj.Generation,
	})
	obj.Status.ObservedGeneration = obj.Generation
	return client.IgnoreNotFound(w.mgmt.Status().Patch(ctx, obj, patch))
}

// Helpers shared by the tests.

func waitResolves(t *testing.T, cluster string) *targetcluster.Remote {
	t.Helper()
	var remote *targetcluster.Remote
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		var err error
		remote, err = op.registry.Resolve(cluster)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("cluster %s never resolved: %v", cluster, lastResolveError(cluster))
	}
	return remote
}

func lastResolveError(cluster string) error {
	_, err := op.registry.Resolve(cluster)
	return err
}

func newOwner(t *testing.T, name, cluster string) *ovnv1alpha1.OVNChassis {
	t.Helper()
	obj := &ovnv1alpha1.OVNChassis{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.WorkloadNamespace},
		// A generic owner kind: only what its schema requires besides the
		// cluster; nothing here runs a chassis.
		Spec: ovnv1alpha1.OVNChassisSpec{
			CentralRef:       ovnv1alpha1.CentralReference{Name: "central"},
			NodeSelector:     map[string]string{"example.com/owner": "true"},
			TargetClusterRef: &anvilmeta.TargetClusterRef{Name: cluster},
		},
	}
	if err := env.Management.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating owner %s: %v", name, err)
	}
	return obj
}

// waitReady waits for the owner's Ready condition to have the reason.
func waitReady(t *testing.T, name, reason string, timeout time.Duration) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		obj := &ovnv1alpha1.OVNChassis{}
		if err := env.Management.Client.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: name}, obj); err != nil {
			return false, nil //nolint:nilerr // poll again
		}
		cond = apimeta.FindStatusCondition(obj.Status.Conditions, anvilmeta.ReadyCondition)
		return cond != nil && cond.Reason == reason, nil
	})
	if err != nil {
		t.Fatalf("%s: Ready reason never became %s (last: %+v)", name, reason, cond)
	}
	return cond
}

func getChild(t *testing.T, c client.Client, owner string) (*corev1.ConfigMap, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: childName(owner)}, cm)
	return cm, err
}

func waitGone(t *testing.T, c client.Client, obj client.Object, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s %s still exists", fmt.Sprintf("%T", obj), client.ObjectKeyFromObject(obj))
	}
}

// grantNodeRead lets user read Nodes cluster-wide, as the access chart's
// ClusterRole does: the operator watches them on every cluster.
func grantNodeRead(ctx context.Context, t *testing.T, c *testenv.Cluster, user string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-nodes"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}
