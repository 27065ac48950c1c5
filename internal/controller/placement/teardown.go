package placement

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/targetcluster"
)

// RemoteChildrenFinalizer holds an owner until its children on the compute
// cluster are deleted, or abandoned once the cluster has been gone long
// enough.
const RemoteChildrenFinalizer = "openstack.c5c3.io/remote-children"

// ReasonRemoteChildrenAbandoned is the Warning event recorded when the
// finalizer is released without a sweep.
const ReasonRemoteChildrenAbandoned = "RemoteChildrenAbandoned"

// Teardown timings.
const (
	// DefaultAbandonAfter is how long a deleting owner waits for its
	// cluster to come back before it leaves the children behind.
	DefaultAbandonAfter = 5 * time.Minute
	// UnavailableRequeue is the flat poll interval while a cluster does not
	// resolve.
	UnavailableRequeue = 15 * time.Second
)

// Resolver finds a compute cluster by name; the registry is one.
type Resolver interface {
	Resolve(name string) (*targetcluster.Remote, error)
}

// Teardown removes an owner's remote children when the owner is deleted.
type Teardown struct {
	// Registry resolves the owner's cluster.
	Registry Resolver
	// Scheme maps the owner to its kind.
	Scheme *runtime.Scheme
	// Recorder records RemoteChildrenAbandoned on the owner.
	Recorder events.EventRecorder
	// Clock is injectable so tests need not wait for the abandon window.
	Clock clock.PassiveClock
	// AbandonAfter defaults to DefaultAbandonAfter.
	AbandonAfter time.Duration

	mu sync.Mutex
	// firstFailure records, per cluster, when this process first failed to
	// resolve it during a teardown. It is cleared on success and lost on a
	// restart, which only ever extends the wait.
	firstFailure map[string]time.Time
}

// TeardownResult says what the caller does next.
type TeardownResult struct {
	// Release means the caller removes RemoteChildrenFinalizer now.
	Release bool
	// RequeueAfter is set while the cluster does not resolve.
	RequeueAfter time.Duration
	// Unavailable is the resolve error to report on the first condition
	// while waiting; nil otherwise.
	Unavailable error
}

// Run is called for a deleting owner that still holds the finalizer. It
// sweeps the children of the given kinds when the cluster resolves; when it
// does not, it waits until both the owner has been deleting and the cluster
// has been failing for the abandon window, then releases with a Warning.
func (t *Teardown) Run(ctx context.Context, owner targetcluster.Targeted, childKinds []schema.GroupVersionKind) (TeardownResult, error) {
	cluster := owner.TargetClusterName()
	remote, err := t.Registry.Resolve(cluster)
	if err == nil {
		t.clearFailure(cluster)
		err := remote.Writer().Sweep(ctx, owner, childKinds)
		var outside *childwriter.NamespaceNotAllowedError
		switch {
		case errors.As(err, &outside):
			// Anvil may not delete there any more (the scope was narrowed
			// after the children were written); waiting would hold the
			// owner forever, so it is released and the leftovers named.
			t.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, ReasonRemoteChildrenAbandoned, "Delete",
				"%s; releasing the remote-children finalizer without deleting the objects there labelled as owned by this %s", outside.Error(), ownerKind(owner, t.Scheme))
		case err != nil:
			return TeardownResult{}, err
		}
		return TeardownResult{Release: true}, nil
	}
	now := t.clock().Now()
	since := t.recordFailure(cluster, now)
	window := t.AbandonAfter
	if window == 0 {
		window = DefaultAbandonAfter
	}
	deleting := owner.GetDeletionTimestamp()
	if deleting != nil && now.Sub(deleting.Time) >= window && now.Sub(since) >= window {
		t.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, ReasonRemoteChildrenAbandoned, "Delete",
			"Target cluster %s is still unavailable; releasing the remote-children finalizer without deleting the objects on it labelled as owned by this %s", cluster, ownerKind(owner, t.Scheme))
		return TeardownResult{Release: true}, nil
	}
	return TeardownResult{RequeueAfter: UnavailableRequeue, Unavailable: err}, nil
}

// ownerKind names the owner's kind for an event, or "object".
func ownerKind(owner client.Object, scheme *runtime.Scheme) string {
	if labels, err := childwriter.OwnerLabels(owner, scheme); err == nil {
		return labels[childwriter.OwnerKindLabel]
	}
	return "object"
}

func (t *Teardown) clock() clock.PassiveClock {
	if t.Clock == nil {
		return clock.RealClock{}
	}
	return t.Clock
}

func (t *Teardown) recordFailure(cluster string, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstFailure == nil {
		t.firstFailure = map[string]time.Time{}
	}
	if first, ok := t.firstFailure[cluster]; ok {
		return first
	}
	t.firstFailure[cluster] = now
	return now
}

func (t *Teardown) clearFailure(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.firstFailure, cluster)
}
