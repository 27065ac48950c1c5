package osim

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The labels the pool controller puts on its nova-compute pods and the
// Nova's discovery Jobs (internal/controller/novacompute), minus the
// instance, so that one watch covers every pool and every Nova.
const (
	computePodSelector = "app.kubernetes.io/name=novacompute,app.kubernetes.io/component=nova-compute"
	discoverySelector  = "app.kubernetes.io/name=nova,app.kubernetes.io/component=discover-hosts"
)

// FollowComputePods watches the nova-compute pods of every pool on one
// cluster and registers a compute service for the node of each pod that
// is running and ready, as the nova-compute process in it would. It
// returns once the watch has synced; the watch ends with ctx.
func (s *Server) FollowComputePods(ctx context.Context, cfg *rest.Config) error {
	return follow(ctx, cfg, computePodSelector, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	}, func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" && podReady(pod) {
			s.ComputeStarted(pod.Spec.NodeName)
		}
	})
}

// FollowDiscovery watches the host-discovery Jobs on the Nova's cluster
// and maps every registered host once a Job succeeds, as its
// `nova-manage cell_v2 discover_hosts` would have. Each Job maps once.
func (s *Server) FollowDiscovery(ctx context.Context, cfg *rest.Config) error {
	var mu sync.Mutex
	done := map[types.UID]bool{}
	return follow(ctx, cfg, discoverySelector, func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Batch().V1().Jobs().Informer()
	}, func(obj any) {
		job, ok := obj.(*batchv1.Job)
		if !ok || job.Status.Succeeded == 0 {
			return
		}
		mu.Lock()
		first := !done[job.UID]
		done[job.UID] = true
		mu.Unlock()
		if first {
			s.DiscoverHosts()
		}
	})
}

// follow runs one filtered informer and calls seen on every add and update.
func follow(ctx context.Context, cfg *rest.Config, selector string,
	informer func(informers.SharedInformerFactory) cache.SharedIndexInformer, seen func(obj any),
) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := informer(f)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, obj any) { seen(obj) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the watch on %s did not sync", selector)
	}
	return nil
}

// podReady tells whether a pod runs with its Ready condition true.
func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
