package targetcluster_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/targetcluster"
)

// bulkNamespace is a compute-cluster namespace no pool uses.
const bulkNamespace = "bulk-secrets"

// bulkSeen counts the Secret events of bulkNamespace the registry mapped.
var bulkSeen atomic.Int64

// setupRemoteInputWatcher watches Secrets and Nodes on every compute
// cluster the way the NovaCompute, Nova and ControlPlane controllers do:
// as inputs mapped by name and labels, and as labelled children.
func setupRemoteInputWatcher(mgr ctrl.Manager, reg *targetcluster.Registry) error {
	none := func(context.Context, string, client.Object) []reconcile.Request { return nil }
	secrets, err := reg.RemoteObjects(&corev1.Secret{}, nil, func(_ context.Context, _ string, o client.Object) []reconcile.Request {
		if o.GetNamespace() == bulkNamespace {
			bulkSeen.Add(1)
		}
		return nil
	})
	if err != nil {
		return err
	}
	nodes, err := reg.RemoteObjects(&corev1.Node{}, nil, none)
	if err != nil {
		return err
	}
	children, err := reg.RemoteChildrenFromAnyCluster(&corev1.Secret{}, &ovnv1alpha1.OVNChassis{})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("test-remote-inputs").
		WatchesRawSource(secrets).WatchesRawSource(nodes).WatchesRawSource(children).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
}

// heapAlloc is the live heap after collecting garbage.
func heapAlloc() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A compute cluster's users can create Secrets at will in a namespace the
// pools never use. 20,000 of them, 2 KiB each (40 MB of data), must add
// less than 20 MB to the operator's heap once its caches hold them: the
// remote caches keep metadata, trimmed, not the objects.
func TestIntegrationManySecretsOnAComputeClusterCostLittleHeap(t *testing.T) {
	// A long suite: 20,000 Secrets keep both cores busy for a minute. Its
	// short version in make test is the trimming transform's table test.
	testenv.Long(t, "test-all")
	startOperator(t)
	ctx := context.Background()
	b := env.ComputeCluster("compute-b")
	waitResolves(t, "compute-b")
	const count, workers = 20000, 32
	const limit = 20_000_000 // bytes: 20 MB

	cfg := rest.CopyConfig(b.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the apiserver is the bottleneck
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bulkNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Secrets(bulkNamespace).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})

	before := heapAlloc()
	seen := bulkSeen.Load()
	start := time.Now()
	payload := make([]byte, 2048)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < count; i += workers {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bulk-%05d", i), Labels: map[string]string{"bulk": "true"}},
					Data: map[string][]byte{"payload": payload}}
				if _, err := cs.CoreV1().Secrets(bulkNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating the Secrets: %v", err)
	}
	created := time.Since(start)

	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return bulkSeen.Load()-seen >= count, nil
	})
	if err != nil {
		t.Fatalf("the registry's watch saw %d of %d Secrets", bulkSeen.Load()-seen, count)
	}
	after := heapAlloc()
	grown := int64(after) - int64(before)
	t.Logf("%d Secrets created in %s, all seen by the cache after %s; heap %.1f MB -> %.1f MB (%+.1f MB)",
		count, created.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), float64(before)/1e6, float64(after)/1e6, float64(grown)/1e6)
	if grown >= limit {
		t.Errorf("the operator's heap grew by %.1f MB for Secrets it does not use, want under %d MB", float64(grown)/1e6, limit/1_000_000)
	}
}
